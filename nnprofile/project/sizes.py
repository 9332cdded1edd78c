"""What a project would take, read from its text before NNabla builds anything: its loops unrolled, the functions and
the memory they need. A shared project is input like any other: a loop repeated 10**8 times once took 6 GB in
150 s before anything stopped it; now it is one line naming the figure."""

from __future__ import annotations

import os
import zipfile
import zlib
from typing import Any, Dict, List, Optional

from ..base.errors import ProfileError
from ..base.readable import check_regular
from ..result.notes import Note

# Functions a network unrolls to at most: beyond the networks NNC builds (a recurrent network unrolled over a
# sequence of a thousand steps: some twenty thousand), within what NNabla's own recursion over a graph survives
# (a chain of 300,000 functions overflowed its stack here; 30,000 built, in four and a half minutes).
MAX_FUNCTIONS = 50_000
BYTES_PER_ELEMENT = 4  # float32; half types take less, so this is the bound
COPIES = 3  # a variable's data, its gradient, and a buffer NNabla may keep besides
# How far beyond the machine's memory a network is refused unbuilt (the estimate is a bound: NNabla frees and shares
# buffers); nearer, NNabla's own allocation fails, and that failure names a batch that fits.
MEMORY_MARGIN = 4


def available_memory() -> int:
    """The machine's memory available now (bytes), from the kernel; a large figure where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return 1 << 50


def check_unrolled(proto: Any, main: str, batch_size: Optional[int], memory: Optional[int] = None) -> None:
    """Each network's functions and memory, its loops unrolled (each variable and function counted as many times
    as the loops around it repeat), within ``MAX_FUNCTIONS`` and the memory the machine has; else one error
    naming the network, the figure and the loop that makes it."""
    limit = available_memory() if memory is None else memory
    for net in proto.network:
        times: Dict[str, int] = {r.id: max(1, int(r.times)) for r in net.repeat_info}
        batch = batch_size or max(1, int(net.batch_size))
        functions = sum(_copies(f.repeat_id, times) for f in net.function)
        loop = max(times.items(), key=lambda kv: kv[1]) if times else None
        because = " (loop '%s' repeats %d times)" % loop if loop and loop[1] > 1 else ""
        if functions > MAX_FUNCTIONS:
            raise ProfileError(
                "%s: network '%s' unrolls to %d functions%s, more than any project holds (%d)"
                % (main, net.name, functions, because, MAX_FUNCTIONS)
            )
        need = 0
        for v in net.variable:
            elements = 1
            for d in v.shape.dim:
                elements *= batch if d == -1 else max(1, int(d))
            need += elements * BYTES_PER_ELEMENT * COPIES * _copies(v.repeat_id, times)
        if need > MEMORY_MARGIN * limit:  # (a batch a little too large: NNabla's own failure names one that fits)
            raise ProfileError(
                "%s: network '%s' would take %s%s, more than this machine has (%s)"
                % (main, net.name, _size(need), because, _size(limit))
            )


def _copies(repeat_ids: Any, times: Dict[str, int]) -> int:
    n = 1
    for r in repeat_ids:
        n *= times.get(r, 1)
    return n


def _size(n: int) -> str:
    if n >= 1 << 50:
        return "%.1e bytes" % n
    for unit, shift in (("TB", 40), ("GB", 30), ("MB", 20)):
        if n >= 1 << shift:
            return "%.1f %s" % (n / (1 << shift), unit)
    return "%d bytes" % n


def parameter_files(paths: Any) -> List[str]:
    """The parameter files a project was given: ``.h5`` and ``.protobuf`` files, and an ``.nnp``'s members of them."""
    import zipfile

    out = []
    for p in paths:
        lower = p.lower()
        if lower.endswith((".h5", ".protobuf")):
            out.append(p)
        elif lower.endswith(".nnp"):
            try:
                with zipfile.ZipFile(p) as archive:
                    out += ["%s!%s" % (p, n) for n in archive.namelist() if n.lower().endswith((".h5", ".protobuf"))]
            except (OSError, zipfile.BadZipFile):
                continue
    return out


def parameters_unread(paths: Any, proto: Any, loaded: int) -> Optional[Note]:
    """A note where the project's parameter files gave fewer parameters than its networks use (a damaged file, one
    of another network): the profile then runs on fresh ones, whose figures hold but whose values are not the
    project's; None where every one was read, or no file was given."""
    files = parameter_files(paths)
    declared = {v.name for net in proto.network for v in net.variable if v.type == "Parameter"}
    if not files or loaded >= len(declared):
        return None
    return Note("parameters_unread", {"files": files, "loaded": loaded, "used": len(declared)})


# What a project may hold, checked before NNabla reads it whole: a network's text (NNabla's parser takes ten times
# its size in memory; the largest unrolled networks are a few MB) and a parameter file.
MAX_TEXT_BYTES = 64 << 20
MAX_PARAMETER_BYTES = 8 << 30
TEXT_EXTENSIONS = (".nntxt", ".prototxt", ".txt")


def _limit(name: str) -> int:
    return MAX_TEXT_BYTES if name.lower().endswith(TEXT_EXTENSIONS) else MAX_PARAMETER_BYTES


def check_sizes(path: str) -> None:
    """A project file, or each member of an .nnp, within its limit: a member by its declared size and by what it
    really unpacks to (read as a stream, never whole), so that no archive unpacks beyond what it says."""
    check_regular(path, "project file")
    if not path.lower().endswith(".nnp"):
        if os.path.getsize(path) > _limit(path):
            raise ProfileError("%s: larger than a project file can be (%d MB)" % (path, _limit(path) >> 20))
        return
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.infolist():
                limit = _limit(member.filename)
                if member.file_size > limit:
                    raise ProfileError(
                        "%s: its member %s unpacks to %d MB, more than a project's can (%d MB)"
                        % (path, safe_name(member.filename), member.file_size >> 20, limit >> 20)
                    )
                try:
                    _unpacks_within(archive, member, limit, path)
                except (
                    zipfile.BadZipFile,
                    zlib.error,
                    NotImplementedError,
                    RuntimeError,
                    EOFError,
                    ValueError,
                    OSError,
                ) as e:
                    raise ProfileError(  # (a damaged, encrypted or oddly compressed member: by name, never its text)
                        "%s: its member %s cannot be read (%s)" % (path, safe_name(member.filename), _what(e))
                    )
    except zipfile.BadZipFile:
        raise ProfileError("%s: not a valid .nnp file (not a zip archive)" % path)


def _unpacks_within(archive: Any, member: Any, limit: int, path: str) -> None:
    """An archive's member read as a stream, never whole: no more than ``limit`` bytes."""
    read = 0
    with archive.open(member) as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return
            read += len(chunk)
            if read > limit:
                raise ProfileError(
                    "%s: its member %s unpacks beyond what it declares and a project's "
                    "can (%d MB)" % (path, safe_name(member.filename), limit >> 20)
                )


def _what(e: BaseException) -> str:
    """A member's failure in words: its kind, never a message that may quote what the archive holds."""
    if isinstance(e, RuntimeError) and "encrypted" in str(e):
        return "encrypted"
    if isinstance(e, NotImplementedError):
        return "compressed by a method Python's zipfile does not read"
    if isinstance(e, zlib.error):
        return "its data does not decompress: damaged"
    if isinstance(e, zipfile.BadZipFile) and "CRC" in str(e):
        return "its checksum does not match: damaged"
    return type(e).__name__


def safe_name(name: str) -> str:
    return repr(name[:80])
