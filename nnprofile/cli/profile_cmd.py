"""nnprofile PROJECT: profile an NNC project, printing the log as it is measured."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from .. import api
from .._version import __version__
from ..base.errors import ProfileError
from ..base.options import ProfileOptions
from .common import folder, Parser, NativeStderr, Printer, add_view, terminal_stderr, view_of, warnings, written
from .progress import Progress


# The other commands, as nnprofile.cli lists them (named here: the parser is built below it).
COMMAND_NAMES = ("run", "capture", "report", "compare", "check", "merge")
SUMMARY = "profile an NNC project (.nntxt, .nnp) layer by layer, as NNC's Profile command does (the default)"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile",
        description="Profile an NNabla / Neural Network Console project layer by layer, "
        "as NNC's Profile command does, and write profile.log, profile.csv, "
        "profile_detail.csv, summary.csv, profile.xlsx, report.html and result.json "
        "(and trace.json.gz for a recorded program).",
        epilog="Other commands: %s ('nnprofile --help' lists them; 'nnprofile COMMAND --help' gives their "
        "options)." % ", ".join(COMMAND_NAMES),
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="PROJECT",
        help="the project (.nntxt, .nnp) and optionally parameter files (.h5, .protobuf)",
    )
    p.add_argument("-o", "--outdir", type=folder, help="output folder (default: results/<project name>)")
    ProfileOptions.add_arguments(p)  # every profiling option, defined once (nnprofile.base.options)
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_view(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks and NNabla's own log")
    p.add_argument("--version", action="version", version="nnprofile %s" % __version__)
    return p


class LiveLog:
    """While it is measured, the progress bar (on a terminal) follows the sections; the log is printed whole once
    it is measured (or stopped), the answer first: so that the progress bar has finished before it, and what is
    printed is profile.log (``view``: the answer's table as --top, --sort and --group-by ask)."""

    def __init__(self, out: Printer, view: Any = None):
        self.out = out
        self.profile = None
        self.view = view

    def start(self, profile) -> None:
        self.profile = profile

    def section(self, section) -> None:
        if self.out.progress is not None:
            self.out.progress.section(section)

    def entry(self, section, entry) -> None:
        pass

    def section_end(self, section, analysis) -> None:
        if self.out.progress is not None:
            self.out.progress.section_end(section)

    def finish(self, profile) -> None:
        """The log, whole (also of an incomplete profile)."""
        from ..render import answer, log

        self.out.finish(log.render(profile, view=self.view or answer.DEFAULT))


def run(args) -> int:
    name = os.path.splitext(os.path.basename(args.files[0]))[0]
    outdir = args.outdir or os.path.join("results", name)
    terminal = terminal_stderr()
    progress = Progress.for_terminal(args.quiet, terminal)
    live = LiveLog(Printer(args.quiet, progress), view_of(args))
    native = NativeStderr(enabled=not args.debug)
    try:
        with native:
            options = dataclasses.asdict(ProfileOptions.from_args(args))
            profile = api.profile(
                *args.files,
                outdir=outdir,
                on_start=live.start,
                on_section=live.section,
                on_entry=live.entry,
                on_section_end=live.section_end,
                on_progress=live.out,
                on_round=progress.round,
                on_run=progress.run,
                **options,
            )
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
    if args.quiet:
        warnings(profile)
    written(live.out, outdir, profile.files, args.open)
    return 0
