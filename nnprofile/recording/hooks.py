"""The function hooks (a part of ``Recorder``, mixed in): NNabla's pre- and post-hooks, which see every function of
a static graph, forward and backward, and every backward under ``auto_forward``; the passes they see begin and
end; the hooks switched on and off; Python's collections that nnprofile's own work set off, left out.

The hooks are called by NNabla from C++: nothing may be raised from them (a failure of nnprofile's own is
noted, a Ctrl-C given back to the program). A call's frame (the program's, that called ``forward`` or
``backward``) tells the pass and the graph it ran on (``nnprofile.recording.callsite``).
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from typing import Any, Iterator, Optional, Tuple

from ..assembly.events import STATIC, Call, Hooks
from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at
from .host import RecorderParts
from .patching import Patches
from .raw import device_sync

HOOK_KEY = "nnprofile"
_getframe = sys._getframe
_ident = threading.get_ident


class FunctionHooks:
    """NNabla's function hooks and the passes they see (a part of ``Recorder``: the state is the recorder's)."""

    _deferred: Optional[BaseException]  # a Ctrl-C Python would have dropped, for the next hook

    def _pre(self: RecorderParts, f: Any) -> None:
        try:
            if self._deferred is not None:  # a Ctrl-C (or a SIGTERM) that landed in a garbage collection's callback
                signum = signal.SIGTERM if getattr(self._deferred, "exit_code", 130) == 143 else signal.SIGINT
                self._deferred = None
                _thread.interrupt_main(signum)
            if _ident() == self.program_thread:
                if self.sync is not None:
                    self.sync()  # what ran before this function is not its time
                self.open_calls.append((f, self.clock(), self._mark()))
            else:
                self.elsewhere += 1  # a function another thread ran: not recorded, but counted and said
                self.shared = True
        except BaseException as e:  # noqa: B036 (a Ctrl-C is given back by faults.in_hook)
            self.faults.in_hook("the function pre-hook", e)

    def _start_of(self: RecorderParts, f: Any) -> Optional[Tuple[Any, int, int]]:
        """``f``'s open call (f, its start, the switches then), taken off the open calls (with any call above it that
        never ended)."""
        opened = self.open_calls
        for i in range(len(opened) - 1, -1, -1):
            top = opened[i]
            if type(top) is tuple and top[0] == f:
                del opened[i:]
                return top
            if top is not None and type(top) is not tuple:  # a wrapper's call, open around f: f began before it
                return None
        return None

    def _post(self: RecorderParts, f: Any) -> None:
        try:
            if _ident() != self.program_thread:
                return
            if self.sync is not None:
                self.sync()
            end = self.clock()
            m1 = self._mark()
            opened = self.open_calls
            top = opened[-1] if opened else None
            if type(top) is tuple and top[0] == f:  # (the usual case: f's own call on top; NNabla hands each hook
                # a new Python object for the same function)
                opened.pop()
            else:
                top = self._start_of(f)
                if top is None:
                    return
            _, start, m0 = top
            if opened:
                self.window.events.append(Call(f, start, end, None, STATIC, len(opened), None, m0, m1))
                return
            frame = _getframe(1)
            site = (frame.f_code, frame.f_lasti)
            call = Call(f, start, end, site, STATIC, 0, None, m0, m1)
            self.window.events.append(call)
            if site != self._pass_site or f in self._pass_functions:  # a new pass starts
                self._close_pass()
                self._pass_site, self._pass_functions = site, {f}
                self._pass_first, self._pass_start = f, start
                self._pass_last = f
                self.solver_calls.check_subclasses()
                call.stack = self.steps.take(frame)
                self.steps.moved(call.stack, "other", end, frame, begun=(start, m0, m1))
                self.aside(end)  # nnprofile's own work inside the pass
            else:
                self._pass_functions.add(f)
                self._pass_last = f
        except BaseException as e:  # noqa: B036
            self.faults.in_hook("the function post-hook", e)

    def _phase(self: RecorderParts, site: Any) -> str:
        phase = self.site_phases.get(site)
        if phase is None:
            method, _ = call_at(site[0], site[1], FORWARD_NAMES + BACKWARD_NAMES)
            phase = self.site_phases[site] = "backward" if method in BACKWARD_NAMES else "forward"
        return phase

    def _close_pass(self: RecorderParts) -> None:
        """The pass that just ended, to the loop's structure (its graph: what it ran on)."""
        if self._pass_site is not None:
            phase = self._phase(self._pass_site)
            root = self._pass_first if phase == "backward" else self._pass_last
            graph = ("auto_forward", self._pass_site) if root in self._recent_dynamic else ("static", root)
            self.loop.pass_started(phase, graph, self._pass_site, self._pass_start)
            self._pass_site = None
            if not self.solvers and not self.loop.marks:  # a program without a solver: passes mark its steps
                self.steps.count_passes()
        self._dynamic_pass = False
        self.builds.ended()

    def _break_pass(self: RecorderParts) -> None:
        self._close_pass()

    def _find_sync(self: RecorderParts) -> None:
        """At the first update or step mark (the program has set its context by then): the device's wait, on an
        asynchronous device (CUDA), read before each reading of the clock; a call's marks are then its context
        switches (its waits for the device are no CPU time)."""
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
            if self.sync is not None:
                self.cpu.on_async_device()
                self._mark = self.cpu.mark

    def _switch_hooks(self: RecorderParts, on: bool) -> None:
        """The function hooks on or off. NNabla's global function hooks crash the process where two threads run
        functions with them set (a program whose daemon thread runs steps beside its loop: 9 runs in 10, with a hook
        that does nothing too): once another thread's functions were seen, they are taken off, from the program's
        thread between its calls, and never set again (``shared``)."""
        if self.shared:
            on = False
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
            self.window.events.append(Hooks(on, self.clock()))
            self.loop.hooks(on)

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
                self.window.excluded.append((self._gc_start, self.clock()))
                self._gc_start = 0
        except Exception as e:
            self.faults.add("timing a garbage collection", e)
        except BaseException as e:  # noqa: B036 (a Ctrl-C that landed here: Python would drop it; given back later)
            self._deferred = e

    @contextlib.contextmanager
    def hooked(self: RecorderParts, classes: bool = True) -> Iterator[RecorderParts]:
        """Only the function hooks and (``classes``) the function classes, for calibrating what they cost: no
        solvers, iterators or monitors, and no counting of steps. A static pass calls no class: timing one
        needs the hooks alone (patching the classes takes 0.5 ms a time)."""
        import nnabla as nn

        patches = Patches()
        self.ndarray_type = nn.NdArray
        nn.set_function_pre_hook(HOOK_KEY, self._pre)
        nn.set_function_post_hook(HOOK_KEY, self._post)
        if classes:
            self._patch_functions(patches)
        self.program_thread = _ident()
        self.recording = self.capturing = self.hooks_on = True
        self.note_sites = False
        self.loop.mark(0)  # marks: passes do not count steps
        try:
            yield self
        finally:
            self.recording = self.capturing = self.hooks_on = False
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
            patches.undo()
