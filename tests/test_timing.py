import math

import pytest

from conftest import FakeClock
from nnprofile.timing import Sampling, Timer, percentile, summarize


def test_summarize_exact_values():
    s = summarize([4, 1, 3, 2, 10])
    assert s.n == 5
    assert s.mean == 4
    assert s.median == 3
    assert s.min == 1 and s.max == 10
    # sample standard deviation: sum of squares 9+4+1+0+36 = 50, / (n-1)
    assert s.std == pytest.approx(math.sqrt(50 / 4))
    # p90 by linear interpolation between 4 (index 3) and 10 (index 4): 4 + 0.6*6
    assert s.p90 == pytest.approx(7.6)
    assert s.rse == pytest.approx(math.sqrt(50 / 4) / math.sqrt(5) / 4)


def test_single_sample_has_no_spread():
    s = summarize([7])
    assert (s.mean, s.median, s.std, s.p90, s.rse) == (7, 7, 0.0, 7, 0.0)


def test_percentile_matches_numpy_convention():
    import numpy as np
    values = [3.0, 1.5, 8.25, 4.0, 9.0, 2.0, 7.5]
    for q in (0, 10, 25, 50, 90, 100):
        assert percentile(sorted(values), q) == pytest.approx(np.percentile(values, q))


def test_summarize_rejects_empty():
    with pytest.raises(ValueError):
        summarize([])


def test_fixed_runs_time_exactly_what_the_clock_says():
    # Readings: t0=1000, t1=3000 (+2000), t0'=4000, t1'=6000 ...: every run measures 2000 ns.
    clock = FakeClock(steps=(1000, 2000))
    calls = []
    timer = Timer(Sampling(runs=4, warmup=2), clock=clock)
    samples = timer.measure(lambda: calls.append(1))
    assert samples == [2000, 2000, 2000, 2000]
    assert len(calls) == 6  # 2 warm-up + 4 timed
    assert clock.readings == 8  # warm-up runs are not timed


def test_sync_is_inside_the_timed_region_and_before_is_outside():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(runs=3, warmup=0), clock=clock,
                  sync=lambda: clock.advance(500))
    samples = timer.measure(lambda: clock.advance(100), before=lambda: clock.advance(10_000))
    assert samples == [600, 600, 600]


def test_adaptive_stops_as_soon_as_the_target_error_is_reached():
    # Alternating 900/1100 ns: after n runs the relative standard error is
    # std/sqrt(n)/mean; it first falls to 2% at n = 26 (checked below by hand).
    durations = iter([900, 1100] * 1000)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, target_rse=0.02, min_runs=5, max_seconds=100), clock=clock)
    samples = timer.measure(lambda: clock.advance(next(durations)))
    n = len(samples)
    assert summarize(samples).rse <= 0.02
    assert summarize(samples[:-1]).rse > 0.02
    assert n == 26


def test_adaptive_honours_min_runs_for_constant_times():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_runs=7), clock=clock)
    assert len(timer.measure(lambda: clock.advance(50))) == 7


def test_adaptive_stops_when_the_budget_is_spent():
    # Wildly varying times never reach 2%: the 1 ms budget ends it after 10 runs of 100 µs.
    durations = iter([1_000, 199_000] * 100)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_runs=2, max_seconds=0.001), clock=clock)
    samples = timer.measure(lambda: clock.advance(next(durations)))
    assert len(samples) == 10 and sum(samples) == 1_000_000


def test_adaptive_respects_max_runs():
    durations = iter([1, 1000] * 1000)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_runs=2, max_runs=12, max_seconds=100), clock=clock)
    assert len(timer.measure(lambda: clock.advance(next(durations)))) == 12
