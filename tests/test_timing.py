import math

import pytest

from conftest import FakeClock
from nnprofile.measure.timing import Sampling, Timer
from nnprofile.base.stats import percentile, summarize


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
    # Readings alternate +1000, +2000: every run (a pair of readings) measures 2000 ns.
    clock = FakeClock(steps=(1000, 2000))
    calls = []
    timer = Timer(Sampling(runs=4, warmup=2), clock=clock)
    m = timer.measure(lambda: calls.append(1))
    assert m.samples_ns == [2000, 2000, 2000, 2000]
    assert (m.calls_per_sample, m.overhead_ns) == (1, 0.0)
    assert len(calls) == 6  # 2 warm-up + 4 timed
    assert clock.readings == 12  # warm-up runs are timed too, to choose the batch size


def test_sync_is_inside_the_timed_region_and_before_is_outside():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(runs=3, warmup=0), clock=clock, sync=lambda: clock.advance(500))
    samples = timer.measure(lambda: clock.advance(100), before=lambda: clock.advance(10_000)).samples_ns
    assert samples == [600, 600, 600]


def test_adaptive_stops_as_soon_as_the_target_error_is_reached():
    # Alternating 900/1100 ns after one 1000 ns warm-up: the relative standard
    # error std/sqrt(n)/mean first falls to 2% at n = 26.
    durations = iter([1000] + [900, 1100] * 1000)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=1, target_rse=0.02, min_rounds=5, max_seconds_per_entry=100), clock=clock)
    samples = timer.measure(lambda: clock.advance(next(durations))).samples_ns
    n = len(samples)
    assert summarize(samples).rse <= 0.02
    assert summarize(samples[:-1]).rse > 0.02
    assert n == 26


def test_adaptive_honours_min_runs_for_constant_times():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_rounds=7), clock=clock)
    assert len(timer.measure(lambda: clock.advance(50)).samples_ns) == 7


def test_adaptive_stops_when_the_budget_is_spent():
    # Wildly varying times never reach 2%: the 1 ms budget ends it after 10 runs of 100 µs.
    durations = iter([1_000, 199_000] * 100)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_rounds=2, max_seconds_per_entry=0.001), clock=clock)
    samples = timer.measure(lambda: clock.advance(next(durations))).samples_ns
    assert len(samples) == 10 and sum(samples) == 1_000_000


def test_adaptive_respects_max_runs():
    durations = iter([1, 1000] * 1000)
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=0, min_rounds=2, max_rounds=12, max_seconds_per_entry=100), clock=clock)
    assert len(timer.measure(lambda: clock.advance(next(durations))).samples_ns) == 12


def test_running_stats_match_the_batch_formula():
    from nnprofile.base.stats import RunningStats

    values = [3.0, 1.5, 8.25, 4.0, 9.0, 2.0, 7.5]
    r = RunningStats()
    for v in values:
        r.add(v)
    assert r.mean == pytest.approx(summarize(values).mean)
    assert r.rse == pytest.approx(summarize(values).rse)


def test_short_calls_are_timed_in_batches():
    # Overhead 100 ns: calls under 10 us (100 x overhead) are batched so that the
    # overhead is at most 1% of a sample. A 2 us call needs 5 per sample.
    clock = FakeClock(steps=(0,))
    calls = []

    def work():
        calls.append(1)
        clock.advance(2000)

    timer = Timer(Sampling(runs=3, warmup=1), clock=clock, overhead_ns=100)
    m = timer.measure(work)
    assert m.calls_per_sample == 5
    assert m.samples_ns == [2000, 2000, 2000]  # per call
    assert m.overhead_ns == 20  # 100 ns per sample of 5 calls
    assert len(calls) == 1 + 3 * 5


def test_no_batches_for_entries_that_need_fresh_state_or_are_long():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(runs=2, warmup=1), clock=clock, overhead_ns=100)
    assert timer.measure(lambda: clock.advance(10), before=lambda: None).calls_per_sample == 1
    assert timer.measure(lambda: clock.advance(10), batchable=False).calls_per_sample == 1
    assert timer.measure(lambda: clock.advance(50_000)).calls_per_sample == 1
    # never more than the cap
    assert timer.measure(lambda: None).calls_per_sample == 1000


def test_overhead_is_subtracted_in_the_statistics_and_the_stopping_rule():
    from nnprofile.result import Entry

    e = Entry(label="x", phase="update", samples_ns=[1100, 1300, 900], overhead_ns=100)
    assert e.stats.mean == 1000 and e.stats.min == 800
    assert Entry(label="y", phase="update", samples_ns=[50], overhead_ns=100).stats.mean == 0.0
    from nnprofile.measure.timing import StopRule

    rule = StopRule(Sampling(min_rounds=2, target_rse=0.1), overhead_ns=900)
    rule.add(1000, 1000)
    rule.add(1100, 1100)
    # raw samples have a rse of 4.8%; after subtraction (100, 200) it is 33%: not done.
    assert not rule.done()


def test_calibration_with_a_fake_clock():
    # Each reading advances 30 ns: the smallest step is 30 ns and timing no work
    # costs one step (two readings per sample).
    timer = Timer(clock=FakeClock(steps=(30,)))
    info = timer.calibrate(readings=100)
    assert info.resolution_ns == 30
    assert info.overhead_ns == 30
    assert timer.overhead_ns == 30
