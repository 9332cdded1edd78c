"""nnprofile PROJECT: profile an NNC project, printing the log as it is measured."""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from .. import api
from .._version import __version__
from ..base.errors import ProfileError
from ..base.options import ProfileOptions
from .common import Parser, NativeStderr, Printer, terminal_stderr
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
               "options)." % ", ".join(COMMAND_NAMES))
    p.add_argument("files", nargs="+", metavar="PROJECT",
                   help="the project (.nntxt, .nnp) and optionally parameter files (.h5, .protobuf)")
    p.add_argument("-o", "--outdir", help="output folder (default: results/<project name>)")
    ProfileOptions.add_arguments(p)  # every profiling option, defined once (nnprofile.base.options)
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
            options = dataclasses.asdict(ProfileOptions.from_args(args))
            profile = api.profile(*args.files, outdir=outdir, on_start=live.start, on_section=live.section,
                                  on_entry=live.entry, on_section_end=live.section_end, on_progress=live.out,
                                  on_round=progress.round, on_run=progress.run, **options)
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
