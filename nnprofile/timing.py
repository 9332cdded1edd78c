"""The clock seam, the sampling rule and the statistics of a timed entry.

Times are kept as integer nanoseconds from a monotonic clock and turned into
milliseconds only for display (as line_profiler keeps ticks and a unit).
Everything here is pure and deterministic given a clock, so tests drive it with
a fake one.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

NS_PER_MS = 1_000_000


class Clock:
    """Monotonic nanosecond clock; tests replace it with a scripted one."""

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
    min_runs: int = 5
    max_runs: int = 1000
    max_seconds: float = 0.25

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


def _rse(samples: List[float]) -> float:
    return summarize(samples).rse if len(samples) > 1 else math.inf


class Timer:
    """Runs a callable a warm-up and then a number of timed runs.

    ``sync`` is called inside each timed run, after the work, so that an
    asynchronous device is waited for. ``before`` runs untimed before each
    run, for entries that need fresh state (a forward pass before a backward).
    """

    def __init__(self, sampling: Sampling = Sampling(), clock: Clock = None,
                 sync: Optional[Callable[[], None]] = None):
        self.sampling = sampling
        self.clock = clock or Clock()
        self.sync = sync

    def measure(self, work: Callable[[], object],
                before: Optional[Callable[[], object]] = None) -> List[int]:
        s = self.sampling
        now = self.clock.now_ns
        sync = self.sync
        for _ in range(s.warmup):
            if before is not None:
                before()
            work()
            if sync is not None:
                sync()
        samples: List[int] = []
        spent = 0
        budget_ns = s.max_seconds * 1e9
        while True:
            if before is not None:
                before()
            t0 = now()
            work()
            if sync is not None:
                sync()
            t1 = now()
            samples.append(t1 - t0)
            spent += t1 - t0
            if s.runs is not None:
                if len(samples) >= s.runs:
                    break
                continue
            if len(samples) >= s.max_runs:
                break
            if len(samples) >= s.min_runs and (
                    spent >= budget_ns or _rse(samples) <= s.target_rse):
                break
        return samples
