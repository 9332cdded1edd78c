"""The one runner of fresh processes: ``python -m nnprofile`` as a child, its result loaded back.

``--repeat`` profiles in fresh processes (a whole run can land on a slow machine, and nothing inside
the run can tell); ``nnprofile compare`` profiles each configuration in fresh processes,
alternating. Both come here.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Sequence

from ..base.errors import ProfileError
from ..result import Profile, file as result_file


def command(files: Sequence[str], outdir: str, arguments: Sequence[str] = ()) -> list:
    """The command that profiles once into ``outdir``, quietly, with these arguments."""
    return [sys.executable, "-m", "nnprofile", *files, "-o", outdir, "-q", *arguments]


def profile_in_fresh_process(files: Sequence[str], outdir: str, arguments: Sequence[str], what: str) -> Profile:
    """Profile once in a fresh process; its result, or one line saying why it failed (``what`` names the run)."""
    return _fresh(command(files, outdir, arguments), outdir, what)


def record_in_fresh_process(script: str, outdir: str, arguments: Sequence[str], what: str) -> Profile:
    """A Python program run and recorded once in a fresh process (``nnprofile run``; its own output not shown); its
    result, or one line saying why it failed."""
    return _fresh([sys.executable, "-m", "nnprofile", "run", "-q", "-o", outdir, script, *arguments], outdir, what)


def _fresh(cmd: Sequence[str], outdir: str, what: str) -> Profile:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        raise ProfileError("%s: %s" % (what, last.replace("nnprofile: error: ", "")))
    return result_file.load(outdir)
