"""When a long training is recorded: windows across the run, as torch.profiler's ``schedule``.

A window is ``warmup`` steps recorded and set aside (buffers are built, caches fill) and ``active``
steps kept, after ``wait`` steps the program runs untouched; ``repeat`` windows (0: until the program
ends), or, on demand, one window each time one is asked for (a signal). The first window's kept steps are
followed by steps without the function hooks (``CALIBRATION``): the program as it runs alone. Between windows
no hook is set: the program runs at full speed, and only the light wrappers that count its steps see it.

``Windows`` is the schedule's state as the steps come: pure, so that where each step falls is tested
without NNabla.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..base.errors import ProfileError
from ..base.schedule import Schedule  # noqa: F401 (the recording's, and its users')

OFF, WARMUP, ACTIVE, CALIBRATE = "off", "warmup", "active", "calibrate"


class Windows:
    """Where each step of the run falls: ``begin(step)`` as step ``step`` (from 0, over the whole run)
    begins says its phase and its window (from 1); ``window_done`` says when a window's last step has
    ended. ``ask()``: a window on demand, from the next step on."""

    def __init__(self, schedule: Schedule, calibration: Sequence[bool] = ()):
        self.schedule = schedule
        self.calibration = tuple(calibration)  # after the first window's kept steps: True with the hooks, False without
        self.window = 0  # windows begun
        self.start: Optional[int] = None  # the step the current window began at
        self.next_start: Optional[int] = None if schedule.on_demand else schedule.wait
        self.closed = 0  # windows closed
        self.queued = False  # on demand: asked again while one was under way

    def length(self, window: int) -> int:
        """Steps a window holds: warmup, active, and after the first the calibration's."""
        s = self.schedule
        return s.warmup + s.active + (len(self.calibration) if window == 1 else 0)

    def ask(self, step: int) -> bool:
        """A window on demand, from step ``step`` on; False where one is already under way."""
        if self.start is not None:  # one under way: the next begins when it ends (asked while its files came)
            self.queued = True
            return True
        if self.next_start is not None:
            return False
        self.next_start = step
        return True

    def more(self) -> bool:
        """Whether another window may come."""
        s = self.schedule
        return s.on_demand or s.repeat == 0 or self.window < s.repeat

    def begin(self, step: int) -> Tuple[str, int]:
        """The phase of step ``step`` and its window (0 outside any), as it begins."""
        if self.start is None and self.next_start is not None and step >= self.next_start and self.more():
            self.start, self.next_start = step, None
            self.window += 1
        if self.start is None:
            return OFF, 0
        k = step - self.start
        s = self.schedule
        if k < s.warmup:
            return WARMUP, self.window
        if k < s.warmup + s.active:
            return ACTIVE, self.window
        return CALIBRATE, self.window

    def hooked(self, step: int) -> bool:
        """Whether step ``step`` of the current window runs with the function hooks (a calibration step
        may not)."""
        if self.start is None:
            return False
        k = step - self.start - self.schedule.warmup - self.schedule.active
        return k < 0 or k >= len(self.calibration) or self.window != 1 or self.calibration[k]

    def window_done(self, steps_done: int) -> bool:
        """After ``steps_done`` steps: whether the current window has all its steps (it is then closed, and
        the next one, if any, begins after ``wait`` steps)."""
        if self.start is None or steps_done < self.start + self.length(self.window):
            return False
        self.start = None
        self.closed += 1
        if not self.schedule.on_demand and self.more():
            self.next_start = steps_done + self.schedule.wait
        elif self.queued:
            self.queued, self.next_start = False, steps_done
        return True


def make_schedule(
    *,
    wait: int = Schedule.wait,
    warmup: Optional[int] = None,
    skip_first: Optional[int] = None,
    active: int = Schedule.active,
    repeat: int = Schedule.repeat,
    max_windows: int = Schedule.max_windows,
    on_demand: bool = False,
    signal: str = Schedule.signal,
) -> Schedule:
    """A schedule from the options as users give them (``skip_first`` is ``warmup``'s older name); a bad value is
    one clear error."""
    if warmup is not None and skip_first is not None and warmup != skip_first:
        raise ProfileError("warmup and skip_first are one option (skip_first is its older name): give one")
    chosen = warmup if warmup is not None else (skip_first if skip_first is not None else Schedule.warmup)
    try:
        return Schedule(
            wait=wait,
            warmup=chosen,
            active=active,
            repeat=repeat,
            max_windows=max_windows,
            on_demand=on_demand,
            signal=signal.upper().replace("SIG", ""),
        )
    except ValueError as e:
        raise ProfileError(str(e))
