"""The recording's ledger of its own failures: what nnprofile could not record, and where.

Every hook and wrapper is a guest in the program's call: a failure of nnprofile's own is noted here
(``add``), never raised into the program. Nothing is formatted or imported while noting (it may run
inside NNabla's C++, during an import): the traceback is kept as frames' names and lines, and written
out at the end (``traceback_text``, for ``--debug``). A Ctrl-C caught where nothing may be raised (a hook, a
collection's callback) is no fault: it is given back to the program (``give_back``).
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

MAX_FAULTS = 20  # kinds of fault kept (each with its count)


@dataclass
class Fault:
    """One kind of fault: its first text, how many times it happened, its first traceback's frames."""

    text: str
    count: int
    frames: traceback.StackSummary


class Faults:
    """The faults noted while recording, by kind (where, and the error's type), each with its count."""

    def __init__(self) -> None:
        self.kinds: Dict[str, Fault] = {}  # by "where: ErrorType"

    def add(self, where: str, error: BaseException) -> None:
        """A failure of nnprofile's own at ``where``: noted, never raised."""
        try:
            key = "%s: %s" % (where, type(error).__name__)
            known = self.kinds.get(key)
            if known is not None:
                known.count += 1
                return
            if len(self.kinds) < MAX_FAULTS:
                frames = traceback.StackSummary.extract(traceback.walk_tb(error.__traceback__), lookup_lines=False)
                self.kinds[key] = Fault("%s: %s: %s" % (where, type(error).__name__, error), 1, frames)
        except Exception:
            pass

    def counted(self) -> List[Tuple[str, int]]:
        """Each kind of fault's text and how many times it happened, in the order first seen."""
        return [(f.text, f.count) for f in self.kinds.values()]

    def traceback_text(self) -> str:
        """nnprofile's own tracebacks of what it could not record (``--debug``)."""
        out = []
        for fault in self.kinds.values():
            text, n = fault.text, fault.count
            try:
                lines = "".join(traceback.format_list(fault.frames))
            except Exception:
                lines = ""
            out.append(
                "nnprofile could not record (%d time%s): %s\nTraceback (nnprofile's own frames):\n%s"
                % (n, "" if n == 1 else "s", text, lines)
            )
        return "".join(out)


def give_back(error: BaseException, frame: Any) -> None:
    """A Ctrl-C (or a SIGTERM, ``base.errors.Terminated``) whose handler ran inside a callback called from C: a
    function hook (raised there, it reaches the program as a SystemError out of ``forward``, which its own ``except
    KeyboardInterrupt`` misses) or a garbage collection's (Python prints it and drops it). It is raised again in
    ``frame``, the program's code that made the call into C, as its next line begins (a trace function of that frame
    alone): where Python would have raised it without nnprofile, as the call returned. Python takes every trace
    function off as one raises; a debugger's or a coverage tool's goes with it, as the program stops."""
    fresh = error.with_traceback(None)
    previous = frame.f_trace

    def local(traced: Any, event: str, arg: Any) -> Any:
        traced.f_trace = previous
        raise fresh

    frame.f_trace = local
    frame.f_trace_lines = True
    if sys.gettrace() is None:
        sys.settrace(_untraced)  # (a frame's own trace function runs only while one is set)


def _untraced(frame: Any, event: str, arg: Any) -> None:
    return None  # (the calls made meanwhile: not traced)
