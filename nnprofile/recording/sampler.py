"""What the program's own Python does between NNabla's calls: its stack sampled while a window is open.

A step's ``other`` part is the program's own Python between NNabla's calls: converting data, reading ``.d``,
building graphs inside the loop, logging. It is often the first thing to fix, and the recording knows only
its total. Where the program runs in the main thread (scripts, notebooks, mpirun's ranks), the sampler is a
signal every quarter millisecond of the thread's CPU time, from its CPU clock (``nnprofile.recording.cpuclock``:
the kernel's task clock, on a high-resolution timer, on a real-time signal no program uses); where the kernel
refuses that, the profiling timer (``SIGPROF`` every millisecond of the process's CPU time, as yappi's and
gperftools' samplers are, which the kernel counts at its tick, so that it fires every 4 ms on a kernel of 250 Hz):
``nnprofile.recording.sigclock``. Either counts CPU time only; a wall-clock timer (SIGALRM) would fire while the
process is switched out: measured beside two spinning processes, a LeNet program's forward_all then read 1.33x and
1.26x its quiet figure, against 1.05x and 1.03x with SIGPROF. A program that takes the clock's signal mid-window
(its own handler, its own profiling timer) gets it, sampling stopped first and said. The signal's handler runs in the
program's own thread between bytecodes, is handed the frame the thread is on, and times itself, so that what
it costs is known to the nanosecond; a pass it ran in fits no hook costs (``Capture.handled``). A sample inside a
pass disarms the CPU clock until the program's next pass or wrapped call (``resume``), so that a pass draws one
handler at most. A program that has a SIGPROF handler or timer of its own keeps it, and is
sampled as a program in another thread is: a thread of nnprofile's wakes every
millisecond and, holding the interpreter's lock (the program's thread waits
meanwhile), reads the program's thread's stack, as pyinstrument and py-spy do.

- Inside a call nnprofile times (a function, a solver, a read: the recorder's open calls), or inside
  NNabla's C++ pass (the program's innermost frame at a pass's call site), the sample is no ``other``, and
  is dropped;
- else it counts for the program's own line: the innermost frame of the program's own code (a library's
  frames, NumPy's or Python's own, are charged to the program's line that called them).

The sampler's own time is nnprofile's work and left out of every figure, a step's and a call's alike
(``excluded``). The thread needs the interpreter's lock, which the program's thread hands over at its
switch interval (5 ms by default): it is lowered to 0.1 ms while a window is open and restored after, so
that a sample lands where the program is, not only where it lets the lock go (a line that copies into NNabla
would draw them all); the thread's handovers cost the program more than the timer's handler, which is why
the timer comes first. Outside windows
nothing runs. Sampling cannot see into a C++ call that holds the lock throughout: such time is
attributed at the call's end, or not at all, and the share of each line is of the samples taken.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ..base.places import COLLECTION
from .stack import SKIP, HOSTS, _STDLIB
from .callsite import line_of
from .cpuclock import CpuClock
from . import signalcost
from .sigclock import SignalClock
from .raw import OPENED
from .parts import SampledProgram
from .waitwatch import WaitWatch

INTERVAL_S = 0.001
# The CPU clock's shortest period (``nnprofile.recording.cpuclock``): a quarter of a millisecond of the thread's CPU
# time, so that a window of 20 steps whose own Python takes 0.2 ms a step holds some 16 samples of it (the profiling
# timer, at the kernel's 4 ms tick, held one to four), where a signal costs little (``signalcost``: longer where the
# signal's delivery costs the program more). A sample costs some 10 us, left out of every figure as the rest of
# nnprofile's own work is; what it leaves in the caches is not (docs/reading-programs.md says how much).
CPU_PERIOD_NS = 250_000
# A sample that lands inside a call of the program's that nnprofile wraps (a solver's update, a collective, a batch
# read: C++ that runs on without a hook) is dropped, and its handler runs as the call returns, between the
# program's own clock and the wrapper's: each such sample doubles the clock's period, up to the kernel's tick
# (4 ms here), so that long calls draw handlers about as rarely as the profiling timer's did, and each sample of
# the program's own Python halves it again. A sample inside a pass (the hooks' own Python takes the signal at once,
# its time left out of the function's) leaves the period, and the clock waits for the program's next pass or
# wrapped call (``resume``).
MAX_CPU_PERIOD_NS = 4_000_000
SWITCH_S = 0.0001
_PREFIXES = SKIP + HOSTS + tuple(s + "." for s in SKIP + HOSTS)
Where = Tuple[str, int, str]  # (file, line, function)
INNER = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")
# A full garbage collection in the program's own code, as a line of its own (``Sampler.collected``); a sample due
# while it ran lands this soon after it (the clock's signal waits the collection out), and is the collection's.
GC_WHERE: Where = (COLLECTION, 0, "Python")
GC_SLACK_NS = 100_000


class GaveWay(RuntimeError):
    """The program took the sampler's signal (its own handler, its own profiling timer)."""


class Sampler:
    """Samples the program's thread while a window is open (``start``/``stop``); keeps (time, where)."""

    def __init__(self, recorder: SampledProgram, interval_s: float = INTERVAL_S):
        self.recorder = recorder
        self.interval_s = interval_s
        self.wheres: List[Where] = []
        self._index: Dict[Where, int] = {}
        self._own: Dict[Any, Optional[bool]] = {}  # code -> program's own (True), library (False), nnabla (None)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._switch: Optional[float] = None
        self._timer = False  # sampling by a timer's signal now
        self._clock = SignalClock(self._gave_way)  # its signal and where it comes from
        self._period = CPU_PERIOD_NS  # its period now (ns of the thread's CPU time)
        self._floor = CPU_PERIOD_NS  # its shortest: what a signal costs the program (``signalcost``)
        self._waiting = False  # disarmed by a sample inside a pass, until ``resume``
        self.clock: Tuple[str, float] = ("", 0.0)  # what the samples came from ("cpu", "timer", "thread"), ms apart
        self._gc_start = 0  # a full collection of the program's own under way (ns), 0 where none is
        self._gc_cpu = 0  # the thread's CPU time as it began (ns)
        self._gc_end = 0  # when the last one ended
        self.waits = WaitWatch(recorder, self._wait_at)  # the program's own waits, where its line blocks

    def _wait_at(self, frame: Any) -> Optional[int]:
        """The index of the program's own line a blocked frame is on (None: nnprofile's, or inside a pass)."""
        where = self._where(frame, self.recorder)
        return self._index_of(where) if where is not None else None

    def start(self) -> None:
        if self._thread is not None or self._timer:
            return
        self.waits.start()
        if self._start_timer():
            return
        self._stop.clear()
        try:
            self._switch = sys.getswitchinterval()
            sys.setswitchinterval(min(self._switch, SWITCH_S))
        except Exception:
            self._switch = None
        self.clock = ("thread", self.interval_s * 1e3)
        self._thread = threading.Thread(target=self._run, name="nnprofile-sampler", daemon=True)
        self._thread.start()

    def _start_timer(self) -> bool:
        """A signal in the program's own thread, where that is the main thread (``sigclock.SignalClock``); False where
        none can be had (the program's own SIGPROF, and no CPU clock)."""
        try:
            main = threading.main_thread().ident
            if threading.get_ident() != main or self.recorder.program_thread != main:
                return False
            period = int(self.interval_s * 1e9)  # (a test's own interval stands as asked)
            if self.interval_s == INTERVAL_S:
                period = self._floor = signalcost.floor_ns(self._clock, CPU_PERIOD_NS, MAX_CPU_PERIOD_NS)
            how = self._clock.start(self._on_timer, period, self.interval_s)
            if how is None:
                return False
            self._timer, self._period = True, period
            self.clock = ("cpu", period / 1e6) if how == "cpu" else ("timer", self.interval_s * 1e3)
            return True
        except Exception:
            self._stop_timer()
            return False

    @property
    def _cpu(self) -> Optional[CpuClock]:
        return self._clock.cpu

    def _stop_timer(self, pause: bool = False) -> None:
        """The clock stopped and its signal the program's again (``pause``: the program's setting it still watched)."""
        self._timer = False
        self._clock.stop(watching=pause)

    def _gave_way(self, why: str) -> None:
        """The program took the clock's signal: sampling stops for the rest of the window, and the profile says why."""
        self._timer = False
        try:
            self.recorder.faults.add("sampling the program's own lines", GaveWay(why))
        except Exception:
            pass

    def _on_timer(self, signum: int, frame: Any) -> None:
        """The timer's handler, in the program's thread: the sample, and its own time left out of every figure."""
        if not self._timer:
            return
        r = self.recorder
        clock = time.perf_counter_ns
        t0 = clock()
        window = r.window  # (the samples, their count and the handler's times are the window's)
        window.taken += 1
        kept: Optional[bool] = None  # None: dropped inside a pass; False: inside a wrapped call of the program's
        try:
            if r.open_calls:
                kept = None if r.open_calls[-1] is not OPENED else False
            elif r.builds.open_at:
                kept = None  # NNabla making a function of a dynamic graph: its pass's time
            elif t0 - self._gc_end < GC_SLACK_NS:
                kept = True  # due while the program's collection ran: sampled with it (``collected``)
            elif r.capturing and frame is not None:
                kept = self._keep(t0, self._where(frame, r)) or None
        except Exception:  # never a failure of the sampler's into the program
            pass
        finally:
            if self._cpu is not None:
                self._next(kept)
            t1 = clock()
            window.excluded.append((t0, t1))
            window.handled.append((t0, t1))

    def _next(self, kept: Optional[bool]) -> None:
        """The CPU clock armed for the next sample: at half the period after a sample of the program's own Python
        (down to its floor, ``signalcost``), at twice the period after one dropped inside a wrapped call (up to
        MAX_CPU_PERIOD_NS), as it was after one dropped inside a pass."""
        if kept is None:  # inside a pass: disarmed until the program's next pass or wrapped call (``resume``)
            self._waiting = True
            return
        period = max(self._floor, self._period // 2) if kept else min(MAX_CPU_PERIOD_NS, 2 * self._period)
        try:
            if period != self._period and self._cpu is not None:
                self._cpu.set_period(period)
                self._period = period
            if self._cpu is not None:
                self._cpu.rearm()
        except Exception:
            pass

    def resume(self) -> None:
        """The CPU clock armed again where a sample inside a pass disarmed it: as a pass starts, and as a call of the
        program's that nnprofile wraps ends, so that a pass draws one handler at most and the program's own Python
        after it is sampled at the period."""
        if self._waiting and self._cpu is not None:
            self._waiting = False
            try:
                self._cpu.rearm()
            except Exception:
                pass

    def _keep(self, t0: int, where: Optional[Where]) -> bool:
        if where is None:
            return False
        self.recorder.window.samples.append((t0, self._index_of(where)))
        return True

    def _index_of(self, where: Where) -> int:
        index = self._index.get(where)
        if index is None:
            index = self._index[where] = len(self.wheres)
            self.wheres.append(where)
        return index

    def collected(self, phase: str, frame: Any) -> None:
        """A full garbage collection in a window, in the program's thread, begun (``frame``: where it allocated) or
        ended (``hooks.FunctionHooks.collected`` calls this). One the program's own code set off is its own time
        between NNabla's calls, and a line of its own (``GC_WHERE``): sampled at the clock's period over its pause,
        since the clock's signal waits the pause out and would land on the program's next line. One set off inside a
        call nnprofile times, inside a pass or in nnprofile's own code is left as it is."""
        r = self.recorder
        try:
            if not self._timer and self._thread is None:
                return  # (not sampling)
            clock, cpu = time.perf_counter_ns, time.thread_time_ns
            if phase == "start":
                mine = not r.open_calls and not r.builds.open_at and frame is not None
                mine = mine and self._where(frame, r) is not None
                self._gc_start, self._gc_cpu = (clock(), cpu()) if mine else (0, 0)
                return
            start, end = self._gc_start, clock()
            if not start:
                return
            # As many samples as the clock would have taken: its period now (the CPU clock's, of the thread's CPU
            # time), or as it was asked for (the profiling timer's, of CPU time; the thread's, of wall time).
            period = self._period if self.clock[0] == "cpu" else self.clock[1] * 1e6
            n = round(((cpu() - self._gc_cpu) if self._timer else (end - start)) / max(period, 1.0))
            index, samples = self._index_of(GC_WHERE), r.window.samples
            late = bool(samples) and samples[-1][0] > start  # (a sample of a finalizer's Python during the pause)
            samples.extend((start + (2 * k + 1) * (end - start) // (2 * n), index) for k in range(n))
            if late:
                samples.sort()
            self._gc_start, done = 0, clock()
            if n:
                self._gc_end = done
            r.window.excluded.append((end, done))
        except Exception:  # never a failure of the sampler's into the program
            self._gc_start = 0

    def stop(self, pause: bool = False) -> None:
        """No samples from now (``pause``: till ``start`` again in the same window)."""
        self.waits.stop()
        self._stop_timer(pause)
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._thread = None
        if self._switch is not None:
            try:
                sys.setswitchinterval(self._switch)
            except Exception:
                pass
            self._switch = None

    def _run(self) -> None:
        wait, sample = self._stop.wait, self._sample
        while not wait(self.interval_s):
            try:
                sample()
            except Exception:  # never a failure of the sampler's into anything: it just stops sampling
                return

    def _sample(self) -> None:
        r = self.recorder
        clock = time.perf_counter_ns
        t0 = clock()
        window = r.window
        window.taken += 1
        try:
            if r.open_calls or not r.capturing or r.builds.open_at or t0 - self._gc_end < self.interval_s * 1e9:
                return  # (the last: what it found is the collection's, sampled with it)
            frame = sys._current_frames().get(r.program_thread)
            self._keep(t0, self._where(frame, r) if frame is not None else None)
        finally:
            window.excluded.append((t0, clock()))  # the program's thread waited: no part of any step

    def _kind(self, frame: Any) -> Optional[bool]:
        """True: the program's own code; False: code that runs for it (NNabla's, a library's, Python's own,
        code NNabla generated); None: nnprofile's own (a sample taken in it is dropped)."""
        code = frame.f_code
        known = self._own.get(code, 0)
        if known != 0:
            return known  # type: ignore[return-value]
        module = frame.f_globals.get("__name__", "") or ""
        name = code.co_filename
        if module == "nnprofile" or module.startswith("nnprofile."):
            kind: Optional[bool] = None
        elif (
            module.startswith(_PREFIXES)
            or module in SKIP + HOSTS
            or name.startswith(_STDLIB)
            or "site-packages" in name
            or "dist-packages" in name
            or (name.startswith("<") and not _cell(name, module, code.co_name))
        ):
            kind = False
        else:
            kind = True
        self._own[code] = kind
        return kind

    def _where(self, frame: Any, r: SampledProgram) -> Optional[Where]:
        """The program's own line the thread is on (the line that called NNabla or a library, where the thread is
        in their code), or None where it is in nnprofile's own code or inside NNabla's C++ pass."""
        f = frame
        while f is not None:
            kind = self._kind(f)
            if kind is None:
                return None
            if kind:
                break
            f = f.f_back
        if f is None:
            return None
        if (f.f_code, f.f_lasti) in r.passes.site_phases:
            return None  # at a pass's call site: inside NNabla's C++ pass (between its functions)
        while (
            f.f_code.co_name in INNER and f.f_back is not None and f.f_back.f_code.co_filename == f.f_code.co_filename
        ):
            f = f.f_back  # a comprehension or lambda: the line that holds it, in the function that runs it
        return (f.f_code.co_filename, line_of(f), f.f_code.co_name)


def _cell(name: str, module: str, function: str) -> bool:
    """Code without a file that is the program's own: a notebook's cell, stdin, ``python -c``; not code a library
    generated (``<string>`` lambdas of namedtuple and dataclasses, NNabla's ``<mean>`` wrappers)."""
    return name.startswith(("<ipython-input-", "<stdin>")) or (
        name == "<string>" and module == "__main__" and function == "<module>"
    )
