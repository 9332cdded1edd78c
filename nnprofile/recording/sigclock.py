"""The sampler's clock: a signal in the program's thread every so much of its CPU time, on a signal the program
does not use, given up at once where the program takes that signal.

The thread's CPU clock (``nnprofile.recording.cpuclock``) signals it with a real-time signal nnprofile picks among
those whose handler is the default (``SIGRTMAX - 2`` down): no program's handler ever sees it, and a program that
sets SIGPROF's disposition back to its default is not killed by a timer of nnprofile's. Where the kernel refuses the
CPU clock, the profiling timer (``ITIMER_PROF``, SIGPROF) stands in, where neither a handler nor a timer of the
program's has it. While either runs, the program's ``signal.signal`` and ``signal.setitimer`` are watched: a program
that sets a handler of its own for the clock's signal, or arms the profiling timer, gets it, the clock stopped
first and said (``gave_way``). A child the program forks gets the program's handler back
(``nnprofile.base.signals``) and no clock of nnprofile's.
"""

from __future__ import annotations

import atexit
import os
import signal
import weakref
from typing import Any, Callable, Dict, Optional, Tuple

from ..base import signals as owned
from .cpuclock import CpuClock, open_cpu_clock
from .patching import Patches

_setitimer, _getitimer = signal.setitimer, signal.getitimer  # (bound at import: a program may replace them)
_running: "weakref.WeakSet[SignalClock]" = weakref.WeakSet()  # the clocks running now (in a forked child: none)


def _free(number: int) -> bool:
    return owned._getsignal(number) in (signal.SIG_DFL, None)


def realtime_signal() -> Optional[int]:
    """A real-time signal no handler holds (the highest first: libraries take the lowest), None where there is none."""
    low, high = getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", 0)
    for number in range(high - 2, low + 3, -1):
        if _free(number):
            return int(number)
    return None


class SignalClock:
    """The clock's signal, its handler and its source (the CPU clock, or the profiling timer); ``gave_way``: why it
    stopped before it was stopped (the program took its signal), None while it has not."""

    def __init__(self, on_gave_way: Callable[[str], None]) -> None:
        self.on_gave_way = on_gave_way
        self.number = 0  # its signal (0: not running)
        self.cpu: Optional[CpuClock] = None
        self._timer = False  # the profiling timer armed (no CPU clock)
        self._handler: Any = None
        self._previous: Any = None
        self._watching: Optional[Patches] = None
        self.gave_way: Optional[str] = None

    @property
    def running(self) -> bool:
        return bool(self.number)

    def start(self, handler: Callable[[int, Any], None], period_ns: int, interval_s: float) -> Optional[str]:
        """Signals to ``handler`` from now: "cpu" (every ``period_ns`` of the thread's CPU time) or "timer" (every
        ``interval_s`` of the process's, at the kernel's tick); None where neither can be had. From the main thread."""
        number = realtime_signal()
        if number is not None:
            self._take(number, handler)
            self.cpu = open_cpu_clock(period_ns, number)
            if self.cpu is not None:
                self._watch()
                self.cpu.rearm()
                return "cpu"
            self._release()
        if not _free(signal.SIGPROF) or any(_getitimer(signal.ITIMER_PROF)):
            return None
        self._take(signal.SIGPROF, handler)
        _setitimer(signal.ITIMER_PROF, interval_s, interval_s)
        self._timer = True
        self._watch()
        return "timer"

    def _take(self, number: int, handler: Any) -> None:
        self._previous = owned.take(number, handler)
        signal.siginterrupt(number, False)  # a system call the signal lands in is restarted, not failed
        self.number, self._handler = number, handler
        _running.add(self)
        # Python puts the signal's default back as it finalises: a clock a cut-short ending left running is stopped
        # first, so that it never ends the program
        atexit.register(self.stop)

    def stop(self, watching: bool = False) -> None:
        """No signal after this; the signal's handler the program's again (where it is still nnprofile's). ``watching``:
        the program's ``signal.signal`` stays watched, for the clock's next start (the watch walks every loaded module:
        20 ms a start and a stop on fastText, whose hooks go on and off a few times a window)."""
        if self._watching is not None and not watching:
            self._watching.undo()
            self._watching = None
        if not self.number:
            return
        cpu, self.cpu = self.cpu, None
        if cpu is not None:
            try:
                cpu.close()
            except Exception:
                pass
        if self._timer:
            self._timer = False
            try:
                _setitimer(signal.ITIMER_PROF, 0, 0)
            except Exception:
                pass
        self._release()

    def _release(self) -> None:
        number, self.number = self.number, 0
        _running.discard(self)
        atexit.unregister(self.stop)
        try:
            if owned._getsignal(number) is self._handler:
                owned.give_back(number, self._previous)
        except (OSError, ValueError, TypeError):
            pass

    def _watch(self) -> None:
        """The program's ``signal.signal`` and ``signal.setitimer`` watched while the clock runs, wherever bound."""
        if self._watching is not None:  # (still, from the clock's last run)
            return
        watching = Patches()
        replacements: Dict[int, Tuple[Any, Any]] = {
            id(signal.signal): (signal.signal, self._sets(signal.signal)),
            id(signal.setitimer): (signal.setitimer, self._arms(signal.setitimer)),
        }
        try:
            watching.everywhere(replacements)
        except Exception:
            watching.undo()
            return
        self._watching = watching

    def _sets(self, original: Callable) -> Callable:
        clock = self

        def signal_(signalnum: Any, handler: Any) -> Any:
            try:
                if clock.number and int(signalnum) == clock.number:
                    clock.give_way("the program set its own handler of %s" % signal.Signals(clock.number).name)
            except Exception:
                pass
            return original(signalnum, handler)

        signal_.__doc__, signal_.__name__ = original.__doc__, original.__name__
        return signal_

    def _arms(self, original: Callable) -> Callable:
        clock = self

        def setitimer(which: Any, *args: Any) -> Any:
            try:
                if clock._timer and int(which) == signal.ITIMER_PROF:
                    clock.give_way("the program armed its own profiling timer (ITIMER_PROF)")
            except Exception:
                pass
            return original(which, *args)

        setitimer.__doc__, setitimer.__name__ = original.__doc__, original.__name__
        return setitimer

    def give_way(self, why: str) -> None:
        """The program takes the clock's signal: the clock stops first, and says why."""
        self.stop()
        self.gave_way = why
        self.on_gave_way(why)

    def _in_child(self) -> None:
        """In a child the program forked: no clock of nnprofile's (its CPU clock's descriptor closed, not disabled:
        the parent's clock is the same event)."""
        cpu, self.cpu = self.cpu, None
        if cpu is not None:
            try:
                os.close(cpu.fd)
            except OSError:
                pass
        self.number, self._timer, self._watching = 0, False, None


def _in_child() -> None:
    for clock in list(_running):
        clock._in_child()
    _running.clear()


owned.in_child(_in_child)
