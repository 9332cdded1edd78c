"""Where the program's own Python waits between NNabla's calls: a sleep, a blocking read, a queue's get, a lock.

The sampler counts the thread's CPU time, so a wait draws no sample, and its time (in ``other``) would be shared
out among the lines that ran on the CPU, the next one first. So while a window is open, a thread of nnprofile's
looks at the program's thread every 2.5 ms, and every 0.2 ms while it finds it blocked. Where, since its
last look, that thread was neither on its CPU (its CPU clock, read from this thread) nor waiting for one (its
run-queue delay, ``/proc/thread-self/schedstat``'s second field: other work's, which
``nnprofile.base.interference`` accounts for) for most of the time, it was blocked: the time is the line's it is
on now (the program's own line, as the sampler names it), where it still waits (its state in ``/proc``: a wait that
ended between two looks is no wait of the line it is on now, and goes unseen). Inside a call nnprofile times, or a
pass, the wait is that call's, and not counted here. A wait's end is placed to within a look (a fifth of a
millisecond, and the thread's own wake-up, some 0.1 ms here); a wait shorter than the looks' 2.5 ms may go unseen.

The thread needs the interpreter's lock to look, which the program's thread hands over at its switch interval
while it computes (a few microseconds every few milliseconds) and at once while it waits. Linux only (the thread's
CPU clock and its schedstat); elsewhere a wait is shared out as before, and the profile does not say where the
waits were.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Optional, Tuple

# Between looks: short while the program's thread is found blocked (a wait's end is placed this close), longer
# while it runs (each look costs a little CPU, which a program computing on every core, a BLAS call, would feel).
INTERVAL_S = 0.0002
# Each look while the program computes takes the interpreter's lock from it, and on a virtual machine of 2 cores that
# handover costs it more than the look: every millisecond, NNabla's Python API tutorial (0.27 ms a step alone) read
# 1.4x to 1.6x its step under nnprofile; every 2.5 ms, 1.3x; with no looks, 1.2x to 1.5x (the rest is the hooks').
RUNNING_INTERVAL_S = 0.0025
BLOCKED_SHARE = 0.5  # of a look's interval the thread was blocked, for its time to be the line's it is on
MIN_BLOCKED_NS = 20_000  # blocked less than this since the last look: running (the readings' own noise)


class WaitWatch:
    """A thread of nnprofile's that finds the program's thread blocked, and where (``start``/``stop``)."""

    def __init__(self, recorder: Any, where: Callable[[Any], Optional[int]], interval_s: float = INTERVAL_S):
        self.recorder = recorder
        self.where = where  # a frame -> the index of the program's own line it is on, or None
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._state: Any = None  # the program's thread's /proc stat file, whose state says whether it waits now

    def start(self) -> None:
        """From the program's thread, as a window opens."""
        if self._thread is not None or not sys.platform.startswith("linux"):
            return
        try:
            clock = time.pthread_getcpuclockid(threading.get_ident())
            stat = open("/proc/thread-self/schedstat", "rb", buffering=0)
        except (AttributeError, OSError):
            return
        try:
            self._state = open("/proc/thread-self/stat", "rb", buffering=0)
        except OSError:
            self._state = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(clock, stat), name="nnprofile-waits", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._thread = None
        if self._state is not None:
            self._state.close()
            self._state = None

    def _run(self, clock: int, stat: Any) -> None:
        try:
            last, interval = self._read(clock, stat), RUNNING_INTERVAL_S
            while not self._stop.wait(interval):
                now = self._read(clock, stat)
                interval = self.interval_s if self._look(last, now) else RUNNING_INTERVAL_S
                last = now
        except Exception:  # never a failure of nnprofile's into the program: the waits are then not found
            pass
        finally:
            stat.close()

    def _blocked_now(self) -> bool:
        """Whether the program's thread waits now (its state: sleeping, or in an uninterruptible wait), not running
        or runnable; True where that cannot be read (the look's interval alone then decides)."""
        if self._state is None:
            return True
        try:
            self._state.seek(0)
            text = self._state.read(512)
            state = text.rindex(b")") + 2  # (after the thread's name, which may hold anything)
            return text[state : state + 1] in (b"S", b"D")
        except (OSError, ValueError):
            return True

    @staticmethod
    def _read(clock: int, stat: Any) -> Tuple[int, int, int]:
        """(wall ns, the program's thread's CPU ns, its run-queue delay ns so far)."""
        stat.seek(0)
        delay = int(stat.read(128).split()[1])
        return time.perf_counter_ns(), time.clock_gettime_ns(clock), delay

    def _look(self, last: Tuple[int, int, int], now: Tuple[int, int, int]) -> bool:
        """Whether the program's thread was blocked since the last look (then it is looked at again soon). Blocked
        for most of it, the time is the line's it is on now, where that is the program's own between NNabla's calls:
        a wait that ended since, and the line after it, leave less than half of it blocked."""
        wall = now[0] - last[0]
        blocked = wall - (now[1] - last[1]) - (now[2] - last[2])
        if blocked < MIN_BLOCKED_NS:
            return False
        r = self.recorder
        if not r.capturing or r.open_calls or r.builds.open_at:
            # a call nnprofile times (a read that waits for its loader, a pass): its wait is the call's. Looked at
            # seldom meanwhile: each look is a thread of the process that other work can switch out, and a read's
            # marks are the process's switches
            return False
        if blocked < BLOCKED_SHARE * wall:
            return True
        if not self._blocked_now():  # a wait that ended before this look: not the line's it is on now
            return False
        frame = sys._current_frames().get(r.program_thread)
        index = self.where(frame) if frame is not None else None
        if index is not None:
            r.window.blocked.append((now[0], index, blocked))
        return True
