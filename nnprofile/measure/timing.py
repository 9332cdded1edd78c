"""The clock seam, the sampling rule and the statistics of a timed entry.

Times are kept as nanoseconds from a monotonic clock and turned into
milliseconds only for display (as line_profiler keeps ticks and a unit).
Everything here is deterministic given a clock, so tests drive it with a fake
one and assert exact figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ..base.clock import Clock
from ..base.interference import NoProbe, Probe, rate, shortfall
from ..base.options import ProfileOptions
from ..base.stats import RunningStats, summarize
from ..result.notes import Note

# Calls so short that the timing overhead would exceed this share of a sample
# are timed in batches of consecutive calls.
MAX_OVERHEAD_SHARE = 0.01
MAX_CALLS_PER_SAMPLE = 1000


@dataclass(frozen=True)
class Sampling:
    """How many samples an entry gets, and when a section's measuring stops.

    Entries are sampled in rounds (``nnprofile.measure.rounds``): every entry of
    a section gets a few samples per round, round after round. With ``runs``
    set, exactly that many rounds of one sample each. Otherwise rounds go on
    until, after at least ``min_rounds``, every entry's reported mean has a
    relative standard error (from the spread of its round means) of at most
    ``target_rse`` and the machine's speed held steady (``drift_threshold``);
    or until the section has spent ``max_seconds`` in all, or until one entry has
    had ``max_seconds_per_entry`` of timed work (every round holds every entry).
    """

    runs: Optional[int] = ProfileOptions.runs
    warmup: int = ProfileOptions.warmup
    target_rse: float = ProfileOptions.target_rse
    min_rounds: int = ProfileOptions.min_rounds
    max_rounds: int = 1000
    max_seconds_per_entry: float = ProfileOptions.max_seconds_per_entry
    max_seconds: float = ProfileOptions.max_seconds
    drift_threshold: float = ProfileOptions.drift_threshold

    @classmethod
    def of(cls, options: ProfileOptions) -> "Sampling":
        """The sampling the options ask for."""
        return cls(
            runs=options.runs,
            warmup=max(0, options.warmup),
            target_rse=options.target_rse,
            min_rounds=options.min_rounds,
            max_seconds=options.max_seconds,
            max_seconds_per_entry=options.max_seconds_per_entry,
            drift_threshold=options.drift_threshold,
        )

    @property
    def adaptive(self) -> bool:
        return self.runs is None

    def header_note(self) -> Note:
        """How the entries are sampled, for the header (``nnprofile.render.rules`` says it)."""
        if self.runs is not None:
            return Note("sampling_runs", {"warmup": self.warmup, "runs": self.runs})
        figures = {
            "warmup": self.warmup,
            "min_rounds": self.min_rounds,
            "target_rse": self.target_rse,
            "drift_threshold": self.drift_threshold,
            "max_seconds": self.max_seconds,
            "max_seconds_per_entry": self.max_seconds_per_entry,
        }
        return Note("sampling_rounds", figures)


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
        if n >= s.max_rounds:
            return True
        return n >= s.min_rounds and (
            self.spent_ns >= s.max_seconds_per_entry * 1e9 or self.running.rse <= s.target_rse
        )


@dataclass
class Measurement:
    """Per-call times of the timed runs, and how they were taken."""

    samples_ns: List[float]
    calls_per_sample: int = 1
    overhead_ns: float = 0.0  # per call, to subtract


@dataclass(frozen=True)
class ClockInfo:
    name: str
    resolution_ns: float  # smallest step seen between two consecutive readings from Python
    overhead_ns: float  # cost of timing one sample of no work (two readings, call, sync)


class Timer:
    """Runs a callable a warm-up and then a number of timed runs.

    ``sync`` is called inside each timed run, after the work, so that an
    asynchronous device is waited for. ``before`` runs untimed before each
    run, for entries that need fresh state (a forward pass before a backward).
    Calls far shorter than the timing overhead are timed in batches, and the
    measured overhead is recorded for subtraction.
    """

    def __init__(
        self,
        sampling: Sampling = Sampling(),
        clock: Optional[Clock] = None,
        sync: Optional[Callable[[], None]] = None,
        overhead_ns: float = 0.0,
        probe: Any = None,
    ):
        self.sampling = sampling
        self.clock = clock or Clock()
        self.sync = sync
        self.overhead_ns = overhead_ns
        # Graph mode: what the hooks cost inside a function's own interval (measured at start-up).
        self.hook_inside_ns = overhead_ns
        # Other work on the machine (``nnprofile.base.interference``): a sample whose thread CPU time falls short of
        # its wall time was held up (``held``, after each sample); an asynchronous device's waits are no CPU time,
        # and a scripted clock has none: there, nothing is read.
        self.probe = probe if probe is not None else (Probe() if clock is None or type(clock) is Clock else NoProbe())
        self.cpu: Optional[Callable[[], int]] = self.probe.cpu_ns if self.probe.available and sync is None else None
        self.held = False
        self.round = 0  # the round under way (``RoundRunner``): fed samples land in it
        self.taken: Optional[float] = None  # the time other work took of the last sample held up
        self.held_count, self.timed_ns = 0, 0.0  # samples held up, and the time sampled, for their rate

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
        return ClockInfo(getattr(self.clock, "name", type(self.clock).__name__), resolution, self.overhead_ns)

    def calls_per_sample(self, estimate_ns: float, batchable: bool = True, share: float = MAX_OVERHEAD_SHARE) -> int:
        """How many consecutive calls one sample holds, so that the overhead stays under ``share`` (1%)."""
        if not batchable or self.overhead_ns <= 0:
            return 1
        wanted = self.overhead_ns / share
        if estimate_ns >= wanted:
            return 1
        return int(min(MAX_CALLS_PER_SAMPLE, math.ceil(wanted / max(estimate_ns, 1.0))))

    def warm_up(self, work: Callable[[], object], before: Optional[Callable[[], object]] = None) -> float:
        """The untimed warm-up runs; returns the fastest, to size batches (inf without warm-up)."""
        estimate = math.inf
        for _ in range(self.sampling.warmup):
            if before is not None:
                before()
            estimate = min(estimate, self.sample(work, 1))
        return estimate

    def sample(self, work: Callable[[], object], calls: int, blocking: bool = False) -> float:
        """One sample: ``calls`` consecutive calls, the device synchronised inside; ns in all. ``held`` says whether
        other work kept the thread from running meanwhile: its CPU time short of the sample's wall time, or for work
        that waits (``blocking``: a read, a write) its involuntary context switches."""
        now = self.clock.now_ns
        cpu: Optional[Callable[[], int]] = self.cpu
        if cpu is not None and blocking:  # a wait (for a loader thread, a file): any of the process's threads held up
            cpu = self.probe.process_switches
        if cpu is not None:
            c0 = cpu()
        t0 = now()
        if calls == 1 and self.sync is None:
            work()
        else:
            for _ in range(calls):
                work()
            if self.sync is not None:
                self.sync()
        spent = now() - t0
        if cpu is not None:
            c1 = cpu()
            self.held = shortfall(0, spent, c0, c1, "switches" if blocking else "cpu")
            # what other work took of it: its wall time less the thread's CPU time (not known for a wait)
            self.taken = None if blocking or not self.held else float(max(0, spent - (c1 - c0)))
            self.held_count += self.held
            self.timed_ns += spent
        return spent

    def held_rate(self) -> float:
        """Samples held up per ns sampled: the chance a sample of ``d`` ns runs undisturbed is ``exp(-rate d)``."""
        return rate(self.held_count, self.timed_ns)

    def measure(
        self, work: Callable[[], object], before: Optional[Callable[[], object]] = None, batchable: bool = True
    ) -> Measurement:
        """All samples of one callable in one burst (calibration); entries are sampled in rounds."""
        estimate = self.warm_up(work, before)
        k = self.calls_per_sample(estimate, batchable and before is None)
        rule = StopRule(self.sampling, self.overhead_ns / k)
        samples: List[float] = []
        while not rule.done():
            if before is not None:
                before()
            spent = self.sample(work, k)
            samples.append(spent / k)
            rule.add(spent / k, spent)
        return Measurement(samples, k, self.overhead_ns / k)
