"""Sampling in rounds: every entry of a section a few samples per round, round after round.

A machine that slows down for a few seconds then touches every entry alike,
instead of the few that happened to be measured during the slow spell. The
per-round totals measure the machine's speed during the run
(``nnprofile.stats.speed_levels``); rounds that ran slower than the usual
speed are left out of every entry's mean (``nnprofile.stats.summarize_rounds``),
and sampling goes on until enough undisturbed rounds are in, up to the
section's time budget.

A round runs the items of a section in NNC's order: probes (one entry each),
pass probes (graph mode: one hooked pass gives a sample to every layer of the
pass) and untimed actions (fresh buffers before the per-layer entries). Only
the measuring order is interleaved; entries are handed over in NNC's order,
each as soon as it and every entry before it are final.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Union

from ..errors import ProfileError
from ..result import Entry, Section
from ..stats import Drift, speed_levels, summarize_rounds
from .graph import timing_hooks
from .timing import Measurement, Timer

EntryFactory = Callable[[Measurement], Entry]
# A cheap entry gets a few samples per round (up to this many, about 1 ms of work in all).
MAX_SAMPLES_PER_ROUND = 3
ROUND_SHARE_NS = 1_000_000
# Entries shorter than this get an untimed run before each round's samples (see Probe._rewarm).
REWARM_BELOW_NS = ROUND_SHARE_NS


@dataclass
class Series:
    """One entry's samples as they come in, round by round."""

    make_entry: EntryFactory
    samples: List[float] = field(default_factory=list)  # per call, ns, overhead not yet taken off
    round_sizes: List[int] = field(default_factory=list)
    calls: int = 1           # consecutive calls per sample
    overhead_ns: float = 0.0  # per call
    spent_ns: float = 0.0     # timed work charged to this entry
    final: bool = False

    def add(self, per_call_ns: float, spent_ns: float) -> None:
        self.samples.append(per_call_ns)
        self.round_sizes[-1] += 1
        self.spent_ns += spent_ns

    def rse(self, dropped: Sequence[int] = ()) -> float:
        values = [max(0.0, s - self.overhead_ns) for s in self.samples]
        return summarize_rounds(values, self.round_sizes, dropped).rse if values else math.inf

    def entry(self, dropped: Sequence[int] = (), complete: bool = True) -> Entry:
        e = self.make_entry(Measurement(list(self.samples), self.calls, self.overhead_ns))
        e.round_sizes = list(self.round_sizes)
        e.dropped_rounds = [r for r in dropped if r < len(self.round_sizes)]
        e.complete = complete
        return e


class Probe:
    """One entry: the work one of its samples times.

    ``before`` runs untimed before each sample (fresh state: a forward pass
    before a backward) and ``after`` untimed after it (restored parameters);
    samples of calls much shorter than the timing overhead hold several calls.
    """

    def __init__(self, make_entry: EntryFactory, work: Callable[[], object],
                 before: Optional[Callable[[], object]] = None,
                 after: Optional[Callable[[], object]] = None, batchable: bool = True):
        self.work, self.before, self.after = work, before, after
        self.batchable = batchable and before is None and after is None
        self.series = [Series(make_entry)]
        self.per_round = 0  # samples per round, chosen at warm-up
        self.rewarm = False  # an untimed run before each round's samples (short entries)

    def run_round(self, timer: Timer, fixed: bool) -> None:
        s = self.series[0]
        if s.final:
            return
        if self.per_round == 0:  # warm-up, in the first round only
            estimate = timer.warm_up(self.work, self.before)
            if self.after is not None and timer.sampling.warmup:
                self.after()
            s.calls = timer.calls_per_sample(estimate, self.batchable)
            s.overhead_ns = timer.overhead_ns / s.calls
            self.per_round = 1 if fixed else _per_round(estimate * s.calls)
            self.rewarm = estimate * s.calls < REWARM_BELOW_NS
        elif self.rewarm:
            self._rewarm()
        s.round_sizes.append(0)
        for _ in range(self.per_round):
            if self.before is not None:
                self.before()
            spent = timer.sample(self.work, s.calls)
            if self.after is not None:
                self.after()
            s.add(spent / s.calls, spent)


    def _rewarm(self) -> None:
        """One untimed run before a round's samples: the other entries of the round evicted this
        one's data from the caches, and NNC times an entry in a burst, with its data at hand.
        Only for short entries: a long one is its own warm-up."""
        if self.before is not None:
            self.before()
        self.work()
        if self.after is not None:
            self.after()


def _per_round(sample_estimate_ns: float) -> int:
    if not math.isfinite(sample_estimate_ns) or sample_estimate_ns <= 0:
        return 1
    return max(1, min(MAX_SAMPLES_PER_ROUND, int(ROUND_SHARE_NS // sample_estimate_ns)))


class PassProbe:
    """Graph mode: each function timed inside a whole pass, between NNabla's hooks.

    The hooks only read the clock. Functions run in the same order in every
    pass, so the i-th pair of readings belongs to the i-th function of the
    order recorded beforehand (checked on every pass). Each layer's budget is
    charged the whole pass: that is what one of its samples costs.
    """

    def __init__(self, order: Sequence[Optional[EntryFactory]],
                 run_pass: Callable[[object, object], None],
                 before: Optional[Callable[[], object]] = None,
                 timeline: Optional["Timeline"] = None, phase: str = "forward",
                 names: Sequence[Optional[str]] = (), details: Sequence[Optional[dict]] = ()):
        self.order = list(order)  # an entry factory per function of the pass, None for a non-layer
        self.run_pass, self.before = run_pass, before
        self.series = [Series(f) for f in self.order if f is not None]
        self._slots = [i for i, f in enumerate(self.order) if f is not None]
        self.warmed = False
        self.timeline, self.phase = timeline, phase
        self.names, self.details = list(names), list(details)
        self.rounds = 0

    def run_round(self, timer: Timer, fixed: bool) -> None:
        if all(s.final for s in self.series):
            return
        if not self.warmed:
            for _ in range(timer.sampling.warmup):
                if self.before is not None:
                    self.before()
                self.run_pass(None, None)
            for s in self.series:  # the hooks' cost inside each function's interval
                s.overhead_ns = timer.hook_inside_ns
            self.warmed = True
        starts: List[int] = []
        ends: List[int] = []
        pre, post = timing_hooks(timer, starts, ends)
        if self.before is not None:
            self.before()
        now = timer.clock.now_ns
        t0 = now()
        self.run_pass(pre, post)
        spent = now() - t0
        if len(starts) != len(self.order) or len(ends) != len(self.order):
            raise ProfileError("graph mode: a pass ran %d functions where %d were expected; "
                               "use --mode isolated" % (len(starts), len(self.order)))
        for s, i in zip(self.series, self._slots):
            if not s.final:
                s.round_sizes.append(0)
                s.add(ends[i] - starts[i], spent)
        self.rounds += 1
        if self.timeline is not None:
            self.timeline.add_pass(self.rounds, self.phase, t0, t0 + spent, starts, ends, self.names, self.details)


class Timeline:
    """Graph mode's timeline: the hooked passes of the first rounds, each function inside its pass."""

    def __init__(self, max_rounds: int = 20):
        self.max_rounds = max_rounds
        self.events: List[dict] = []
        self.origin: Optional[int] = None
        self.section = ""  # the title of the section being measured

    def add_pass(self, round_number: int, phase: str, start: int, end: int, starts: List[int], ends: List[int],
                 names: Sequence[Optional[str]], details: Sequence[Optional[dict]]) -> None:
        if round_number > self.max_rounds:
            return
        if self.origin is None:
            self.origin = start
        o = self.origin
        self.events.append({"name": "%s pass, round %d" % (phase, round_number), "cat": phase,
                            "start": start - o, "end": end - o,
                            "args": {"round": round_number, "section": self.section}})
        for name, detail, t0, t1 in zip(names, details, starts, ends):
            if name is not None:
                self.events.append({"name": name, "cat": phase, "start": t0 - o, "end": t1 - o,
                                    "args": detail or {"phase": phase}})


class Action:
    """Untimed work between the probes of a round: it runs only while a later probe still samples."""

    series: List[Series] = []

    def __init__(self, work: Callable[[], object]):
        self.work = work

    def run_round(self, timer: Timer, fixed: bool) -> None:
        self.work()


Item = Union[Probe, PassProbe, Action]
EntryCallback = Callable[[Section, Entry], None]


class Reference:
    """A fixed workload timed once per round: the machine's own speed, comparable between runs.

    Within a run, the rounds' levels tell a slow spell from the usual speed; a whole run
    inside a slow spell looks steady. This workload, the same in every run, lets
    ``nnprofile check`` tell a slower machine from a slower network: a small convolution
    and activation in NNabla (what most layers are like), on fixed data.
    """

    def __init__(self, timer: Timer):
        import nnabla as nn
        import nnabla.functions as F
        import numpy as np
        self.timer = timer
        rng = np.random.RandomState(0)
        x = nn.Variable((8, 16, 16, 16))
        w = nn.Variable((16, 16, 3, 3))
        x.d, w.d = rng.rand(*x.shape), rng.rand(*w.shape) - 0.5
        self.output = F.relu(F.convolution(x, w, pad=(1, 1)))
        self.output.forward()

    def sample(self) -> float:
        self.output.forward()  # its data back in the caches, as the entries' are
        return float(self.timer.sample(self.output.forward, 2)) / 2


class RoundRunner:
    """Runs a section's items round after round until the sampling rule holds."""

    def __init__(self, timer: Timer, on_entry: Optional[EntryCallback] = None, reference: bool = True):
        self.timer = timer
        self.on_entry = on_entry or (lambda section, entry: None)
        self.reference = Reference(timer) if reference else None

    def run(self, section: Section, items: Sequence[Item]) -> Drift:
        """Measure every entry of the items into ``section``, in their order; returns the drift seen.

        Entries are appended as they become final, in order. On a failure or
        Ctrl-C, every sample taken so far is kept: the remaining entries are
        appended with ``complete`` False, and the exception goes on.
        """
        sampling = self.timer.sampling
        all_series = [s for item in items for s in item.series]
        emitted = 0
        rounds = 0
        drift = Drift((), sampling.drift_threshold)
        clock = self.timer.clock
        started = clock.now_ns()
        try:
            while not all(s.final for s in all_series):
                for i, item in enumerate(items):
                    if isinstance(item, Action) and not _pending(items, i):
                        continue
                    try:
                        item.run_round(self.timer, not sampling.adaptive)
                    except Exception as e:  # say which entry was being measured
                        if not hasattr(e, "nnprofile_entry") and item.series:
                            e.nnprofile_entry = item.series[0].make_entry(  # type: ignore[attr-defined]
                                Measurement([0.0])).label
                        raise
                rounds += 1
                if self.reference is not None:
                    section.reference_ns.append(round(self.reference.sample(), 1))
                drift = Drift(tuple(speed_levels(
                    [(s.samples, s.round_sizes) for s in all_series if s.samples], rounds)),
                    sampling.drift_threshold)
                section.speed_levels = [round(level, 4) for level in drift.levels]
                self._decide(all_series, rounds, drift, clock.now_ns() - started)
                emitted = self._emit(section, all_series, emitted, drift.dropped)
        except BaseException:
            for s in all_series[emitted:]:
                if s.samples:
                    section.entries.append(s.entry(drift.dropped, complete=False))
            raise
        return drift

    def _decide(self, all_series: List[Series], rounds: int, drift: Drift, elapsed_ns: float) -> None:
        sampling = self.timer.sampling
        if not sampling.adaptive:
            if rounds >= (sampling.runs or 1):
                for s in all_series:
                    s.final = True
            return
        if rounds < sampling.min_rounds:
            return
        # An entry that has had its budget of timed work ends the sampling of all: every round
        # holds every entry, so that no entry is timed in a context the others left (a cheap
        # entry run alone, round after round, finds its data in the caches and reads faster).
        spent = any(s.spent_ns >= sampling.max_seconds_per_entry * 1e9 for s in all_series)
        kept = rounds - len(drift.dropped)
        steady = all(s.final or s.rse(drift.dropped) <= sampling.target_rse for s in all_series)
        if (steady and kept >= sampling.min_rounds and not drift.flagged) or spent \
                or elapsed_ns >= sampling.max_seconds * 1e9 or rounds >= sampling.max_rounds:
            for s in all_series:
                s.final = True

    def _emit(self, section: Section, all_series: List[Series], emitted: int, dropped: List[int]) -> int:
        while emitted < len(all_series) and all_series[emitted].final:
            entry = all_series[emitted].entry(dropped)
            section.entries.append(entry)
            self.on_entry(section, entry)
            emitted += 1
        return emitted


def _pending(items: Sequence[Item], index: int) -> bool:
    """Whether a probe after ``items[index]`` still takes samples."""
    later = [item for item in items[index + 1:] if not isinstance(item, Action)]
    return any(not s.final for item in later for s in item.series)
