"""nnprofile run SCRIPT.py [ARGS...]: run a Python program unmodified, recording its NNabla work."""
from __future__ import annotations

import argparse
import os

from .. import api
from ..errors import ProfileError
from .common import Printer, positive_int


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile run",
        description="Run an NNabla Python program unmodified (as __main__, with its own arguments), "
                    "recording every function's forward and backward and every solver call, and write "
                    "profile.log, the CSV files, profile.xlsx, trace.json.gz and result.json.",
        epilog="Example: nnprofile run -o results/train examples/lenet_train.py --iterations 60")
    p.add_argument("script", metavar="SCRIPT.py", nargs="?", help="the program to run")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its own arguments")
    p.add_argument("-o", "--outdir", help="output folder (default: results/<script name>)")
    p.add_argument("--skip-first", type=int, default=1, metavar="N",
                   help="steps recorded but left out first, while buffers are built (default 1)")
    p.add_argument("--active", type=positive_int, default=20, metavar="N",
                   help="steps kept after them; then recording stops and the program runs on (default 20)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log at the end")
    p.add_argument("--debug", action="store_true", help="show nnprofile's own tracebacks")
    return p


def run(args) -> int:
    from ..render import log
    if not args.script:
        raise ProfileError("a script to run is missing: nnprofile run [-o OUTDIR] SCRIPT.py [ARGS...]")
    name = os.path.splitext(os.path.basename(args.script))[0]
    outdir = args.outdir or os.path.join("results", name)
    profile, status = api.run(args.script, *args.args, outdir=outdir, skip_first=max(0, args.skip_first),
                              active=args.active)
    out = Printer(args.quiet)
    out.write(log.render(profile))
    out("Written to %s (profile.log, profile.csv, profile_detail.csv, summary.csv, profile.xlsx%s, result.json)"
        % (outdir, ", trace.json.gz" if profile.timeline else ""))
    return status
