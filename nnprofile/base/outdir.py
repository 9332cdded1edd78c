"""The output folder as a guest keeps it: one run at a time, files whole, nothing outside it, nothing removed that
nnprofile did not write.

- **One run at a time.** A run holds an advisory lock on ``OUTDIR/.nnprofile.lock`` (``fcntl.flock``), released
  when it ends or dies (the kernel drops it with the process); a second run into a folder in use refuses, in
  one line (``Lock``).
- **Files whole.** A file is written to a temporary name unique to the process and renamed into place
  (``write_whole``): a reader, a SIGKILL, a full disk at any moment leaves the previous file or the new one,
  never half of one; a temporary file is removed when its writing fails.
- **Nothing outside OUTDIR.** A path made from a name (a dataset, layer, optimizer, rank) takes its name through
  ``component`` (``..``, ``/``, NUL, an empty name made safe) and is checked to lie under the folder
  (``inside``).
- **Nothing removed that nnprofile did not write.** Each run lists in its ``result.json`` the files it wrote
  (``Profile.files``); the files an earlier run listed that this one does not write are removed, and the
  folders those leave empty (``prune``). A file no run listed is never touched.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from .readable import is_regular
from .errors import ProfileError

LOCK_NAME = ".nnprofile.lock"
Data = Union[str, bytes]


def prepare_outdir(outdir: str) -> None:
    """Create the output folder, or say in one line why it cannot be used."""
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ProfileError("output folder %s is a file, not a folder" % outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise ProfileError("cannot create output folder %s (%s)" % (outdir, e.strerror or e))
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise ProfileError("output folder %s is not writable" % outdir)


class FolderInUse(OSError):
    """Another nnprofile run holds the folder."""


def component(name: str, fallback: str = "_") -> str:
    """A name made one safe path component: no separator, NUL or control character, never ``.`` or ``..`` nor
    empty, at most 120 characters."""
    text = "".join("_" if (c in "/\\:" or ord(c) < 32 or ord(c) == 127) else c for c in str(name)).strip()
    if not text.strip("."):  # empty, ".", "..", "...": no name of a folder's own
        text = fallback
    return text[:120]


def inside(folder: str, path: str) -> bool:
    """Whether ``path`` lies within ``folder`` (links resolved)."""
    root = os.path.realpath(folder)
    target = os.path.realpath(path)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def join(folder: str, relative: str) -> str:
    """``folder/relative`` for a relative path nnprofile made; refused where it would leave the folder."""
    path = os.path.join(folder, relative)
    if os.path.isabs(relative) or not inside(folder, path):
        raise ValueError("%r would lie outside %s" % (relative, folder))
    return path


def write_whole(path: str, data: Data) -> str:
    """Write ``data`` to ``path`` whole: a temporary file of this process's own, renamed into place; removed
    if the writing fails (a full disk), and the error raised."""
    tmp = "%s.%d-%s.tmp" % (path, os.getpid(), uuid.uuid4().hex[:8])
    try:
        if isinstance(data, bytes):
            with open(tmp, "wb") as f:
                f.write(data)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    return path


# The largest record an earlier run can have left (its samples of a long windowed run are a few MB): one larger is
# no record of nnprofile's, and is not read whole.
MAX_RECORD_BYTES = 128 << 20


# The records this process wrote: path -> (the file as it was written: device, inode, size, mtime; the files it
# lists). A window's record is read back when its files are written again (``listed``): a record of tens of MB
# need not be parsed for a list this process knows.
_WRITTEN: Dict[str, Tuple[Tuple[int, int, int, int], List[str]]] = {}


def _identity(path: str) -> Tuple[int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def remember(path: str, files: Sequence[str]) -> None:
    """A record this process has just written at ``path``, listing ``files``."""
    try:
        _WRITTEN[os.path.abspath(path)] = (_identity(path), list(files))
    except OSError:
        _WRITTEN.pop(os.path.abspath(path), None)


def listed(folder: str, result_name: str = "result.json", damaged: Optional[List[str]] = None) -> List[str]:
    """The files an earlier run listed as its own in the folder's result.json (none where it lists none). A record
    that cannot be read (damaged, too large, nested too deep) never blocks a new run: it is set aside under a new
    name in the folder, appended to ``damaged`` (its new name) for the caller to say. A record this process wrote
    (``remember``), unchanged since, is not read again."""
    path = os.path.join(folder, result_name)
    known = _WRITTEN.get(os.path.abspath(path))
    try:
        if known is not None and _identity(path) == known[0]:
            return list(known[1])
    except OSError:
        return []
    if not is_regular(path):  # none yet, or a pipe or a device in its place: no manifest to read
        return []
    try:
        if os.path.getsize(path) > MAX_RECORD_BYTES:
            raise ValueError("larger than %d MB" % (MAX_RECORD_BYTES >> 20))
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError:
        return []
    except (ValueError, RecursionError, MemoryError):
        aside = set_aside(path)
        if aside is not None and damaged is not None:
            damaged.append(aside)
        return []
    files = data.get("files") if isinstance(data, dict) and data.get("format") == "nnprofile-result" else None
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


def set_aside(path: str) -> Optional[str]:
    """Rename a damaged file to ``NAME.damaged`` (``NAME.damaged-2``, ... where taken); its new path, None where it
    could not be moved (it is then left as it is)."""
    for n in range(1, 1000):
        target = "%s.damaged%s" % (path, "" if n == 1 else "-%d" % n)
        if os.path.lexists(target):
            continue
        try:
            os.rename(path, target)
            return target
        except OSError:
            return None
    return None


def prune(folder: str, earlier: Iterable[str], now: Iterable[str]) -> List[str]:
    """Remove the files an earlier run listed that this one did not write (regular files inside the folder
    only), then the folders that leaves empty; returns what was removed."""
    keep: Set[str] = {os.path.normpath(p) for p in now}
    removed: List[str] = []
    parents: Set[str] = set()
    for relative in earlier:
        rel = os.path.normpath(relative)
        if rel in keep or rel.startswith("..") or os.path.isabs(rel):
            continue
        try:
            path = join(folder, rel)
        except ValueError:
            continue
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                os.remove(path)
                removed.append(rel)
                parents.add(os.path.dirname(rel))
            except OSError:
                continue
    for rel in sorted(parents, key=len, reverse=True):
        while rel and rel != os.curdir:
            try:
                os.rmdir(join(folder, rel))  # only when empty
            except (OSError, ValueError):
                break
            rel = os.path.dirname(rel)
    return removed


def in_use(folder: str) -> bool:
    """Whether a run holds ``folder``'s lock now (it is still writing there); the lock is only looked at."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


class Lock:
    """The folder's lock for one run (``acquire``, ``release``); the kernel releases it if the process dies."""

    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, LOCK_NAME)
        self._fd: Optional[int] = None

    def acquire(self) -> "Lock":
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock (the rest holds)
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = ""
            try:
                holder = os.read(fd, 64).decode("ascii", "replace").strip()
            except OSError:
                pass
            os.close(fd)
            raise FolderInUse(
                "output folder %s is in use by another nnprofile run%s"
                % (self.folder, " (process %s)" % holder if holder.isdigit() else "")
            )
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.remove(self.path)
        except OSError:
            pass
        try:
            os.close(self._fd)  # closing drops the lock
        except OSError:
            pass
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def named(outdir: Union[str, "os.PathLike[str]"]) -> str:
    """An output folder given by name: an empty name is refused (taken as is, it would mean the working folder)."""
    name = os.fspath(outdir)
    if not str(name).strip():
        raise ProfileError("an empty output folder name: give a folder, or none for the default")
    return name
