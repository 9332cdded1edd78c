"""Jupyter and IPython: ``%load_ext nnprofile``, then a cell that starts with ``%%nnprofile``.

    %%nnprofile --warmup 1 --active 10 -o results/cell
    for i in range(20):
        x.d, t.d = data.next()
        loss.forward(); solver.zero_grad(); loss.backward(); solver.update()

The cell is recorded as ``nnprofile run`` records a program (``nnprofile.record``),
and its value is the ``Profile``, which the notebook shows below the cell
(``Profile._repr_html_``). The solver is usually made in an earlier cell, before
recording starts: a solver (or communicator) the notebook's namespace holds, by
name or one level down (in a dict, or an attribute of an object), is timed for
the cell. Where no step can be found, the output says so and how to mark steps
(``nnprofile.step()``).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Optional

from .base.errors import ProfileError
from .base.schedule import add_schedule


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="%%nnprofile",
        add_help=False,
        description="Record the NNabla work of this cell, as nnprofile run records a program.",
    )
    p.add_argument("-o", "--outdir", help="write every file here too (report.html, profile.xlsx, ...)")
    add_schedule(p, on_demand=False)
    return p


def usage() -> str:
    """Every option of the magic, as its parser has them (--skip-first as --warmup's older name)."""
    text = parser().format_usage().replace("usage: %%nnprofile", "").strip()
    return " ".join(text.split()).replace("[--warmup N]", "[--warmup N | --skip-first N]")


def record_cell(shell: Any, line: str, cell: str) -> Optional[Any]:
    """Run ``cell`` in ``shell`` while recording it; returns the Profile (None when the magic's line is wrong)."""
    from IPython.core.error import UsageError
    from .api.programs import Recording, make_schedule

    try:
        args = parser().parse_args(shlex.split(line))
    except ValueError as e:
        raise UsageError("%%%%nnprofile: %s (options: %s)" % (e, usage()))
    try:
        schedule = make_schedule(
            wait=args.wait, warmup=args.warmup, active=args.active, repeat=args.repeat, max_windows=args.max_windows
        )
    except ProfileError as e:
        raise UsageError("%%%%nnprofile: %s" % e)
    recording = Recording(
        outdir=args.outdir,
        name="cell",
        schedule=schedule,
        command="%%nnprofile " + line.strip() if line.strip() else "%%nnprofile",
        namespaces=(shell.user_ns,),
    )
    try:
        recording.__enter__()
    except ProfileError as e:
        raise UsageError("%%%%nnprofile: %s" % e)
    error: Optional[BaseException] = None
    try:
        outcome = shell.run_cell(cell, store_history=False)
        error = outcome.error_before_exec or outcome.error_in_exec
    finally:
        recording.__exit__(type(error) if error is not None else None, error, None)
    profile = recording.profile
    if args.outdir and profile is not None and profile.files:  # (every command that writes says where)
        print("Written to %s: %s" % (args.outdir, ", ".join(profile.files)))
    if error is not None:  # the cell failed: so does the magic's (Run All and papermill stop, as without nnprofile)
        raise CellFailed(error, profile)
    return profile


class CellFailed(Exception):
    """A recorded cell's own exception, said above by IPython with its traceback: the magic's cell fails too, with
    one line (``_render_traceback_``: IPython's way to show an exception its own way) instead of a second one;
    ``profile``: what was recorded (``sys.last_value.profile`` in the next cell)."""

    def __init__(self, error: BaseException, profile: Optional[Any]):
        super().__init__("the cell raised %s" % type(error).__name__)
        self.error = error
        self.profile = profile  # what was recorded (the cell's value, had it not raised)

    def _render_traceback_(self) -> list:
        return [
            "%%%%nnprofile: the cell raised %s (its traceback is above); what ran before it was recorded"
            % (type(self.error).__name__)
        ]


def load_ipython_extension(ipython: Any) -> None:
    from IPython.core.magic import register_cell_magic  # noqa: F401  (IPython present: fail early if not)

    def nnprofile(line: str, cell: str) -> Optional[Any]:
        return record_cell(ipython, line, cell)

    nnprofile.__doc__ = parser().format_help()
    ipython.register_magic_function(nnprofile, magic_kind="cell", magic_name="nnprofile")
