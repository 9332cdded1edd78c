"""nnprofile merge OUTDIR: the ranks' results (OUTDIR/rank-K/) merged into one view, written into OUTDIR."""

from __future__ import annotations

import argparse
import os
import sys

from ..merging.ranks import collect, merge, rank_folders, spans
from ..base.errors import ProfileError
from ..base.outdir import in_use
from .common import Parser, Printer, claimed, non_negative_float, said


SUMMARY = "merge the results of a distributed run's ranks (OUTDIR/rank-K/) into one view"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile merge",
        description="Merge the results each rank of a distributed run wrote into OUTDIR/rank-K/ (mpirun -n N "
        "nnprofile run -o OUTDIR ...) into one view: per rank its step and parts, per step the "
        "slowest rank, the straggler and who waits for it, the layers' spread across ranks, one "
        "timeline. It is written into OUTDIR itself (rank 0 does this at the end of a run).",
        epilog="Example: nnprofile merge results/dp --wait 30",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="the folder that holds the rank-K/ folders")
    p.add_argument(
        "--wait",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="wait this long for ranks whose result is not there yet (default 0)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run(args) -> int:
    from ..render import log, write_all

    if not os.path.isdir(args.outdir):
        raise ProfileError("%s: no such folder" % args.outdir)
    if not rank_folders(args.outdir):
        raise ProfileError(
            "%s holds no rank-K/ folder: profile a distributed run into it first "
            "(mpirun -n N nnprofile run -o %s SCRIPT.py)" % (args.outdir, args.outdir)
        )
    found = collect(args.outdir, wait=args.wait)
    if not found.profiles:
        raise ProfileError("%s: no rank left a result (rank-K/result.json)" % args.outdir)
    running = [
        rank for rank, folder in sorted(rank_folders(args.outdir).items()) if rank in found.profiles and in_use(folder)
    ]
    if running:  # its result is what it had written so far (a window, or an early record): said, not refused
        print(
            "nnprofile: warning: rank%s %s still running: merged as far as %s written"
            % ("s" if len(running) > 1 else "", spans(running), "they have" if len(running) > 1 else "it has"),
            file=sys.stderr,
        )
    merged = merge(found)
    with claimed(args.outdir):
        write_all(merged, args.outdir)
    out = Printer(args.quiet)
    out.write(log.render(merged))
    said(out, "Written to %s: the merged view of %d of %d ranks" % (args.outdir, len(found.profiles), found.size))
    if found.missing:
        print(
            "nnprofile: error: no result from rank%s %s of %d (merged: %s)"
            % ("s" if len(found.missing) > 1 else "", spans(found.missing), found.size, spans(list(found.profiles))),
            file=sys.stderr,
        )
        return 1
    return 0
