"""Writing what the renderers render: the output folder, every file whole, result.json first.

A file is written to a temporary name in the folder and renamed into place, so that a reader
(or a SIGKILL) at any moment sees either the previous file or the new one, never half of one
(``nnprofile.base.outdir``). result.json lists the files the run wrote; the files an earlier run listed
that this one does not write are removed (``prune``), and nothing else.
"""
from __future__ import annotations

import os
from typing import Callable, List, Optional, Sequence

from ..base.errors import ProfileError
from ..base.outdir import FolderInUse, Lock, join, listed, prune, write_whole
from ..result import Profile, file as result_file
from .base import Contents


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
    return lock


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


def write_all(profile: Profile, outdir: str, render: Callable[[Profile, Optional[Sequence[str]]], Contents],
              save_result: bool = True, formats: Optional[Sequence[str]] = None,
              also: Sequence[str] = ()) -> List[str]:
    """Write result.json (first: the data, should the process be stopped while the rest renders) and
    every output file; returns the paths. ``also``: files written into the folder besides (a window's, as
    ``window-K/result.json``), listed with them."""
    contents = render(profile, formats)
    earlier = listed(outdir) if save_result else []
    if save_result:
        profile.files = sorted({result_file.FILENAME, *contents, *also})
    written = [result_file.save(profile, outdir)] if save_result else []
    written += write_files(contents, outdir)
    profile.location = outdir
    if save_result:
        prune(outdir, earlier, profile.files)
    return written
