"""Writing what the renderers render: the output folder, every file whole, result.json first.

A file is written to a temporary name in the folder and renamed into place, so that a reader
(or a SIGKILL) at any moment sees either the previous file or the new one, never half of one
(``nnprofile.base.outdir``). result.json lists the files the run wrote; the files an earlier run listed
that this one does not write are removed (``prune``), and nothing else.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from ..assembly import capture_file as events
from ..base.errors import ProfileError
from ..base.schedule import STATUS_FILE
from ..base.outdir import FolderInUse, Lock, join, listed, prepare_outdir, prune, write_whole
from ..result import Profile, file as result_file
from . import comparison, csv_files, html, log, trace, xlsx
from .base import Contents, Renderer
from .safe import safe_text


class Unlisted(ProfileError):
    """The files are written whole, but the record could not be rewritten to list them."""


def claim_outdir(outdir: str) -> Lock:
    """The output folder made and locked for one run; a folder another run holds is refused in one line. A
    folder this made and the run leaves empty is removed again (``release_outdir``)."""
    existed = os.path.isdir(outdir)
    prepare_outdir(outdir)
    try:
        lock = Lock(outdir).acquire()
    except FolderInUse as e:
        raise ProfileError(str(e))
    except OSError as e:
        raise ProfileError("output folder %s is not writable (%s)" % (outdir, e.strerror or e))
    lock.created = not existed  # type: ignore[attr-defined]
    linked = linked_outputs(outdir)
    if linked:
        lock.release()
        raise ProfileError(
            "%s in %s %s a symbolic link: nnprofile writes only files of its own there (remove the "
            "link, or choose another -o)" % (", ".join(linked[:3]), outdir, "is" if len(linked) == 1 else "are")
        )
    return lock


# The renderers of a profile, by the name ``--format`` calls them (``nnprofile.render.base``): a new output format is
# its module and its line here.
RENDERERS: Dict[str, Renderer] = {r.NAME: r for r in (log, csv_files, xlsx, html, trace)}
# The names nnprofile writes into an output folder (and the folders of windows and ranks): what each renderer (and a
# comparison) declares it writes, and the files written beside them (the record, the recording as data, on-demand's
# status).
OUTPUT_NAMES = frozenset(
    [name for r in RENDERERS.values() for name in r.WRITES]
    + list(comparison.WRITES)
    + [result_file.FILENAME, events.FILENAME, STATUS_FILE, comparison.MPLCACHE]
)
OUTPUT_PREFIXES = ("window-", "rank-", "runs", comparison.PLOTS)  # the folders of windows, ranks and runs; plots


def linked_outputs(outdir: str) -> List[str]:
    """The names in ``outdir`` nnprofile would write that are symbolic links (to a file it must not touch)."""
    try:
        entries = list(os.scandir(outdir))
    except OSError:
        return []
    return sorted(
        e.name for e in entries if e.is_symlink() and (e.name in OUTPUT_NAMES or e.name.startswith(OUTPUT_PREFIXES))
    )


@contextmanager
def claimed(outdir: str) -> Iterator[Lock]:
    """The output folder locked while a command writes into it (``report``, ``compare``, ``merge`` as the profile
    does): a folder a running profile holds is refused in one line."""
    lock = claim_outdir(outdir)
    try:
        yield lock
    finally:
        release_outdir(lock)


def release_outdir(lock: Optional[Lock]) -> None:
    """The run's end: its lock released, and the folder removed where the run made it and wrote nothing."""
    if lock is None:
        return
    lock.release()
    if getattr(lock, "created", False):
        try:
            os.rmdir(lock.folder)  # only when empty
        except OSError:
            pass


def write_files(contents: Contents, outdir: str) -> List[str]:
    """Write each file whole (a temporary file renamed into place): never a half-written output."""
    return [write_whole(join(outdir, name), data) for name, data in contents.items()]


def write_all(
    profile: Profile,
    outdir: str,
    render: Callable[[Profile, Optional[Sequence[str]]], Contents],
    save_result: bool = True,
    formats: Optional[Sequence[str]] = None,
    also: Sequence[str] = (),
) -> List[str]:
    """Write result.json (first: the data, should the process be stopped while the rest renders) and
    every output file; returns the paths. ``also``: files written into the folder besides (a window's, as
    ``window-K/result.json``), listed with them."""
    contents = render(profile, formats)
    if not save_result:
        written = write_files(contents, outdir)
        profile.location = outdir
        return written
    damaged: List[str] = []
    earlier = listed(outdir, damaged=damaged)
    for path in damaged:  # said, never blocking: the earlier run's files stay where they are
        print(
            safe_text(
                "nnprofile: warning: the earlier result.json in %s could not be read; set aside as %s"
                % (outdir, os.path.basename(path))
            ),
            file=sys.stderr,
        )
    # First the record of what exists (itself, and ``also``), should the process be stopped while the rest is
    # written; then each file; then the record again, listing what was written, whole. A file that could not be
    # written is said in the record (incomplete, with the reason) and the error raised.
    profile.files = sorted({result_file.FILENAME, *also})
    body = result_file.body_text(profile)  # the bulk, the same in each of the record's writes below
    written = [result_file.save(profile, outdir, body)]
    done = []
    try:
        for name, data in contents.items():
            written.append(write_whole(join(outdir, name), data))
            done.append(name)
    except OSError as e:
        profile.files = sorted({result_file.FILENAME, *also, *done})
        profile.complete = False
        reason = "%s could not be written (%s)" % (name, e.strerror or e)
        profile.failure = "%s; %s" % (profile.failure, reason) if profile.failure else reason
        try:
            result_file.save(profile, outdir, body)
        except OSError:
            pass  # the first record stands: it claims only itself
        raise
    profile.files = sorted({result_file.FILENAME, *contents, *also})
    try:
        if contents:  # (a record alone is whole as first written)
            result_file.save(profile, outdir, body)
    except OSError as e:  # (a full disk at the last rewrite: every file is whole, the first record stands)
        raise Unlisted(
            "every file was written whole in %s, but result.json could not be rewritten to list them (%s): it "
            "lists only itself, as written first" % (outdir, e.strerror or e)
        )
    profile.location = outdir
    prune(outdir, earlier, profile.files)
    return written
