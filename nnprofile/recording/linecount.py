"""Between windows, the steps of a loop that shows them only in its passes (an inference, no solver, no reader, no
mark): counted from the loop's own lines.

The hooks that see a pass are off between windows, and nothing else of the program's is called there. So the loop's
frame alone is traced (``frame.f_trace``): each line it runs is fed to the count of its iterations, as a call is
(``counting.StepCount.traced``). Python asks a thread's trace function at each call whether to trace the called frame;
here only the loop's code is (its frame anew where the function holding it runs again), so the cost is a call of
``_calls`` per Python function call and one per line of the loop body. Where a tracer is set already (a debugger, a
coverage tool), it is left alone and the steps go uncounted, as the profile then says.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional


class LineCount:
    """The line trace of the loop's frame: ``install`` as a window closes (from the program's thread), ``remove``
    as the next opens or the recording ends."""

    def __init__(self, feed: Callable[[Any], None]) -> None:
        self.feed = feed  # a line of the loop run, in its frame
        self._calls: Optional[Callable[..., Any]] = None
        self._frame: Any = None

    def install(self, code: Any) -> bool:
        """Trace the frames running ``code`` (the one running now, and any made later); False where a tracer is
        set already."""
        if self._calls is not None or sys.gettrace() is not None:
            return False
        feed = self.feed

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                feed(frame)
            return local

        def calls(frame: Any, event: str, arg: Any) -> Any:
            return local if frame.f_code is code else None

        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        if frame is not None:
            frame.f_trace, frame.f_trace_lines = local, True
        self._frame, self._calls = frame, calls
        sys.settrace(calls)
        return True

    def remove(self) -> None:
        """The trace off (its frame's, and the thread's where it is still ours)."""
        if self._calls is None:
            return
        if sys.gettrace() is self._calls:
            sys.settrace(None)
        if self._frame is not None:
            try:
                self._frame.f_trace = None
            except Exception:
                pass
        self._frame = self._calls = None
