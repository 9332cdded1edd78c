"""The recorder's windows (a mixin of ``Recorder``): a step's end and what it sets going (a window closed, the
next opened, the hooks on or off for the step to come), a window on demand, the program's own step marks, and
what other work on the machine took as they pass (the time the thread waited for a CPU, read where a step may
begin; Python's full collections started by nnprofile's own allocation, left out of every figure)."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .host import RecorderParts
from ..assembly.events import Hooks, StepMark
from ..assembly.steps import Loop
from . import importlock
from .counting import RECHECK, WATCH_EVERY
from .schedule import OFF

HOOK_KEY = "nnprofile"
# Creation sites are noted for functions made in the first step and before (a dynamic graph makes
# them anew every step; its layers are known by position, and named from the first step they ran in).
SITE_STEPS = 1
MAX_CREATED = 20_000  # functions whose source is remembered across windows
_getframe = sys._getframe
_ident = threading.get_ident


class Windowing:
    """The Recorder's part that follows its schedule's windows as the program's steps end."""

    # (the Recorder's, set in its __init__)
    _deferred: Optional[BaseException]
    _reads: List[int]
    events: List[Any]
    excluded: List[Tuple[int, int]]
    waits: List[Tuple[int, int, int]]
    created: Dict[Any, str]

    def _init_windows(self: RecorderParts, on_window: Optional[Callable[[Any], None]]) -> None:
        """Where the schedule has got: the window open (or the last), the steps counted, what is due next."""
        self.on_window = on_window  # called as each window closes, with its events still here
        self.on_active: Optional[Callable[[Any], None]] = None  # called when a window's kept steps are done
        self._active_handed = False
        self.capturing = False  # a window is open: its events are kept
        self.window = 0  # the window open, or the last closed
        self.window_start = 0  # the steps of the run before the open window began
        self._asked = False  # a window on demand was asked for (a signal)
        self.last_step_ns = 0  # when the last step ended
        self.window_end = 0  # the steps of the run when the last window closed
        self.watch: Optional[Callable[[], None]] = None  # called every WATCH_EVERY steps between windows
        self.ended_ns = 0  # when the recording ended (the program's end)
        self.hooks_on = False

    def step(self: RecorderParts, end_ns: Optional[int] = None) -> None:
        """``nnprofile.step()``: the program marks the end of a step."""
        try:
            if _ident() != self.program_thread or not self.recording:
                return
            self.steps.marked = True
            if not self.capturing:
                self.steps.light_step("marks", 0)
                return
            at = self.clock() if end_ns is None else end_ns
            self._break_pass()
            self.events.append(StepMark(at, self.stacks.take(_getframe(1))))
            self.loop.mark(at)
            self._find_sync()
            self.steps.count_passes()
            self.excluded.append((at, self.clock()))
        except Exception as e:
            self.faults.add("nnprofile.step()", e)

    def request_window(self: RecorderParts) -> None:
        """A window on demand (a signal): from the next step on. Only a flag: safe in a signal handler."""
        self._asked = True
        try:
            if self.recording:
                self.toggles.set("reads", True)  # the step the window begins at is seen where it begins
        except Exception:
            pass

    def step_ended(self: RecorderParts, late: bool = False) -> None:
        """A step has ended (``steps.done`` counts it): close the window whose steps are done, open the next
        where the schedule says, set the hooks for the step to come. ``late``: seen at an update, after the
        step that follows began (its reads were not watched): a window asked for begins a step later."""
        self.last_step_ns = self.clock()
        if self.capturing:
            self.cpu.note(self.last_step_ns)
        if self.steps.done < self._quiet_until and not self._asked and not self.capturing:
            return  # between windows, nothing is due before then
        if self.capturing and self.steps.done - self.window_start <= SITE_STEPS + 1:
            self.snapshot_parameters()  # a dynamic graph makes its parameters in its first steps
        if self.watch is not None and not self.capturing and self.steps.done % WATCH_EVERY == 0:
            self.watch()
        if self.capturing and self.windows.window_done(self.steps.done):
            self._close_window()
        elif (
            self.capturing
            and not self._active_handed
            and self.on_active is not None
            and self.windows.active_done(self.steps.done)
        ):
            self._active_handed = True  # its kept steps done: written now, not after the steps for the hooks' cost
            try:
                self.on_active(self)
            except Exception as e:
                self.faults.add("handing over window %d" % self.window, e)
        if self._asked:
            self._asked = False
            self.windows.ask(self.steps.done + (1 if late else 0))
        if not self.capturing and self.steps.countable:
            phase, window = self.windows.begin(self.steps.done)
            if phase != OFF:
                self._open_window(window)
        if self.capturing:
            self._switch_hooks(self.windows.hooked(self.steps.done) or self._passes_only())
        self._sync_wrappers()
        self._quiet_until = self._next_due() if not self.capturing else 0

    # -- the wrappers between windows: only those that count the steps --------------------------------------

    def _sync_wrappers(self: RecorderParts) -> None:
        """Between windows, the monitors' wrappers are off, and the iterators' too where the updates alone count
        the steps (every iteration of the loop kept has one) and no window is near: the program's reads then
        run as NNabla's own. Both are on again a step before a window begins (or when one is asked for)."""
        if self.recording:  # (once stopped, every original is back)
            self.toggles.set("monitors", self.capturing)
        if self._import_locks is not None:
            importlock.stacked(self.capturing)
        w, steps = self.windows, self.steps
        near = self._asked or w.queued or (w.next_start is not None and steps.done + 1 >= w.next_start)
        counted = bool(steps.frame_loop) and steps.by_iterations()
        by_updates = counted and bool(self.solvers) and steps.counter.updates_show_it
        if self.recording:
            self.toggles.set("reads", self.capturing or near or not by_updates)
        steps.by_frame_only = counted and not self.capturing and self.recording

    def _next_due(self: RecorderParts) -> int:
        """Between windows, the step count at which a step's end next has something to do: the window a step
        ahead, the watcher's turn, the wrappers' choice while it can still change (checked every few steps)."""
        due = []
        w, done = self.windows, self.steps.done
        if w.next_start is not None and w.more():
            due.append(w.next_start - 1)
        if self.watch is not None:
            due.append(done - done % WATCH_EVERY + WATCH_EVERY)
        if self.toggles.is_on("reads"):
            due.append(done + RECHECK)
        return min(due) if due else 1 << 62

    def _passes_only(self: RecorderParts) -> bool:
        """The steps show only in passes (no update, read or mark in the window): the hooks stay on."""
        if self.steps.by_iterations():
            return not self.loop.segments and not self.loop.read_at and not self.loop.marks and not self.solvers
        return self.loop.rule().kind == "passes"

    def _open_window(self: RecorderParts, window: int) -> None:
        """A window begins: its events from here, a loop of its own (the steps counted go on)."""
        self.steps.window_opened()
        self.window, self.window_start = window, self.steps.done
        self._patch_subclasses()
        self.events, self.excluded, self.cpu.readings = [], [], []
        if len(self.created) > MAX_CREATED:  # bounded over any number of windows (sources noted anew)
            self.created = {}
        self.loop = Loop()
        self.started_ns = self.clock()
        self.cpu.note(self.started_ns)
        self.capturing = True
        self._active_handed = False
        self.note_sites = True
        if self.sampler is not None:
            self.sampler.clear()
            self.sampler.start()
        self._sync_wrappers()

    def _close_window(self: RecorderParts) -> None:
        """The window's steps are done: the hooks off, the program runs on untouched; the window is handed
        over (``on_window``), and its events then forgotten."""
        self._break_pass()
        self.capturing = False
        if self.sampler is not None:
            self.sampler.stop()
        self._switch_hooks(False)
        self.window_end = self.steps.done
        self.stopped_ns = self.clock()
        self.cpu.note(self.stopped_ns)
        self.snapshot_parameters()
        self.steps.freeze()
        self._sync_wrappers()
        if self.on_window is not None:
            try:
                self.on_window(self)
            except Exception as e:  # the program goes on, whatever happened to the window's files
                self.faults.add("handing over window %d" % self.window, e)
        self.events, self.excluded = [], []

    def _collected(self: RecorderParts, phase: str, info: Any) -> None:
        """Python's garbage collector, run by an allocation: where nnprofile's own code allocated (an event, a stack),
        or NNabla inside a pass (the object it hands each hook: the program's own pass allocates none), its pause is
        nnprofile's work, left out of every call, pass and step like the rest of it (a collection of the window's
        many events once read 30 ms inside a 0.1 ms function). Where the program allocated, it is its time."""
        try:
            if not self.capturing or _ident() != self.program_thread or info.get("generation", 2) < 2:
                return  # (young generations' collections take microseconds)
            if phase == "start":
                frame = _getframe(1)
                ours = frame is not None and (
                    frame.f_globals.get("__name__", "").startswith("nnprofile.")
                    or (frame.f_code, frame.f_lasti) in self.site_phases
                )
                self._gc_start = self.clock() if ours else 0
            elif self._gc_start:
                self.excluded.append((self._gc_start, self.clock()))
                self._gc_start = 0
        except Exception as e:
            self.faults.add("timing a garbage collection", e)
        except BaseException as e:  # noqa: B036 (a Ctrl-C that landed here: Python would drop it; given back later)
            self._deferred = e

    def aside(self: RecorderParts, t0: int) -> None:
        """nnprofile's own work since ``t0`` set aside (no part of any call, pass or step), the wait for a CPU read as
        it ends: what held that work up is no part of any step either (``assembly.intervals.waited_aside``)."""
        if self.sampler is not None:
            self.sampler.resume()  # (its own cost is nnprofile's too)
        if self.capturing:
            t1 = self.cpu.note(None)  # (read before the clock: the reading's own cost is nnprofile's too)
        else:
            t1 = self.clock()
        self.excluded.append((t0, t1))

    def past_the_loop(self: RecorderParts, frame: Any) -> None:
        """A call of the program's outside its step loop while the steps that measure the hooks' cost run without them:
        the loop has ended (the program loads its best parameters, evaluates, saves): the hooks go back on, so that
        what it does after its last step is recorded (it is in no step)."""
        try:
            if (
                self.capturing
                and not self.hooks_on
                and self.calibrate
                and self.steps.counter.loop is not None
                and self.steps.by_iterations()
                and self._outside_loop(frame)
            ):
                self._switch_hooks(True)
        except Exception as e:
            self.faults.add("following the program past its loop", e)

    def _outside_loop(self: RecorderParts, frame: Any) -> bool:
        loop = self.steps.counter.loop
        if loop is None:
            return False
        code, head = self.stacks.objects[loop[0]], loop[1]
        end = next((e for h, e in self.stacks.codes[loop[0]].loops if h == head), head)
        depth = 0
        while frame is not None and depth < 64:
            if frame.f_code is code:
                return not (head <= frame.f_lasti <= end)
            frame, depth = frame.f_back, depth + 1
        return True

    def _switch_hooks(self: RecorderParts, on: bool) -> None:
        if on == self.hooks_on:
            return
        nn = self._nn
        if on:
            nn.set_function_pre_hook(HOOK_KEY, self._pre)
            nn.set_function_post_hook(HOOK_KEY, self._post)
        else:
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
        self.hooks_on = on
        if self.capturing:
            self.events.append(Hooks(on, self.clock()))
            self.loop.hooks(on)
