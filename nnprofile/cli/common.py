"""What every command shares: printing that survives a closed pipe, stderr held back, the outdir; the
option types (from ``nnprofile.base.options``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, NoReturn, Optional, Sequence, TextIO

from ..render.files import claimed, prepare_outdir  # noqa: F401  (re-exported for the commands)
from ..render.safe import safe_text
from ..base.errors import ProfileError
from ..base.options import non_negative_float, positive_float, positive_int  # noqa: F401  (for the commands)


class Printer:
    """Lines to stdout as they come; quiet with --quiet; silent once stdout goes away.

    When the reader of a pipe closes it (``nnprofile ... | head``), profiling
    goes on quietly and every file is written as usual: the broken pipe is
    swallowed and stdout pointed at /dev/null, so that Python's final flush
    does not complain either.
    """

    def __init__(self, quiet: bool = False, progress: Optional[Any] = None):
        self.quiet = quiet
        self.closed = False
        self.printed: List[str] = []
        self.progress = progress  # a progress bar on the terminal, cleared around each line

    def __call__(self, line: str, always: bool = False) -> None:
        """A line of the log's (held back with --quiet), or one that is never held back (``always``: where the files
        went, a warning)."""
        line = safe_text(line)  # no name reaches the terminal as an escape sequence
        if not always:
            self.printed.append(line)
        if self.quiet and always:  # (on stderr: with -q a program's own stdout stays its own, line for line)
            if sys.stderr is not None:
                try:
                    print(line, file=sys.stderr, flush=True)
                except (BrokenPipeError, ValueError):
                    pass
            return
        if self.quiet or self.closed:
            return
        if sys.stdout is None:  # closed by the shell: as the program alone prints, nothing
            self.closed = True
            return
        try:
            if self.progress is not None:
                with self.progress.writing():
                    sys.stdout.write(line + "\n")
                    sys.stdout.flush()
            else:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            self._close()

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self(line)

    def finish(self, text: str) -> None:
        """Print what of ``text`` (the whole log) has not been printed yet, so stdout ends as the log."""
        lines = text.splitlines()
        done = len(self.printed)
        rest = lines[done:] if lines[:done] == self.printed else lines
        for line in rest:
            self(line)

    def _close(self) -> None:
        self.closed = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def folder(text: str) -> str:
    """An output folder's name (``-o``): an empty one is refused, never taken for the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty folder name (leave -o out for the default folder)")
    return text


def terminal_stderr() -> TextIO:
    """stderr as it is now, kept apart (a dup of its descriptor) for progress bars: NativeStderr may
    point descriptor 2 elsewhere while NNabla runs."""
    try:
        return open(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="replace")
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's captured stderr)
        return sys.stderr


class NativeStderr:
    """Holds back what NNabla's C++ code writes to stderr during a run.

    NNabla prints its own lines before raising (``Error during forward
    propagation``, ``Failed to allocate``); nnprofile says what matters in one
    line instead. What was held back is written out after the run, unless the
    run ended in an error nnprofile explains (``drop``). ``--debug`` shows it all.
    """

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.drop = False

    def __enter__(self) -> "NativeStderr":
        if not self.enabled:
            return self
        import tempfile

        sys.stderr.flush()
        self._held = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._held.fileno(), 2)
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if not self.enabled:
            return
        if kind is not None and issubclass(kind, ProfileError):
            self.drop = True
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._held.seek(0)
        text = self._held.read()
        self._held.close()
        if text and not self.drop:
            try:
                os.write(2, text)
            except OSError:
                pass


class Parser(argparse.ArgumentParser):
    """The commands' parser: a bad argument is one line (what is wrong, and where the options are), exit 2."""

    def error(self, message: str) -> "NoReturn":
        self.exit(2, "%s: error: %s (see %s --help)\n" % (self.prog, safe_text(message), self.prog))


def add_view(p: argparse.ArgumentParser) -> None:
    """The options of what is printed (the answer's table) and of opening the report."""
    from ..render.answer import GROUPS, SORTS, TOP

    p.add_argument(
        "--top",
        type=positive_int,
        default=TOP,
        metavar="N",
        help="rows of the top layers' table the printed log opens with (default %d)" % TOP,
    )
    p.add_argument(
        "--sort", choices=SORTS, default="time", help="its order: time a step (default), forward, backward, name"
    )
    p.add_argument(
        "--group-by",
        choices=GROUPS,
        default="layer",
        dest="group_by",
        help="its rows: each layer (default), or each layer type summed",
    )
    p.add_argument("--open", action="store_true", help="open report.html in the browser when it is written")


def view_of(args: argparse.Namespace) -> Any:
    from ..render.answer import View

    return View(
        top=getattr(args, "top", 10), sort=getattr(args, "sort", "time"), group_by=getattr(args, "group_by", "layer")
    )


def warnings(profile: Any) -> None:
    """What a run's profile warns of (``nnprofile.render.notes.WARNINGS``: what could not be recorded, steps unseen),
    on stderr: said with --quiet too, which drops the log and progress, never a warning (pip's convention)."""
    from ..render.notes import WARNINGS, text

    for note in getattr(profile, "notes", []):
        if getattr(note, "kind", "") in WARNINGS and sys.stderr is not None:
            print("nnprofile: warning: %s" % safe_text(text(note)), file=sys.stderr)


def said(out: Printer, text: str) -> None:
    """A line every writing command ends with (``Written to ...``): never held back by --quiet (then on stderr, the
    program's stdout its own), wrapped between its files, never inside a name."""
    from ..render.log import wrap

    for line in wrap(text):
        out(line, always=True)


def written(out: Printer, outdir: str, files: Sequence[str], open_report: bool = False) -> None:
    """The last line of every command that writes: where, and every file; then the report opened if asked."""
    said(out, "Written to %s: %s" % (outdir, ", ".join(files) if files else "nothing"))
    if open_report:
        report = os.path.abspath(os.path.join(outdir, "report.html"))
        if not os.path.isfile(report):
            print("nnprofile: no report.html in %s to open" % outdir, file=sys.stderr)
            return
        import webbrowser

        try:
            if not webbrowser.open("file://" + report):
                print("nnprofile: no browser to open %s with" % report, file=sys.stderr)
        except Exception as e:  # no browser is no failure of the profile's
            print("nnprofile: could not open %s (%s)" % (report, e), file=sys.stderr)
