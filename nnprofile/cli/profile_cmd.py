"""nnprofile PROJECT: profile an NNC project, printing the log as it is measured."""
from __future__ import annotations

import argparse
import os
import sys

from .. import api
from .._version import __version__
from ..base.choices import BACKENDS, MODES, TYPE_CONFIGS
from ..base.errors import ProfileError
from .common import NativeStderr, Printer, positive_float, positive_int, terminal_stderr
from .progress import Progress


SUMMARY = "profile an NNC project (.nntxt, .nnp) layer by layer, as NNC's Profile command does (the default)"

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile",
        description="Profile an NNabla / Neural Network Console project layer by layer, "
                    "as NNC's Profile command does, and write profile.log, profile.csv, "
                    "profile_detail.csv, summary.csv, profile.xlsx and result.json.",
        epilog="Other commands: run, report, compare, check, merge ('nnprofile --help' lists them; "
               "'nnprofile COMMAND --help' gives their options).")
    p.add_argument("files", nargs="+", metavar="PROJECT",
                   help="the project (.nntxt, .nnp) and optionally parameter files (.h5, .protobuf)")
    p.add_argument("-o", "--outdir", help="output folder (default: results/<project name>)")
    p.add_argument("--context", choices=BACKENDS,
                   help="run on this backend instead of the project's global_config")
    p.add_argument("--type-config", choices=TYPE_CONFIGS,
                   help="run in this precision instead of the project's")
    p.add_argument("--batch-size", type=positive_int, help="override the networks' batch size")
    p.add_argument("--synthetic", action="store_true",
                   help="feed generated data of the declared shapes instead of reading the datasets")
    p.add_argument("--zero-weights", action="store_true",
                   help="zero every weight and bias first, as nnabla_cli profile does "
                        "(only to compare with it: zeros make some layers unrealistically fast)")
    p.add_argument("--mode", choices=MODES, default="isolated",
                   help="isolated: each function re-run on its own, as NNC measures (default); "
                        "graph: each function timed inside real forward and backward passes")
    p.add_argument("--runs", type=positive_int,
                   help="a fixed number of rounds of one timed run per entry (default: adaptive)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs before timing (default 1)")
    p.add_argument("--target-rse", type=positive_float, default=0.02,
                   help="adaptive sampling stops at this relative standard error (default 0.02)")
    p.add_argument("--min-rounds", type=positive_int, default=5,
                   help="adaptive: at least this many rounds over all entries (default 5)")
    p.add_argument("--max-seconds", type=positive_float, default=1.5,
                   help="adaptive: time budget of a section, all entries and rounds together (default 1.5)")
    p.add_argument("--max-seconds-per-entry", type=positive_float, default=0.25,
                   help="adaptive: an entry is final after this much timed work (default 0.25)")
    p.add_argument("--drift-threshold", type=positive_float, default=0.10,
                   help="a round more than this far from the median round's speed counts as drift (default 0.10)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="profile in N fresh processes and pool the results, reporting the run-to-run spread "
                        "(for nnabla_cli-grade stability, at N times the time)")
    p.add_argument("--memory-limit", metavar="SIZE",
                   help="report the largest batch whose estimated peak memory fits in SIZE (e.g. 8GiB, 512MB)")
    p.add_argument("--no-layers", action="store_true",
                   help="only the whole-step entries (data, forward_all, backward_all, update, ...): "
                        "no per-layer setup, forward and backward entries")
    p.add_argument("--optimizer", action="append", metavar="NAME", help="profile only this optimizer")
    p.add_argument("--executor", action="append", metavar="NAME", help="profile only this executor")
    p.add_argument("--no-training", action="store_true", help="skip the optimizers")
    p.add_argument("--no-inference", action="store_true", help="skip the executors")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks and NNabla's own log")
    p.add_argument("--version", action="version", version="nnprofile %s" % __version__)
    return p


class LiveLog:
    """The log, printed as it is measured: header, sections, entries, section footers."""

    def __init__(self, out: Printer):
        self.out = out
        self.profile = None

    def start(self, profile) -> None:
        from ..render import log
        self.profile = profile
        for line in log.header_lines(profile):
            self.out(line)

    def section(self, section) -> None:
        from ..render import log
        self.out(log.section_line(section))
        if self.out.progress is not None:
            self.out.progress.section(section)

    def entry(self, section, entry) -> None:
        from ..render import log
        self.out(log.entry_line(entry))

    def section_end(self, section, analysis) -> None:
        from ..render import log
        assert self.profile is not None  # start() came first
        if self.out.progress is not None:
            self.out.progress.section_end(section)
        for line in log.section_footer(self.profile, analysis):
            self.out(line)

    def finish(self, profile) -> None:
        """Whatever the live lines did not show (an incomplete end), so that stdout is the log."""
        from ..render import log
        self.out.finish(log.render(profile))


def run(args) -> int:
    name = os.path.splitext(os.path.basename(args.files[0]))[0]
    outdir = args.outdir or os.path.join("results", name)
    terminal = terminal_stderr()
    progress = Progress.for_terminal(args.quiet, terminal)
    live = LiveLog(Printer(args.quiet, progress))
    native = NativeStderr(enabled=not args.debug)
    try:
        with native:
            profile = api.profile(
                *args.files, outdir=outdir, runs=args.runs, warmup=args.warmup, target_rse=args.target_rse,
                min_rounds=args.min_rounds, max_seconds=args.max_seconds,
                max_seconds_per_entry=args.max_seconds_per_entry, drift_threshold=args.drift_threshold,
                synthetic=args.synthetic, context=args.context, type_config=args.type_config,
                batch_size=args.batch_size, mode=args.mode, layers=not args.no_layers,
                zero_weights=args.zero_weights, optimizers=args.optimizer, executors=args.executor,
                training=not args.no_training, inference=not args.no_inference,
                on_start=live.start, on_section=live.section, on_entry=live.entry,
                on_section_end=live.section_end, repeat=args.repeat, on_progress=live.out,
                memory_limit=args.memory_limit, on_round=progress.round, on_run=progress.run)
    except ProfileError as e:
        progress.close()
        if e.profile is not None and e.profile.sections:
            live.finish(e.profile)
        raise
    finally:
        progress.close()
        if terminal is not sys.stderr:
            terminal.close()
    live.finish(profile)
    return 0
