"""The clock seam, the sampling rule and the statistics of a timed entry.

Times are kept as nanoseconds from a monotonic clock and turned into
milliseconds only for display (as line_profiler keeps ticks and a unit).
Everything here is deterministic given a clock, so tests drive it with a fake
one and assert exact figures.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

NS_PER_MS = 1_000_000
# Calls so short that the timing overhead would exceed this share of a sample
# are timed in batches of consecutive calls.
MAX_OVERHEAD_SHARE = 0.01
MAX_CALLS_PER_SAMPLE = 1000


class Clock:
    """Monotonic nanosecond clock; tests replace it with a scripted one."""

    name = "time.perf_counter_ns"

    def now_ns(self) -> int:
        return time.perf_counter_ns()


@dataclass(frozen=True)
class Sampling:
    """How many times an entry is run.

    With ``runs`` set, exactly that many timed runs. Otherwise runs continue
    until the relative standard error of the mean is at most ``target_rse``
    (after at least ``min_runs``), or until ``max_seconds`` of timed work have
    been spent, whichever comes first; ``max_runs`` caps the count.
    """

    runs: Optional[int] = None
    warmup: int = 1
    target_rse: float = 0.02
    min_runs: int = 3
    max_runs: int = 1000
    max_seconds: float = 0.25

    @property
    def adaptive(self) -> bool:
        return self.runs is None

    def describe(self) -> str:
        if self.runs is not None:
            return "%d warm-up + %d timed runs per entry" % (self.warmup, self.runs)
        return ("%d warm-up, then %d to %d timed runs per entry until the relative "
                "standard error is below %g%% or %g s are spent"
                % (self.warmup, self.min_runs, self.max_runs,
                   self.target_rse * 100, self.max_seconds))


@dataclass(frozen=True)
class Stats:
    """Summary of per-call times, in nanoseconds."""

    n: int
    mean: float
    median: float
    std: float
    min: float
    max: float
    p90: float

    @property
    def rse(self) -> float:
        """Relative standard error of the mean (0 when undefined)."""
        if self.n < 2 or self.mean <= 0:
            return 0.0
        return self.std / math.sqrt(self.n) / self.mean


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> Stats:
    if not samples:
        raise ValueError("no samples to summarize")
    values = sorted(samples)
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return Stats(n=n, mean=mean, median=percentile(values, 50), std=math.sqrt(var),
                 min=values[0], max=values[-1], p90=percentile(values, 90))


class RunningStats:
    """Welford's running mean and variance: the stopping rule costs O(1) per run."""

    def __init__(self):
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (x - self.mean)

    @property
    def rse(self) -> float:
        if self.n < 2:
            return math.inf
        if self.mean <= 0:
            return 0.0
        return math.sqrt(self._m2 / (self.n - 1)) / math.sqrt(self.n) / self.mean


class StopRule:
    """Decides, run after run, whether a series of samples is long enough."""

    def __init__(self, sampling: Sampling, overhead_ns: float = 0.0):
        self.sampling = sampling
        self.overhead_ns = overhead_ns
        self.spent_ns = 0.0
        self.running = RunningStats()

    def add(self, sample_ns: float, spent_ns: float) -> None:
        # The rule judges the figures that will be reported: overhead taken off.
        self.running.add(max(0.0, sample_ns - self.overhead_ns))
        self.spent_ns += spent_ns

    def done(self) -> bool:
        s, n = self.sampling, self.running.n
        if s.runs is not None:
            return n >= s.runs
        if n >= s.max_runs:
            return True
        return n >= s.min_runs and (self.spent_ns >= s.max_seconds * 1e9 or self.running.rse <= s.target_rse)


@dataclass
class Measurement:
    """Per-call times of the timed runs, and how they were taken."""

    samples_ns: List[float]
    calls_per_sample: int = 1
    overhead_ns: float = 0.0  # per call, to subtract


@dataclass(frozen=True)
class ClockInfo:
    name: str
    resolution_ns: float   # smallest step seen between two consecutive readings from Python
    overhead_ns: float     # cost of timing one sample of no work (two readings, call, sync)


class Timer:
    """Runs a callable a warm-up and then a number of timed runs.

    ``sync`` is called inside each timed run, after the work, so that an
    asynchronous device is waited for. ``before`` runs untimed before each
    run, for entries that need fresh state (a forward pass before a backward).
    Calls far shorter than the timing overhead are timed in batches, and the
    measured overhead is recorded for subtraction.
    """

    def __init__(self, sampling: Sampling = Sampling(), clock: Clock = None,
                 sync: Optional[Callable[[], None]] = None, overhead_ns: float = 0.0):
        self.sampling = sampling
        self.clock = clock or Clock()
        self.sync = sync
        self.overhead_ns = overhead_ns

    def calibrate(self, readings: int = 2000) -> ClockInfo:
        """Measure the clock's resolution and the overhead of timing no work."""
        now = self.clock.now_ns
        steps = []
        last = now()
        for _ in range(readings):
            t = now()
            if t > last:
                steps.append(t - last)
            last = t
        resolution = min(steps) if steps else 0.0
        noop = Timer(Sampling(runs=max(5, readings // 10), warmup=1), self.clock, self.sync)
        samples = noop.measure(lambda: None, batchable=False).samples_ns
        self.overhead_ns = summarize(samples).median
        return ClockInfo(getattr(self.clock, "name", type(self.clock).__name__),
                         resolution, self.overhead_ns)

    def _calls_per_sample(self, estimate_ns: float) -> int:
        if self.overhead_ns <= 0:
            return 1
        wanted = self.overhead_ns / MAX_OVERHEAD_SHARE
        if estimate_ns >= wanted:
            return 1
        return int(min(MAX_CALLS_PER_SAMPLE, math.ceil(wanted / max(estimate_ns, 1.0))))

    def measure(self, work: Callable[[], object], before: Optional[Callable[[], object]] = None,
                batchable: bool = True) -> Measurement:
        now = self.clock.now_ns
        sync = self.sync
        estimate = math.inf
        for _ in range(self.sampling.warmup):
            if before is not None:
                before()
            t0 = now()
            work()
            if sync is not None:
                sync()
            estimate = min(estimate, now() - t0)
        k = self._calls_per_sample(estimate) if batchable and before is None else 1
        rule = StopRule(self.sampling, self.overhead_ns / k)
        samples: List[float] = []
        while not rule.done():
            if before is not None:
                before()
            t0 = now()
            for _ in range(k):
                work()
            if sync is not None:
                sync()
            t1 = now()
            per_call = (t1 - t0) / k
            samples.append(per_call)
            rule.add(per_call, t1 - t0)
        return Measurement(samples, k, self.overhead_ns / k)
