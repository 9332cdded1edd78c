"""The clock seam: every time nnprofile takes comes from one of these, so that tests can script it.

Times are kept as integer nanoseconds of a monotonic clock and turned into
milliseconds only for display (as line_profiler keeps ticks and a unit).
"""

from __future__ import annotations

import time
from typing import Callable

Now = Callable[[], int]  # a reading in ns


class Clock:
    """Monotonic nanosecond clock; tests replace it with a scripted one.

    ``now_ns`` is the builtin itself, not a method around it: a Python frame per reading
    would add to every sample's overhead.
    """

    name = "time.perf_counter_ns"

    def __init__(self) -> None:
        self.now_ns: Now = time.perf_counter_ns
