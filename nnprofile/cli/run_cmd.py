"""nnprofile run SCRIPT.py [ARGS...]: run a Python program unmodified, recording its NNabla work."""
from __future__ import annotations

import argparse
import os
import sys

from ..base.errors import ProfileError
from ..api.programs import run_recording
from .common import Printer, non_negative_float, positive_int

FILES = "profile.log, profile.csv, profile_detail.csv, summary.csv, profile.xlsx, report.html%s, result.json"


SUMMARY = "run a Python program unmodified and record its NNabla work (also under mpirun)"

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile run",
        description="Run an NNabla Python program unmodified (as __main__, with its own arguments), "
                    "recording every function's forward and backward, every solver, input, monitor and "
                    "communicator call, and write profile.log, the CSV files, profile.xlsx, report.html, "
                    "trace.json.gz and result.json. Under mpirun (or srun) each rank writes into "
                    "OUTDIR/rank-K/ and rank 0 merges them into OUTDIR.",
        epilog="Examples: nnprofile run -o results/train examples/lenet_train.py --iterations 60; "
               "mpirun -n 2 nnprofile run -o results/dp train.py")
    p.add_argument("script", metavar="SCRIPT.py", nargs="?", help="the program to run")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its own arguments")
    p.add_argument("-o", "--outdir", help="output folder (default: results/<script name>)")
    p.add_argument("--skip-first", type=int, default=1, metavar="N",
                   help="steps recorded but left out first, while buffers are built (default 1)")
    p.add_argument("--active", type=positive_int, default=20, metavar="N",
                   help="steps kept after them; then recording stops and the program runs on (default 20)")
    p.add_argument("--save-events", action="store_true",
                   help="also write the recording as data (events.json.gz): every call, as recorded, which "
                        "nnprofile assembles again without NNabla (for a bug report, or a test)")
    p.add_argument("--merge-wait", type=non_negative_float, default=60.0, metavar="SECONDS",
                   help="under mpirun or srun: how long rank 0 waits at the end for the other ranks' results "
                        "before it merges those there and names the missing (default 60)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log at the end")
    p.add_argument("--debug", action="store_true", help="show nnprofile's own tracebacks")
    return p


def run(args) -> int:
    from ..render import log
    if not args.script:
        raise ProfileError("a script to run is missing: nnprofile run [-o OUTDIR] SCRIPT.py [ARGS...]")
    name = os.path.splitext(os.path.basename(args.script))[0]
    outdir = args.outdir or os.path.join("results", name)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)
    recording, status = run_recording(args.script, *args.args, outdir=outdir, skip_first=max(0, args.skip_first),
                                      active=args.active, merge_wait=args.merge_wait, progress=progress,
                                      save_events=args.save_events)
    profile = recording.profile
    assert profile is not None
    world = recording.run_world()
    if world is not None and world.several:
        if recording.merged is None:  # another rank: rank 0 prints the merged view
            return status
        merged = recording.merged
        out = Printer(args.quiet)
        out.write(log.render(merged))
        out("Written to %s: the merged view of %d of %d ranks (%s), each rank's own result in %s"
            % (outdir, len(merged.ranks.get("ranks", [])), world.size, FILES % (", trace.json.gz"),
               os.path.join(outdir, "rank-K")))
        missing = merged.ranks.get("missing") or []
        if missing:
            print("nnprofile: error: no result from rank%s %s of %d within %g s (see %s)"
                  % ("s" if len(missing) > 1 else "", ", ".join(str(k) for k in missing), world.size,
                     args.merge_wait, os.path.join(outdir, "rank-%d" % missing[0])), file=sys.stderr)
            return status or 1
        return status
    out = Printer(args.quiet)
    out.write(log.render(profile))
    out("Written to %s (%s)" % (outdir, FILES % (", trace.json.gz" if profile.timeline else "")))
    return status
