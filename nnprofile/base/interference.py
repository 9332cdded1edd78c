"""Other work on the machine, as the kernel accounts for it: what took the profiled thread's CPU while it was timed.

Two of the kernel's own counters of the thread that runs NNabla's functions (NNabla's CPU functions run on the
calling thread):

- its involuntary context switches (``getrusage(RUSAGE_THREAD).ru_nivcsw``): read before and after a timed call,
  a change says another task took the CPU from it meanwhile. Such a call is no sample of its layer's cost.
- the time it waited, runnable, for a CPU (``/proc/thread-self/schedstat``, its second field): read at the edges
  of a step or a round, it says how much of that stretch other work took.

``Probe`` reads them (0.4 us and 0.9 us a reading here); a test gives a ``FakeProbe`` that injects interruptions.
Where the kernel does not say (another system), the probe reads nothing and every sample counts as undisturbed:
the outputs then say that interference was not measured.

What is left once interrupted samples are left out favours the short ones: a longer call is likelier to be hit.
Interruptions come at a rate ``rate`` per nanosecond of timed work, so a call of ``d`` ns runs undisturbed with a
chance of ``exp(-rate * d)``; each undisturbed sample is weighted by the inverse of that chance (``weights``), so
that the estimate stands for every call, as inverse probability weighting does for a sample kept by a known rule.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

# A weight beyond this (a call so long that few of its kind run undisturbed) is capped: its estimate leans on the
# few undisturbed samples, and the entry says it had too few of them (``MIN_UNDISTURBED``).
MAX_WEIGHT = 20.0
# An entry needs this many undisturbed samples (and this share of its samples) before its figures stand on them.
MIN_UNDISTURBED = 5
MIN_UNDISTURBED_SHARE = 0.1


CPU, SWITCHES = "cpu", "switches"  # what a capture's marks are (``Capture.marks``)
# A call's CPU time short of its wall time by more than this (ns, and share of the call): the thread was off its CPU
# meanwhile (another task ran, or it waited for the interpreter's lock): no sample of what the call costs.
SHORTFALL_NS, SHORTFALL_SHARE = 10_000, 0.01


def shortfall(start: int, end: int, m0: int, m1: int, marks: str) -> bool:
    """Whether the thread was kept from running in [start, end), by the marks read at its edges."""
    if marks == CPU:
        wall = end - start
        return wall - (m1 - m0) > SHORTFALL_NS + SHORTFALL_SHARE * wall
    if marks == SWITCHES:
        return m1 != m0
    return False


_FILES: Dict[int, Optional[int]] = {}  # thread id -> its open /proc/thread-self/schedstat (one a thread, kept)


def _schedstat_fd() -> Optional[int]:
    """The calling thread's schedstat file, opened once per thread (a probe is made per recording and per timer)."""
    if not sys.platform.startswith("linux"):
        return None
    ident = threading.get_ident()
    if ident not in _FILES:
        try:
            fd: Optional[int] = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            assert fd is not None
            int(os.pread(fd, 128, 0).split()[1])
        except (OSError, ValueError, IndexError):
            fd = None
        _FILES[ident] = fd
    return _FILES[ident]


class Probe:
    """The kernel's accounting of the calling thread (Linux); ``available`` says whether it reads anything."""

    def __init__(self) -> None:
        self._getrusage = None
        self._thread = self._self = 0
        try:
            import resource

            self._getrusage = resource.getrusage
            self._thread = resource.RUSAGE_THREAD  # Linux only
            self._self = resource.RUSAGE_SELF
            self._getrusage(self._thread)
        except (ImportError, AttributeError, OSError, ValueError):
            self._getrusage = None
        self._schedstat: Optional[int] = _schedstat_fd()

    @property
    def available(self) -> bool:
        return self._getrusage is not None

    # The calling thread's CPU time (ns): a call whose CPU time falls short of its wall time was kept from running.
    cpu_ns = staticmethod(time.thread_time_ns)

    def switches(self) -> int:
        """The calling thread's involuntary context switches so far (0 where the kernel does not say)."""
        getrusage = self._getrusage
        return getrusage(self._thread).ru_nivcsw if getrusage is not None else 0

    def process_switches(self) -> int:
        """Every thread's of the process (a wait for a loader thread is held up where that thread is)."""
        getrusage = self._getrusage
        return getrusage(self._self).ru_nivcsw if getrusage is not None else 0

    def _read_waited(self) -> int:
        fd = self._schedstat
        assert fd is not None
        return int(os.pread(fd, 128, 0).split()[1])

    def waited_ns(self) -> Optional[int]:
        """The time the calling thread has waited, runnable, for a CPU so far (None where the kernel does not say).
        The file is the thread's that opened it: a probe is read from the thread it was made in."""
        if self._schedstat is None:
            return None
        try:
            return self._read_waited()
        except (OSError, ValueError, IndexError):
            return None


class NoProbe:
    """Reads nothing: interference not measured."""

    available = False

    def switches(self) -> int:
        return 0

    def process_switches(self) -> int:
        return 0

    def cpu_ns(self) -> int:
        return 0

    def waited_ns(self) -> Optional[int]:
        return None


class FakeProbe:
    """A scripted probe for tests: ``interrupt()`` makes the next reading of switches one higher, ``wait(ns)`` adds to
    the time waited."""

    available = True

    def __init__(self, now: Any = None) -> None:
        self.count = 0
        self.waited = 0
        self.now = now  # the scripted clock's time (read without moving it): the thread's CPU time keeps
        self.stolen = 0  # pace with it but for what other work took

    def interrupt(self, n: int = 1, ns: int = 0) -> None:
        """Other work takes the CPU ``n`` times, for ``ns`` in all: the thread's CPU time falls that far behind."""
        self.count += n
        self.stolen += ns
        self.waited += ns

    def cpu_ns(self) -> int:
        return (self.now() if self.now is not None else 0) - self.stolen

    def wait(self, ns: int) -> None:
        self.waited += ns

    def switches(self) -> int:
        return self.count

    def process_switches(self) -> int:
        return self.count

    def waited_ns(self) -> Optional[int]:
        return self.waited


def rate(switches: int, timed_ns: float) -> float:
    """Interruptions per ns of timed work."""
    return switches / timed_ns if timed_ns > 0 else 0.0


def weights(values: Sequence[float], per_ns: float) -> List[float]:
    """Each undisturbed sample's weight: the inverse of its chance to have run undisturbed (capped)."""
    return [min(MAX_WEIGHT, math.exp(per_ns * max(0.0, v))) for v in values]


def enough(undisturbed: int, samples: int) -> bool:
    """Whether an entry's undisturbed samples are enough for its figures to stand on them."""
    return undisturbed >= min(samples, MIN_UNDISTURBED) and undisturbed >= MIN_UNDISTURBED_SHARE * samples
