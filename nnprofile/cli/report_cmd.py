"""nnprofile report OUTDIR: re-render the files of a saved run, without profiling again."""

from __future__ import annotations

import argparse
import os

from .. import api
from ..render import FORMATS, described
from .common import folder, Parser, Printer, add_view, claimed, view_of, written


SUMMARY = "re-render the files of a saved result (any format version), without profiling again"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile report",
        description="Re-render a saved result.json (of any format version) into every file a run writes, without "
        "profiling again: %s; --format picks some of them." % described(),
    )
    p.add_argument("result", metavar="OUTDIR", help="a folder with result.json (or the file itself)")
    p.add_argument("-o", "--outdir", type=folder, help="write the files here (default: next to result.json)")
    p.add_argument(
        "--format", action="append", choices=FORMATS, help="re-render only this kind of file (repeatable; default: all)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log")
    add_view(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run(args) -> int:
    from ..render import log, write_all

    profile = api.load(args.result)
    source = args.result if os.path.isdir(args.result) else os.path.dirname(os.path.abspath(args.result))
    outdir = args.outdir or source
    with claimed(outdir):
        paths = write_all(
            profile, outdir, save_result=os.path.abspath(outdir) != os.path.abspath(source), formats=args.format
        )
    out = Printer(args.quiet)
    out.write(log.render(profile, view=view_of(args)))
    written(out, outdir, [os.path.relpath(p, outdir) for p in paths], args.open)
    return 0
