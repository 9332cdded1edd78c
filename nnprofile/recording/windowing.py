"""The schedule's windows as the program's steps end: a window closed where its steps are done, the next opened
where the schedule says, the hooks on or off for the step to come, a window on demand, and between windows the
fewest wrappers that still count the steps.

``WindowKeeper`` owns where the schedule has got (``windows``, the window open or the last, what is due next);
it tells the recording (``parts.WindowsHost``) to begin and end a capture, and to switch the hooks.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import importlock
from .counting import RECHECK, WATCH_EVERY
from .parts import WindowsHost
from .schedule import OFF, Windows
from .window import Window

# Creation sites are noted for functions made in the first step and before (a dynamic graph makes
# them anew every step; its layers are known by position, and named from the first step they ran in).
SITE_STEPS = 1
MAX_CREATED = 20_000  # functions whose source is remembered across windows


class WindowKeeper:
    """Follows the schedule's windows (``windows``) as the program's steps end."""

    def __init__(self, host: WindowsHost, windows: Windows, on_window: Optional[Callable[[Any], None]]) -> None:
        self.host = host
        self.windows = windows
        self.on_window = on_window  # called as each window closes, with the recorder and its events
        self.watch: Optional[Callable[[], None]] = None  # called every WATCH_EVERY steps between windows
        self.window = 0  # the window open, or the last closed
        self.window_start = 0  # the steps of the run before the open window began
        self.window_end = 0  # the steps of the run when the last window closed
        self.last_step_ns = 0  # when the last step ended
        self._asked = False  # a window on demand was asked for (a signal)
        self._quiet_until = 0  # between windows: the step count before which a step's end needs nothing

    def begin(self) -> None:
        """The recording started: the first window from the first step, where the schedule begins there."""
        phase, window = self.windows.begin(0)
        if phase != OFF:  # (else the program runs untouched until it)
            self.open(window)
            self.host._switch_hooks(True)

    def request_window(self) -> None:
        """A window on demand (a signal): from the next step on. Only a flag: safe in a signal handler."""
        self._asked = True
        try:
            if self.host.recording:
                self.host.toggles.set("reads", True)  # the step the window begins at is seen where it begins
        except Exception:
            pass

    def step_ended(self, late: bool = False) -> None:
        """A step has ended (``steps.done`` counts it): close the window whose steps are done, open the next
        where the schedule says, set the hooks for the step to come. ``late``: seen at an update, after the
        step that follows began (its reads were not watched): a window asked for begins a step later."""
        host, steps = self.host, self.host.steps
        self.last_step_ns = host.clock()
        if host.capturing:
            host.cpu.note(self.last_step_ns)
        if steps.done < self._quiet_until and not self._asked and not host.capturing:
            return  # between windows, nothing is due before then
        if host.capturing and steps.done - self.window_start <= SITE_STEPS + 1:
            host.snapshot_parameters()  # a dynamic graph makes its parameters in its first steps
        if self.watch is not None and not host.capturing and steps.done % WATCH_EVERY == 0:
            self.watch()
        if host.capturing and self.windows.window_done(steps.done):
            self.close()
        if self._asked:
            self._asked = False
            self.windows.ask(steps.done + (1 if late else 0))
        if not host.capturing and steps.countable:
            phase, window = self.windows.begin(steps.done)
            if phase != OFF:
                self.open(window)
        # On past the loop, they stay as they are (``Recorder.past_the_loop`` follows the program back into it): the
        # call that ended the last step is work after it, and switched off and on in its pass, it was cut in two.
        if host.capturing and not (host.past and host.hooks_on):
            host._switch_hooks(self.windows.hooked(steps.done) or self._passes_only())
        self.sync_wrappers()
        self._quiet_until = self._next_due() if not host.capturing else 0

    def open(self, window: int) -> None:
        """A window begins: the recording captures its events from here (the steps counted go on)."""
        self.window, self.window_start = window, self.host.steps.done
        self.host.begin_capture()
        self.sync_wrappers()

    def close(self) -> None:
        """The window's steps are done: the hooks off, the program runs on untouched; the window is handed
        over (``on_window``), and its events then forgotten."""
        host = self.host
        host.end_capture()
        self.window_end = host.steps.done
        self.sync_wrappers()
        if self.on_window is not None:
            try:
                self.on_window(host)
            except Exception as e:  # the program goes on, whatever happened to the window's files
                host.faults.add("handing over window %d" % self.window, e)
        host.window = Window(0)  # its events forgotten (the next window is a new one)

    # -- the wrappers between windows: only those that count the steps --------------------------------------

    def sync_wrappers(self) -> None:
        """Between windows, the monitors' wrappers are off, and the iterators' too where the updates alone count
        the steps (every iteration of the loop kept has one) and no window is near: the program's reads then
        run as NNabla's own. Both are on again a step before a window begins (or when one is asked for)."""
        host = self.host
        if host.recording:  # (once stopped, every original is back)
            host.toggles.set("monitors", host.capturing)
        if host._import_locks is not None:
            importlock.stacked(host.capturing)
        w, steps = self.windows, host.steps
        near = self._asked or w.queued or (w.next_start is not None and steps.done + 1 >= w.next_start)
        counted = bool(steps.frame_loop) and steps.by_iterations()
        by_updates = counted and bool(host.solvers) and steps.counter.updates_show_it
        if host.recording:
            host.toggles.set("reads", host.capturing or near or not by_updates)
        steps.by_frame_only = counted and not host.capturing and host.recording

    def _next_due(self) -> int:
        """Between windows, the step count at which a step's end next has something to do: the window a step
        ahead, the watcher's turn, the wrappers' choice while it can still change (checked every few steps)."""
        due = []
        w, done = self.windows, self.host.steps.done
        if w.next_start is not None and w.more():
            due.append(w.next_start - 1)
        if self.watch is not None:
            due.append(done - done % WATCH_EVERY + WATCH_EVERY)
        if self.host.toggles.is_on("reads"):
            due.append(done + RECHECK)
        return min(due) if due else 1 << 62

    def _passes_only(self) -> bool:
        """The steps show only in passes (no update, read or mark in the window): the hooks stay on."""
        loop = self.host.loop
        if self.host.steps.by_iterations():
            return not loop.segments and not loop.read_at and not loop.marks and not self.host.solvers
        return loop.rule().kind == "passes"
