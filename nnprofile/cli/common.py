"""What every command shares: printing that survives a closed pipe, stderr held back, the outdir; the
option types (from ``nnprofile.base.options``)."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, TextIO, NoReturn

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

    def __call__(self, line: str) -> None:
        line = safe_text(line)  # no name reaches the terminal as an escape sequence
        self.printed.append(line)
        if self.quiet or self.closed:
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
