"""nnprofile capture PID: ask a program running under nnprofile run --on-demand for a window."""

from __future__ import annotations

import argparse

from ..api.ondemand import capture
from ..base.schedule import window_signal
from .common import Parser, Printer

SUMMARY = "ask a program running under 'nnprofile run --on-demand' to record a window now (its PID; mpirun's)"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile capture",
        description="Send the signal that asks a program started with 'nnprofile run --on-demand' to record its "
        "next steps as a window and write them (OUTDIR/window-K). It refuses a process not started "
        "so, and one whose program handles the signal itself. Under mpirun, give mpirun's PID: every "
        "rank records (or --rank R, that rank only).",
        epilog="Example: nnprofile run --on-demand -o results/train train.py &  then  nnprofile capture $!",
    )
    p.add_argument("pid", type=int, metavar="PID", help="the process (nnprofile run --on-demand ..., or mpirun)")
    p.add_argument(
        "--signal",
        metavar="USR1|USR2",
        type=window_signal,
        help="the signal (default: the one the process listens for, USR1)",
    )
    p.add_argument("--rank", type=int, metavar="R", help="under mpirun: that rank only (default: every rank)")
    p.add_argument("--debug", action="store_true", help="show nnprofile's own tracebacks")
    return p


def run(args) -> int:
    where = capture(args.pid, args.signal, args.rank)
    Printer()(
        "nnprofile: asked process %d for a window; it is written to %s when its steps are done" % (args.pid, where)
    )
    return 0
