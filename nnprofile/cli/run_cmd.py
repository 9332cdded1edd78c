"""nnprofile run SCRIPT.py [ARGS...]: run a Python program unmodified, recording its NNabla work."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List

from ..base.errors import ProfileError
from ..api.launch import run_recording
from ..base.schedule import Schedule, add_schedule
from ..render.safe import safe_text
from ..merging.ranks import spans
from .common import folder, Parser, Printer, add_view, non_negative_float, said, view_of, warnings, written

ENDS_AS_PROGRAM = True  # a program ended by a KeyboardInterrupt: the run dies by SIGINT, as the program alone

# The program ran (and succeeded), but nnprofile could not make or write its profile: an exit status of its own,
# so that a CI job does not take a missing profile for a written one (sysexits' EX_SOFTWARE).
EXIT_NOT_WRITTEN = 70

# The program's NNabla logger is left as the program sets it: its log lines are its own output.
QUIET_NNABLA = False

SUMMARY = "run a Python program unmodified and record its NNabla work (also under mpirun)"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile run",
        usage="nnprofile run [options] SCRIPT.py [ARGS...]\n       nnprofile run [options] -m MODULE [ARGS...]",
        description="Run an NNabla Python program unmodified (as __main__, with its own arguments; a module as "
        "python -m runs it), recording every function's forward and backward, every solver, input, "
        "monitor and communicator call, and write profile.log, the CSV files, profile.xlsx, "
        "report.html, trace.json.gz and result.json. Under mpirun (or srun) each rank writes into "
        "OUTDIR/rank-K/ and rank 0 merges them into OUTDIR.",
        epilog="Examples: nnprofile run -o results/train examples/lenet_train.py --iterations 60; "
        "nnprofile run -m mypackage.train --epochs 3; mpirun -n 2 nnprofile run -o results/dp train.py",
    )
    p.add_argument("script", metavar="SCRIPT.py", nargs="?", help="the program to run")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its own arguments")
    p.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run a module as python -m does (sys.argv and sys.path as Python sets them); what follows "
        "it is its own arguments",
    )
    p.add_argument("-o", "--outdir", type=folder, help="output folder (default: results/<script or module name>)")
    add_schedule(p)
    p.add_argument(
        "--save-events",
        action="store_true",
        help="also write the recording as data (events.json.gz): every call, as recorded, which "
        "nnprofile assembles again without NNabla (for a bug report, or a test)",
    )
    p.add_argument(
        "--merge-wait",
        type=non_negative_float,
        default=60.0,
        metavar="SECONDS",
        help="under mpirun or srun: how long rank 0 waits at the end for the other ranks' results "
        "before it merges those there and names the missing (default 60)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log at the end")
    add_view(p)
    p.add_argument("--debug", action="store_true", help="show nnprofile's own tracebacks")
    return p


def parse(argv: List[str]) -> argparse.Namespace:
    """The options, then the program: a script and its arguments, or -m MODULE and its arguments (whatever
    follows the module is its own, as for python -m). An option that needs another is refused without it."""
    p = parser()
    args = _parse(p, argv)
    if args.signal is not None and not args.on_demand:
        p.error("--signal names the signal of --on-demand, which is not given")
    args.signal = args.signal or Schedule.signal
    return args


def _parse(p: argparse.ArgumentParser, argv: List[str]) -> argparse.Namespace:
    valued = {s for a in p._actions if a.option_strings and a.nargs != 0 for s in a.option_strings} - {"-m"}
    i = 0
    while i < len(argv) and argv[i] != "-m":  # nnprofile's options, up to the program
        if argv[i] in valued:
            i += 2
        elif argv[i].startswith("-"):
            i += 1
        else:
            return p.parse_args(argv)  # a script: what follows it is its own
    if i < len(argv):
        before, module, rest = argv[:i], argv[i + 1 : i + 2], argv[i + 2 :]
        if not module:
            p.error("argument -m: expected a module name")
        args = p.parse_args(before)
        if args.script is not None:
            p.error("give a script or -m MODULE, not both")
        args.module, args.args = module[0], rest
        return args
    return p.parse_args(argv)


def _not_written(args: Any, recording: Any, status: int) -> int:
    """The program ran, but its profile could not be recorded, made or written: said in one line (its traceback
    with --debug); the program's own status, else EXIT_NOT_WRITTEN."""
    if args.debug and recording.error_traceback:
        if sys.stderr is not None:
            sys.stderr.write(recording.error_traceback)
    what = recording.error or recording.unrecorded or "nothing was recorded"
    if recording.stopped:  # the user asked: said, not an error
        print("nnprofile: %s" % safe_text(what), file=sys.stderr)
        return status or EXIT_NOT_WRITTEN
    if recording.unlisted:  # its files are there, whole: said as such (no more than the facts)
        print("nnprofile: error: %s" % safe_text(what.split(": ", 1)[-1]), file=sys.stderr)
        return status or EXIT_NOT_WRITTEN
    print(
        "nnprofile: error: the program %s, but its profile could not be %s: %s%s"
        % (
            "ended normally" if status == 0 else "exited with status %s" % status,
            "made" if recording.unrecorded is None else "recorded",
            safe_text(what),
            "" if args.debug or not recording.error_traceback else " (run with --debug for the traceback)",
        ),
        file=sys.stderr,
    )
    return status or EXIT_NOT_WRITTEN


def _ranks_written(args: Any, recording: Any, world: Any, outdir: str, status: int) -> int:
    """One rank of several: rank 0 prints the merged view and says which ranks sent no result."""
    from ..render import log

    if recording.merged is None:  # another rank: rank 0 prints the merged view
        return status
    merged = recording.merged
    out = Printer(args.quiet)
    out.write(log.render(merged))
    said(
        out,
        "Written to %s: the merged view of %d of %d ranks (%s), each rank's own result in %s"
        % (outdir, len(merged.ranks.ranks), world.size, ", ".join(merged.files), os.path.join(outdir, "rank-K")),
    )
    missing = merged.ranks.missing
    if missing:
        print(
            "nnprofile: error: no result from rank%s %s of %d within %g s (see %s)"
            % (
                "s" if len(missing) > 1 else "",
                spans(missing),
                world.size,
                args.merge_wait,
                os.path.join(outdir, "rank-%d" % missing[0]),
            ),
            file=sys.stderr,
        )
        return status or 1
    return status


def run(args) -> int:
    from ..render import log
    from ..api.programs import make_schedule

    target = args.module or args.script
    if not target:
        raise ProfileError(
            "a program to run is missing: nnprofile run [-o OUTDIR] SCRIPT.py [ARGS...] (or -m MODULE [ARGS...])"
        )
    name = args.module.rsplit(".", 1)[-1] if args.module else os.path.splitext(os.path.basename(args.script))[0]
    outdir = args.outdir or os.path.join("results", name)
    schedule = make_schedule(
        wait=args.wait,
        warmup=args.warmup,
        active=args.active,
        repeat=args.repeat,
        max_windows=args.max_windows,
        on_demand=args.on_demand,
        signal=args.signal,
    )
    if schedule.on_demand:
        from ..api.ondemand import signal_number

        signal_number(schedule.signal)  # a bad name: one line now, not later

    def progress(line: str) -> None:
        if not args.quiet or line.startswith("nnprofile: window") or "waiting for SIG" in line:
            print(safe_text(line), file=sys.stderr, flush=True)  # paths are data too

    recording, status = run_recording(
        target,
        *args.args,
        outdir=outdir,
        merge_wait=args.merge_wait,
        launched=True,
        progress=progress,
        save_events=args.save_events,
        module=bool(args.module),
        schedule=schedule,
    )
    if args.debug and recording.recorder is not None:  # what nnprofile could not record, with its own frames
        if sys.stderr is not None:
            sys.stderr.write(recording.recorder.faults.traceback_text())
    profile = recording.profile
    if recording.error is not None or recording.unrecorded is not None or profile is None:
        return _not_written(args, recording, status)
    world = recording.run_world()
    if world is not None and world.several:
        return _ranks_written(args, recording, world, outdir, status)
    out = Printer(args.quiet)
    if args.quiet:  # (the log is not printed: it is not made again, nor its analysis)
        warnings(profile)
    else:
        out.write(log.render(profile, view=view_of(args)))
    written(out, outdir, profile.files, args.open)
    return status
