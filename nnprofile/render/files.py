"""Writing what the renderers render: the output folder, every file whole, result.json first.

A file is written to a temporary name in the folder and renamed into place, so that a reader
(or a SIGKILL) at any moment sees either the previous file or the new one, never half of one.
"""
from __future__ import annotations

import os
from typing import Callable, List, Optional, Sequence

from ..base.errors import ProfileError
from ..result import Profile, file as result_file
from .base import Contents


def prepare_outdir(outdir: str) -> None:
    """Create the output folder, or say in one line why it cannot be used."""
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ProfileError("output folder %s is a file" % outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise ProfileError("cannot create output folder %s (%s)" % (outdir, e.strerror or e))
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise ProfileError("output folder %s is not writable" % outdir)


def write_files(contents: Contents, outdir: str) -> List[str]:
    """Write each file whole (a temporary file renamed into place): never a half-written output."""
    paths = []
    for name, data in contents.items():
        path = os.path.join(outdir, name)
        tmp = path + ".tmp"
        if isinstance(data, bytes):
            with open(tmp, "wb") as f:
                f.write(data)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(data)
        os.replace(tmp, path)
        paths.append(path)
    return paths


def write_all(profile: Profile, outdir: str, render: Callable[[Profile, Optional[Sequence[str]]], Contents],
              save_result: bool = True, formats: Optional[Sequence[str]] = None) -> List[str]:
    """Write result.json (first: the data, should the process be stopped while the rest renders) and
    every output file; returns the paths."""
    written = [result_file.save(profile, outdir)] if save_result else []
    written += write_files(render(profile, formats), outdir)
    profile.location = outdir
    return written
