"""The sampler of the program's own lines: a profiling timer in the program's thread, its own time left out of
every figure, and the program's own SIGPROF left alone."""

import random
import signal
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from nnprofile.assembly.intervals import merged, overlap
from nnprofile.recording.building import Builds
from nnprofile.recording.faults import Faults
from nnprofile.recording.sampler import Sampler
from nnprofile.recording.window import Window


class _Recorder:
    def __init__(self):
        self.open_calls, self.capturing, self.window = [], True, Window()
        self.program_thread = threading.main_thread().ident
        self.passes = SimpleNamespace(site_phases={})
        self.builds = Builds(time.perf_counter_ns, lambda: 0, lambda: True, ())
        self.faults = Faults()


def test_the_timer_samples_the_program_s_own_line_and_leaves_its_own_time_out():
    r = _Recorder()
    s, w = Sampler(r), r.window
    s._timer = True  # as started, without a real timer: the handler called as the signal would call it
    line = sys._getframe().f_lineno + 1
    s._on_timer(signal.SIGPROF, sys._getframe())
    assert w.taken == 1 and len(w.excluded) == 1 and w.excluded[0][0] <= w.excluded[0][1]
    [(t0, index)] = w.samples
    assert t0 == w.excluded[0][0] and s.wheres[index][1:] == (
        line,
        "test_the_timer_samples_the_program_s_own_line_and_leaves_its_own_time_out",
    )
    r.open_calls.append(("a function", 0))  # inside a call nnprofile times: no sample, its time still left out
    s._on_timer(signal.SIGPROF, sys._getframe())
    assert len(w.samples) == 1 and len(w.excluded) == 2 and w.taken == 2
    s._timer = False  # stopped: a signal still pending does nothing
    s._on_timer(signal.SIGPROF, sys._getframe())
    assert w.taken == 2


def test_the_timer_runs_only_in_a_window_and_gives_its_signal_back():
    r = _Recorder()
    s, w = Sampler(r), r.window
    s.start()
    try:
        number = s._clock.number
        assert s._timer and s._thread is None and signal.getsignal(number) == s._on_timer
        # the thread's CPU clock on a real-time signal where the kernel gives it, else the profiling timer (SIGPROF)
        assert (s.clock[0] == "cpu" and s._cpu is not None and number >= signal.SIGRTMIN) or (
            s.clock[0] == "timer" and number == signal.SIGPROF and any(signal.getitimer(signal.ITIMER_PROF))
        )
        total = 0
        while w.taken < 3:  # the thread's CPU time makes the clock fire
            total += sum(i * i for i in range(1000))
    finally:
        s.stop()
    assert signal.getsignal(number) == signal.SIG_DFL and not any(signal.getitimer(signal.ITIMER_PROF))
    assert len(w.excluded) == w.taken and s._cpu is None


def test_where_the_kernel_refuses_the_cpu_clock_the_profiling_timer_samples(monkeypatch):
    import nnprofile.recording.sigclock as sigclock

    monkeypatch.setattr(sigclock, "open_cpu_clock", lambda period, number: None)
    r = _Recorder()
    s = Sampler(r)
    s.start()
    try:
        assert s.clock == ("timer", 1.0) and any(signal.getitimer(signal.ITIMER_PROF))
    finally:
        s.stop()
    assert signal.getsignal(signal.SIGPROF) == signal.SIG_DFL and not any(signal.getitimer(signal.ITIMER_PROF))


def test_a_program_that_takes_the_clock_s_signal_gets_it_and_the_clock_stops_first(monkeypatch):
    """The program resets SIGPROF to its default mid-window (the profiling timer is the clock here): no signal of
    nnprofile's reaches it after (a timer left armed would kill it), and the profile says sampling stopped."""
    import nnprofile.recording.sigclock as sigclock

    monkeypatch.setattr(sigclock, "open_cpu_clock", lambda period, number: None)
    r = _Recorder()
    s = Sampler(r)
    s.start()
    try:
        assert s._timer and any(signal.getitimer(signal.ITIMER_PROF))
        signal.signal(signal.SIGPROF, signal.SIG_DFL)  # (the program's call, through the module as it holds it)
        assert not s._timer and not any(signal.getitimer(signal.ITIMER_PROF))
        assert signal.getsignal(signal.SIGPROF) == signal.SIG_DFL
        assert "the program set its own handler of SIGPROF" in r.faults.counted()[0][0]
    finally:
        s.stop()
    assert signal.signal is sigclock.owned._signal  # the program's module as it was


def test_the_cpu_clock_signals_once_a_period_of_the_thread_s_cpu_time():
    """Counted against the thread's own CPU time (no wall clock): some 40 periods of CPU time spent, the signals
    come within a factor of two of that (a period's signal waits for its handler before the next is armed)."""
    import time

    import pytest
    from nnprofile.recording.cpuclock import open_cpu_clock

    seen = []
    previous = signal.signal(signal.SIGPROF, lambda signum, frame: (seen.append(signum), clock.rearm()))
    clock = open_cpu_clock(1_000_000, signal.SIGPROF)
    try:
        if clock is None:
            pytest.skip("the kernel refuses perf_event_open here (perf_event_paranoid, or a seccomp filter)")
        clock.rearm()
        start = time.thread_time()
        total = 0
        while time.thread_time() - start < 0.04:
            total += sum(i * i for i in range(200))
        spent = time.thread_time() - start
    finally:
        if clock is not None:
            clock.close()
        signal.signal(signal.SIGPROF, previous)
    assert spent / 1e-3 / 2 <= len(seen) <= spent / 1e-3 + 2


def test_a_program_s_own_sigprof_handler_is_left_alone(monkeypatch):
    """A program with a SIGPROF handler of its own keeps it: the CPU clock signals on a real-time signal instead;
    where the kernel refuses the CPU clock, a thread of nnprofile's samples (the program's timer is the program's)."""
    import nnprofile.recording.sigclock as sigclock

    seen = []
    mine = lambda signum, frame: seen.append(signum)  # noqa: E731
    previous = signal.signal(signal.SIGPROF, mine)
    try:
        s = Sampler(_Recorder())
        s.start()
        try:
            assert s._thread is not None or s._clock.number != signal.SIGPROF
        finally:
            s.stop()
        monkeypatch.setattr(sigclock, "open_cpu_clock", lambda period, number: None)
        s = Sampler(_Recorder())
        s.start()
        try:
            assert not s._timer and s._thread is not None
        finally:
            s.stop()
        assert signal.getsignal(signal.SIGPROF) is mine and not any(signal.getitimer(signal.ITIMER_PROF)) and not seen
    finally:
        signal.signal(signal.SIGPROF, previous)


def test_a_program_in_another_thread_is_sampled_by_the_thread():
    out = {}

    def body():
        r = _Recorder()
        r.program_thread = threading.get_ident()
        s = Sampler(r)
        s.start()
        out["timer"], out["thread"] = s._timer, s._thread is not None
        s.stop()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == {"timer": False, "thread": True} and signal.getsignal(signal.SIGPROF) == signal.SIG_DFL


def test_how_much_of_a_stretch_nnprofile_s_own_work_took_is_found_by_bisection_as_by_summing():
    rng = random.Random(3)
    for _ in range(200):
        intervals = []
        for _ in range(rng.randint(0, 30)):
            a = rng.randint(0, 1000)
            intervals.append((a, a + rng.randint(0, 40)))
        excluded = merged(intervals)
        start = rng.randint(-50, 1050)
        end = start + rng.randint(0, 300)
        naive = sum(max(0, min(b, end) - max(a, start)) for a, b in excluded)
        assert overlap(start, end, excluded) == naive


def test_a_call_s_time_leaves_out_the_sampler_s_handler_that_ran_inside_it():
    from types import SimpleNamespace
    from nnprofile.assembly.calls import Calls

    capture = SimpleNamespace(
        graph=SimpleNamespace(functions={}), excluded=[(150, 170), (100, 110), (400, 420)], marks="", events=[]
    )
    b = Calls(capture, None, [], {}, 0)
    assert b.span(SimpleNamespace(start_ns=100, end_ns=300)) == 200 - 10 - 20  # both handlers inside it
    assert b.span(SimpleNamespace(start_ns=300, end_ns=410)) == 110 - 10  # half of one
    assert b.span(SimpleNamespace(start_ns=0, end_ns=50)) == 50


def test_the_clocks_period_is_never_shorter_than_its_signals_cost_allows(monkeypatch):
    """A signal that costs the program 44 us beyond its handler (this machine, a virtual one) keeps the clock at 2.2 ms
    at the shortest; 3 us (a machine of its own) leaves the quarter millisecond; a clock that cannot be had costs
    nothing."""
    from nnprofile.recording import signalcost

    for cost, floor in ((44_000.0, 2_200_000), (3_000.0, 250_000), (1e6, 4_000_000)):
        monkeypatch.setattr(signalcost, "_measured", [cost])
        assert signalcost.floor_ns(None, 250_000, 4_000_000) == floor

    class NoClock:
        cpu = None

        def start(self, handler, period_ns, interval_s):
            return None

        def stop(self):
            pass

    assert signalcost._measure(NoClock()) == 0.0


def test_a_paused_clock_keeps_watching_the_program_and_a_stopped_one_stops():
    """Switching the hooks off in a window pauses the clock: no more signals, its handler the program's again, but the
    program's ``signal.signal`` still watched, so that starting again walks no module anew. Stopping it puts the
    program's own ``signal.signal`` back."""
    import nnprofile.recording.sigclock as sigclock

    original = signal.signal
    clock = sigclock.SignalClock(lambda why: None)
    if clock.start(lambda number, frame: None, 4_000_000, 0.004) is None:
        pytest.skip("no signal clock on this machine")
    watching = clock._watching
    assert signal.signal is not original and watching is not None
    clock.stop(watching=True)
    assert clock.number == 0 and clock._watching is watching and signal.signal is not original
    assert clock.start(lambda number, frame: None, 4_000_000, 0.004) is not None
    assert clock._watching is watching  # (the same watch: no second walk)
    clock.stop()
    assert clock._watching is None and signal.signal is original
