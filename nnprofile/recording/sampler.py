"""What the program's own Python does between NNabla's calls: its stack sampled while a window is open.

A step's ``other`` part is the program's own Python between NNabla's calls: converting data, reading ``.d``,
building graphs inside the loop, logging. It is often the first thing to fix, and the recording knows only
its total. Where the program runs in the main thread (scripts, notebooks, mpirun's ranks), the sampler is a
signal every quarter millisecond of the thread's CPU time, from its CPU clock (``nnprofile.recording.cpuclock``:
the kernel's task clock, on a high-resolution timer); where the kernel refuses that, the profiling timer
(``SIGPROF`` every millisecond of the process's CPU time, as yappi's and gperftools' samplers are, which the
kernel counts at its tick, so that it fires every 4 ms on a kernel of 250 Hz). Either counts CPU time only; a
wall-clock timer would fire while the process is switched out (see TIMERS). The signal's handler runs in the
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

import atexit
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from .stack import SKIP, HOSTS, _STDLIB
from .callsite import line_of
from .cpuclock import CpuClock, open_cpu_clock
from .raw import OPENED
from .parts import SampledProgram

INTERVAL_S = 0.001
# The CPU clock's period (``nnprofile.recording.cpuclock``): a quarter of a millisecond of the thread's CPU time, so
# that a window of 20 steps whose own Python takes 0.2 ms a step holds some 16 samples of it (the profiling timer,
# at the kernel's 4 ms tick, held one to four). A sample costs some 10 us, left out of every figure as the rest of
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
# The timers a sample may come from, the first free one taken: CPU time (SIGPROF) only. The wall-clock timer
# (SIGALRM) would keep its millisecond where SIGPROF waits for the kernel's tick, but it fires while the process
# is switched out, so that its handler runs just as the program is back: measured beside two spinning processes,
# a LeNet program's forward_all then read 1.33x and 1.26x its quiet figure, against 1.05x and 1.03x with SIGPROF.
TIMERS: Tuple[Tuple[Any, Any], ...] = tuple(
    (getattr(signal, s), getattr(signal, t))
    for s, t in (("SIGPROF", "ITIMER_PROF"),)
    if hasattr(signal, s) and hasattr(signal, t)
)
_PREFIXES = SKIP + HOSTS + tuple(s + "." for s in SKIP + HOSTS)
Where = Tuple[str, int, str]  # (file, line, function)
INNER = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


class Sampler:
    """Samples the program's thread while a window is open (``start``/``stop``); keeps (time, where)."""

    def __init__(self, recorder: SampledProgram, interval_s: float = INTERVAL_S):
        self.recorder = recorder
        self.interval_s = interval_s
        self.samples: List[Tuple[int, int]] = []  # (ns, index into wheres)
        self.wheres: List[Where] = []
        self._index: Dict[Where, int] = {}
        self._own: Dict[Any, Optional[bool]] = {}  # code -> program's own (True), library (False), nnabla (None)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._switch: Optional[float] = None
        self.taken = 0  # samples tried (the cost's count)
        self.handled: List[Tuple[int, int]] = []  # when the timer's handler ran (ns): no pass it held up fits costs
        self._timer = False  # sampling by a timer's signal now
        self._which: Tuple[Any, Any] = TIMERS[-1]  # (its signal, its timer)
        self._cpu: Optional[CpuClock] = None  # the CPU clock the timer's signal comes from, where it opened
        self._period = CPU_PERIOD_NS  # its period now (ns of the thread's CPU time)
        self._waiting = False  # disarmed by a sample inside a pass, until ``resume``
        self.clock: Tuple[str, float] = ("", 0.0)  # what the samples came from ("cpu", "timer", "thread"), ms apart

    def start(self) -> None:
        if self._thread is not None or self._timer:
            return
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
        """A timer's signal in the program's own thread, where that is the main thread: the first of TIMERS that
        neither a handler nor a timer of the program's has; False where none can be had."""
        try:
            main = threading.main_thread().ident
            if (
                threading.get_ident() != main
                or self.recorder.program_thread != main
                or not hasattr(signal, "setitimer")
            ):
                return False
            free = [
                (n, w)
                for n, w in TIMERS
                if signal.getsignal(n) in (signal.SIG_DFL, None) and not any(signal.getitimer(w))
            ]
            if not free:
                return False
            number, which = free[0]
            signal.signal(number, self._on_timer)
            signal.siginterrupt(number, False)  # a system call the signal lands in is restarted, not failed
            self._timer, self._which = True, (number, which)
            # Python puts the signal's default back as it finalises (terminate, for SIGPROF): a timer a cut-short
            # ending left armed is stopped first, so that it never ends the program
            atexit.register(self._stop_timer)
            self._period = CPU_PERIOD_NS
            self._cpu = open_cpu_clock(CPU_PERIOD_NS, number) if self.interval_s == INTERVAL_S else None
            if self._cpu is not None:
                self._cpu.rearm()
                self.clock = ("cpu", CPU_PERIOD_NS / 1e6)
            else:
                signal.setitimer(which, self.interval_s, self.interval_s)
                self.clock = ("timer", self.interval_s * 1e3)
            return True
        except Exception:
            self._stop_timer()
            return False

    def _stop_timer(self) -> None:
        """The timer off and its signal's default back, where the handler is still ours (the program may have set its
        own since)."""
        if not self._timer:
            return
        self._timer = False
        atexit.unregister(self._stop_timer)
        number, which = self._which
        cpu, self._cpu = self._cpu, None
        if cpu is not None:
            try:
                cpu.close()  # no signal comes after this
            except Exception:
                pass
        try:
            if signal.getsignal(number) == self._on_timer:
                signal.setitimer(which, 0, 0)
                signal.signal(number, signal.SIG_DFL)
        except Exception:  # not from the main thread: the timer off at least; the handler does nothing now
            try:
                signal.setitimer(which, 0, 0)
            except Exception:
                pass

    def _on_timer(self, signum: int, frame: Any) -> None:
        """The timer's handler, in the program's thread: the sample, and its own time left out of every figure."""
        if not self._timer:
            return
        r = self.recorder
        clock = time.perf_counter_ns
        t0 = clock()
        self.taken += 1
        kept: Optional[bool] = None  # None: dropped inside a pass; False: inside a wrapped call of the program's
        try:
            if r.open_calls:
                kept = None if r.open_calls[-1] is not OPENED else False
            elif r.capturing and frame is not None:
                kept = self._keep(t0, self._where(frame, r)) or None
        except Exception:  # never a failure of the sampler's into the program
            pass
        finally:
            if self._cpu is not None:
                self._next(kept)
            t1 = clock()
            r.excluded.append((t0, t1))
            self.handled.append((t0, t1))

    def _next(self, kept: Optional[bool]) -> None:
        """The CPU clock armed for the next sample: at half the period after a sample of the program's own Python
        (down to CPU_PERIOD_NS), at twice the period after one dropped inside a wrapped call (up to
        MAX_CPU_PERIOD_NS), as it was after one dropped inside a pass."""
        if kept is None:  # inside a pass: disarmed until the program's next pass or wrapped call (``resume``)
            self._waiting = True
            return
        period = max(CPU_PERIOD_NS, self._period // 2) if kept else min(MAX_CPU_PERIOD_NS, 2 * self._period)
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
        index = self._index.get(where)
        if index is None:
            index = self._index[where] = len(self.wheres)
            self.wheres.append(where)
        self.samples.append((t0, index))
        return True

    def stop(self) -> None:
        self._stop_timer()
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

    def clear(self) -> None:
        self.samples, self.taken, self.handled = [], 0, []

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
        self.taken += 1
        try:
            if r.open_calls or not r.capturing:
                return
            frame = sys._current_frames().get(r.program_thread)
            self._keep(t0, self._where(frame, r) if frame is not None else None)
        finally:
            r.excluded.append((t0, clock()))  # the program's thread waited: no part of any step

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
        if (f.f_code, f.f_lasti) in r.site_phases:
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
