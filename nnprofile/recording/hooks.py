"""The function hooks (an owned part of ``Recorder``, ``FunctionHooks``, reaching it through ``parts.HooksHost``):
NNabla's pre- and post-hooks, which see every function of a static graph, forward and backward, and every backward
under ``auto_forward``; the passes they see begin (``passes.PassTracker``); the hooks switched on and off; Python's
full collections in a window (nnprofile's own left out, the program's handed to the sampler).

The hooks are called by NNabla from C++: nothing may be raised from them (a failure of nnprofile's own is
noted, a Ctrl-C given back to the program). A call's frame (the program's, that called ``forward`` or
``backward``) tells the pass and the graph it ran on (``nnprofile.recording.callsite``).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Optional, Tuple

from ..assembly.events import STATIC, Call, Hooks
from .faults import give_back
from .parts import HooksHost

HOOK_KEY = "nnprofile"
_getframe = sys._getframe
_ident = threading.get_ident


class FunctionHooks:
    """NNabla's function hooks (``pre``, ``post``), set and unset (``switch``), and the collections nnprofile's own
    work sets off (``collected``)."""

    def __init__(self, host: HooksHost) -> None:
        self.host = host
        self._gc_start = 0  # a collection nnprofile's own allocation began, under way

    def pre(self, f: Any) -> None:
        try:  # (first: Python runs no signal's handler before a try is entered, as it would at a call's start)
            host = self.host
            if _ident() == host.program_thread:
                if host.sync is not None:
                    host.sync()  # what ran before this function is not its time
                host.open_calls.append((f, host.clock(), host._mark()))
            else:
                host.elsewhere += 1  # a function another thread ran: not recorded, but counted and said
                host.shared = True
        except Exception as e:
            self.host.faults.add("the function pre-hook", e)
        except BaseException as e:  # noqa: B036 (a Ctrl-C that landed here: given back as NNabla's call returns)
            give_back(e, _getframe(1))

    def _start_of(self, f: Any) -> Optional[Tuple[Any, int, int]]:
        """``f``'s open call (f, its start, the switches then), taken off the open calls (with any call above it that
        never ended)."""
        opened = self.host.open_calls
        for i in range(len(opened) - 1, -1, -1):
            top = opened[i]
            if type(top) is tuple and top[0] == f:
                del opened[i:]
                return top
            if top is not None and type(top) is not tuple:  # a wrapper's call, open around f: f began before it
                return None
        return None

    def post(self, f: Any) -> None:
        try:
            host = self.host
            if _ident() != host.program_thread:
                return
            if host.sync is not None:
                host.sync()
            end = host.clock()
            m1 = host._mark()
            opened = host.open_calls
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
                host.window.events.append(Call(f, start, end, None, STATIC, len(opened), None, m0, m1))
                return
            frame = _getframe(1)
            site = (frame.f_code, frame.f_lasti)
            call = Call(f, start, end, site, STATIC, 0, None, m0, m1)
            host.window.events.append(call)
            if host.passes.static_function(f, site, start):  # a new pass starts
                host.solver_calls.check_subclasses()
                call.stack = host.steps.take(frame)
                host.steps.moved(call.stack, "other", end, frame, begun=(start, m0, m1))
                host.aside(end)  # nnprofile's own work inside the pass
        except Exception as e:
            self.host.faults.add("the function post-hook", e)
        except BaseException as e:  # noqa: B036 (as in ``pre``)
            give_back(e, _getframe(1))

    def switch(self, on: bool) -> None:
        """The function hooks on or off. NNabla's global function hooks crash the process where two threads run
        functions with them set (a program whose daemon thread runs steps beside its loop: 9 runs in 10, with a hook
        that does nothing too): once another thread's functions were seen, they are taken off, from the program's
        thread between its calls, and never set again (``shared``)."""
        host = self.host
        if host.shared:
            on = False
        if on == host.hooks_on:
            return
        import nnabla as nn

        if on:
            nn.set_function_pre_hook(HOOK_KEY, self.pre)
            nn.set_function_post_hook(HOOK_KEY, self.post)
        else:
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
        host.hooks_on = on
        if host.capturing:
            host.window.events.append(Hooks(on, host.clock()))
            host.loop.hooks(on)

    def collected(self, phase: str, info: Any) -> None:
        """Python's full garbage collections in a window, in the program's thread (the one callback nnprofile adds):
        where nnprofile's own code allocated (an event, a stack), or NNabla inside a pass (the object it hands each
        hook: the program's own pass allocates none), its pause is nnprofile's work, left out of every call, pass and
        step like the rest of it (a collection of the window's many events once read 30 ms inside a 0.1 ms
        function); where the program's own line allocated, the sampler counts it (``Sampler.collected``).

        A Ctrl-C (or a SIGTERM) whose handler runs in here would be printed and dropped by Python: it is given back
        to the frame that set the collection off, raised as its next line begins, after the collection
        (``faults.give_back``). The body begins with ``try``: Python runs no handler before a ``try`` is entered, as
        it would before a function's first instruction."""
        try:
            host = self.host
            if _ident() == host.program_thread and host.capturing and info.get("generation", 2) == 2:
                frame = _getframe(1) if phase == "start" else None  # (young generations' take microseconds)
                self._exclude(phase, frame)
                if host.sampler is not None:
                    host.sampler.collected(phase, frame)
        except Exception as e:
            self.host.faults.add("timing a garbage collection", e)
        except BaseException as e:  # noqa: B036 (as in ``pre``: the frame that allocated runs on after the collection)
            give_back(e, _getframe(1))

    def _exclude(self, phase: str, frame: Any) -> None:
        host = self.host
        if phase == "start":
            ours = frame is not None and (
                frame.f_globals.get("__name__", "").startswith("nnprofile.")
                or (frame.f_code, frame.f_lasti) in host.passes.site_phases
            )
            self._gc_start = host.clock() if ours else 0
        elif self._gc_start:
            host.window.excluded.append((self._gc_start, host.clock()))
            self._gc_start = 0
