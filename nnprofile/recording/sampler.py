"""What the program's own Python does between NNabla's calls: its stack sampled while a window is open.

A step's ``other`` part is the program's own Python between NNabla's calls: converting data, reading ``.d``,
building graphs inside the loop, logging. It is often the first thing to fix, and the recording knows only
its total. Where the program runs in the main thread (scripts, notebooks, mpirun's ranks), the sampler is a
profiling timer (``SIGPROF`` every millisecond of the process's CPU time, as yappi's and gperftools'
samplers are; the kernel counts that time at its tick, so that it fires every 4 ms on a kernel of 250 Hz; a
wall-clock timer would fire while the process is switched out: see TIMERS): its handler runs in the
program's own thread between bytecodes, is handed the frame the thread is on, and times itself, so that what
it costs is known to the nanosecond. A program that has a SIGPROF handler or timer of its own keeps it, and is
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

import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from .stack import SKIP, HOSTS, _STDLIB
from .callsite import line_of

INTERVAL_S = 0.001
SWITCH_S = 0.0001
# The timers a sample may come from, the first free one taken: CPU time (SIGPROF) only. The wall-clock timer
# (SIGALRM) would keep its millisecond where SIGPROF waits for the kernel's tick, but it fires while the process
# is switched out, so that its handler runs just as the program is back: measured beside two spinning processes,
# a LeNet program's forward_all then read 1.33x and 1.26x its quiet figure, against 1.05x and 1.03x with SIGPROF.
TIMERS: Tuple[Tuple[Any, Any], ...] = tuple(
    (getattr(signal, s), getattr(signal, t)) for s, t in (("SIGPROF", "ITIMER_PROF"),)
    if hasattr(signal, s) and hasattr(signal, t))
_PREFIXES = SKIP + HOSTS + tuple(s + "." for s in SKIP + HOSTS)
Where = Tuple[str, int, str]  # (file, line, function)
INNER = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


class Sampler:
    """Samples the program's thread while a window is open (``start``/``stop``); keeps (time, where)."""

    def __init__(self, recorder: Any, interval_s: float = INTERVAL_S):
        self.recorder = recorder
        self.interval_s = interval_s
        self.samples: List[Tuple[int, int]] = []   # (ns, index into wheres)
        self.wheres: List[Where] = []
        self._index: Dict[Where, int] = {}
        self._own: Dict[Any, Optional[bool]] = {}   # code -> program's own (True), library (False), nnabla (None)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._switch: Optional[float] = None
        self.taken = 0                               # samples tried (the cost's count)
        self._timer = False                          # sampling by a timer's signal now
        self._which: Tuple[Any, Any] = TIMERS[-1]    # (its signal, its timer)

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
        self._thread = threading.Thread(target=self._run, name="nnprofile-sampler", daemon=True)
        self._thread.start()

    def _start_timer(self) -> bool:
        """A timer's signal in the program's own thread, where that is the main thread: the first of TIMERS that
        neither a handler nor a timer of the program's has; False where none can be had."""
        try:
            main = threading.main_thread().ident
            if threading.get_ident() != main or self.recorder._thread != main or not hasattr(signal, "setitimer"):
                return False
            free = [(n, w) for n, w in TIMERS if signal.getsignal(n) in (signal.SIG_DFL, None)
                    and not any(signal.getitimer(w))]
            if not free:
                return False
            number, which = free[0]
            signal.signal(number, self._on_timer)
            signal.siginterrupt(number, False)  # a system call the signal lands in is restarted, not failed
            self._timer, self._which = True, (number, which)
            signal.setitimer(which, self.interval_s, self.interval_s)
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
        number, which = self._which
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
        try:
            if not r._open and r.capturing and frame is not None:
                self._keep(t0, self._where(frame, r))
        except Exception:  # never a failure of the sampler's into the program
            pass
        finally:
            r.excluded.append((t0, clock()))

    def _keep(self, t0: int, where: Optional[Where]) -> None:
        if where is not None:
            index = self._index.get(where)
            if index is None:
                index = self._index[where] = len(self.wheres)
                self.wheres.append(where)
            self.samples.append((t0, index))

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
        self.samples, self.taken = [], 0

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
            if r._open or not r.capturing:
                return
            frame = sys._current_frames().get(r._thread)
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
        elif (module.startswith(_PREFIXES) or module in SKIP + HOSTS or name.startswith(_STDLIB) or "site-packages" in name
              or "dist-packages" in name or (name.startswith("<") and not _cell(name, module, code.co_name))):
            kind = False
        else:
            kind = True
        self._own[code] = kind
        return kind

    def _where(self, frame: Any, r: Any) -> Optional[Where]:
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
        if (f.f_code, f.f_lasti) in r._site_phases:
            return None  # at a pass's call site: inside NNabla's C++ pass (between its functions)
        while f.f_code.co_name in INNER and f.f_back is not None and f.f_back.f_code.co_filename == f.f_code.co_filename:
            f = f.f_back  # a comprehension or lambda: the line that holds it, in the function that runs it
        return (f.f_code.co_filename, line_of(f), f.f_code.co_name)


def _cell(name: str, module: str, function: str) -> bool:
    """Code without a file that is the program's own: a notebook's cell, stdin, ``python -c``; not code a library
    generated (``<string>`` lambdas of namedtuple and dataclasses, NNabla's ``<mean>`` wrappers)."""
    return name.startswith(("<ipython-input-", "<stdin>")) or (name == "<string>" and module == "__main__"
                                                               and function == "<module>")
