"""The items of a round (``nnprofile.measure.rounds``): a probe times one entry, a pass probe every layer of a
hooked pass (graph mode), an action does untimed work between them; a series holds an entry's samples as
they come, round by round."""

from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Tuple, Union

from ..base.errors import ProfileError
from ..base.series import RoundSeries
from ..base.interference import shortfall
from ..base.stats import Drift, summarize_undisturbed
from ..result import Entry
from ..result.drift import drop
from .allocation import per_round
from .graph_mode import timing_hooks
from .pass_timeline import Timeline
from .timing import Measurement, Timer

EntryFactory = Callable[[Measurement], Entry]
# A cheap entry gets a few samples per round (up to this many, about 1 ms of work in all).
MAX_SAMPLES_PER_ROUND = 3
ROUND_SHARE_NS = 1_000_000
# What taking part in a round costs a probe besides its work (its bookkeeping), ns.
PROBE_NS = 3000
# Entries shorter than this get an untimed run before each round's samples (see Probe._rewarm).
REWARM_BELOW_NS = ROUND_SHARE_NS


class Series(RoundSeries):
    """One entry's samples (per call, ns, overhead not yet taken off) as they come in, round by round,
    and how they are taken: consecutive calls per sample, the overhead per call, the timed work
    charged to the entry, and whether it is final."""

    def __init__(self, make_entry: EntryFactory) -> None:
        super().__init__()
        self.make_entry = make_entry
        self.calls = 1
        self.overhead_ns = 0.0
        self.spent_ns = 0.0
        self.final = False

    def sample(self, per_call_ns: float, spent_ns: float, held: bool = False, taken: Optional[float] = None) -> None:
        """One sample; ``held``: other work held it up, taking ``taken`` ns of it (all its calls'; None: not known).
        What other work took is none of the entry's budget; a sample it spoiled (a wait's) takes another."""
        self.add(per_call_ns, held, None if taken is None else taken / max(1, self.calls))
        if not held:
            self.spent_ns += spent_ns
        elif taken is not None:
            self.spent_ns += max(0.0, spent_ns - taken)

    def rse(self, dropped: Sequence[int] = (), per_ns: float = 0.0) -> float:
        """The relative standard error of the reported mean, over the samples other work did not hold up; infinite
        below two rounds with samples, or where too few ran undisturbed (sampling then goes on)."""
        if self.rounds_with_samples(dropped) < 2 and self.rounds_with_samples() < 2:
            return math.inf
        values = [max(0.0, s - self.overhead_ns) for s in self.samples]
        if not values:
            return math.inf
        st = summarize_undisturbed(values, self.round_sizes, dropped, self.disturbed, per_ns)
        return st.rse if st.undisturbed_enough and st.rse_known else math.inf

    def entry(self, drift: Drift, complete: bool = True, per_ns: float = 0.0) -> Entry:
        e = self.make_entry(Measurement(list(self.samples), self.calls, self.overhead_ns))
        e.round_sizes = list(self.round_sizes)
        e.disturbed, e.taken_ns, e.switch_rate = list(self.disturbed), list(self.taken), per_ns
        drop(e, drift)
        e.complete = complete
        return e


class Probe:
    """One entry: the work one of its samples times.

    ``before`` runs untimed before each sample (fresh state: a forward pass
    before a backward) and ``after`` untimed after it (restored parameters);
    samples of calls much shorter than the timing overhead hold several calls.
    ``layer``: a per-layer entry (setup, forward, backward of one function), or one that
    is not part of the step and goes with them, which a section too large for its budget
    may sample in one round out of a few (see ``Plan``).
    """

    def __init__(
        self,
        make_entry: EntryFactory,
        work: Callable[[], object],
        before: Optional[Callable[[], object]] = None,
        after: Optional[Callable[[], object]] = None,
        batchable: bool = True,
        layer: bool = False,
        before_probe: Optional["Probe"] = None,
        blocking: bool = False,
        known: Optional[Tuple[float, float]] = None,
    ):
        self.work, self.before, self.after = work, before, after
        # ``known``: (what the work costs, what a run with its before costs), ns, measured already: no warm-up run
        self.known = known
        # Work that waits (reads a file, writes a log): its CPU time is no measure of it; other work holding it up
        # shows in the thread's involuntary context switches instead.
        self.blocking = blocking
        self.batchable = batchable and before is None and after is None and before_probe is None
        self.layer = layer
        # ``before_probe``: the work before each sample is that (earlier) probe's, timed as one of its
        # samples: the forward pass before a backward_all is a forward_all like any other.
        self.before_probe = before_probe
        self.fed = False  # all this probe's samples come as other probes' before (see feeds)
        self._opened = -1  # the round its own turn opened (a fed probe's samples go into it)
        self._pending: List[tuple] = []  # samples fed before its turn in this round
        if before_probe is not None:
            before, self.before = before_probe.work, before_probe.work
        self.series = [Series(make_entry)]
        self.per_round = 1  # samples per round, chosen at warm-up
        self.rewarm = False  # an untimed run before each round's samples (short entries)
        self.estimate = math.inf  # the fastest warm-up call, ns
        self.warm_ns = 0.0  # what one warm-up cost in all: before, the call, after

    def warm(self, timer: Timer, fixed: bool) -> None:
        """The untimed warm-up runs; they size the batches and the samples per round (a probe
        that is fed needs none: the probes it feeds run its work in their own warm-up)."""
        if self.fed:
            self.configure(timer, fixed)
            return
        if self.known is not None:
            self.estimate, self.warm_ns = self.known
            self.configure(timer, fixed)
            return
        now = timer.clock.now_ns
        t0 = now()
        self.estimate = timer.warm_up(self.work, self.before)
        if self.after is not None and timer.sampling.warmup:
            self.after()
        self.warm_ns = (now() - t0) / max(1, timer.sampling.warmup)
        self.configure(timer, fixed)

    def configure(self, timer: Timer, fixed: bool, lean: bool = False) -> None:
        """Calls per sample and samples per round; lean: one sample a round.

        Lean rounds keep the re-warm and the batches sized for 1% of timing overhead: single
        cold calls, or batches sized for 3% or 10%, read 10% to 50% off the figures of normal
        rounds on an unrolled LSTM's layers (measured while choosing this; see docs/measuring.md).
        """
        s = self.series[0]
        s.calls = timer.calls_per_sample(self.estimate, self.batchable)
        s.overhead_ns = timer.overhead_ns / s.calls
        sample = self.estimate * s.calls
        self.per_round = 1 if fixed or lean else _per_round(sample)
        self.rewarm = sample < REWARM_BELOW_NS

    def replan(self, timer: Timer) -> None:
        """Samples a round, from the spread its samples have shown (``allocation.per_round``): up to what a
        round's share of the budget allows (``_per_round``)."""
        s = self.series[0]
        if not math.isfinite(self.estimate):
            return
        extra = max(0.0, self.warm_ns - self.estimate)
        sample = extra + s.calls * self.estimate + timer.overhead_ns
        fixed = (self.estimate + extra if self.rewarm else 0.0) + PROBE_NS
        best = per_round(s.samples, s.round_sizes, fixed, sample, _per_round(s.calls * self.estimate))
        if best is not None:
            self.per_round = best

    def round_cost(self, timer: Timer) -> float:
        """The predicted cost of one round of this probe, ns (before and after included)."""
        if self.fed:
            return 0.0
        if not math.isfinite(self.estimate):
            return self.warm_ns
        extra = max(0.0, self.warm_ns - self.estimate)  # before, after and the timing itself
        calls = self.series[0].calls
        sample = extra + calls * self.estimate + timer.overhead_ns
        return self.per_round * sample + (self.estimate + extra if self.rewarm else 0.0)

    def feeds(self) -> None:
        """Take no samples of its own: the probes that have it as ``before_probe`` give it its samples."""
        self.fed = True

    def sample_before(self, timer: Timer, fixed: bool) -> None:
        """This probe's work, run as another probe's ``before``: one more sample of this round (the
        first only, with a fixed number of runs: one timed run per entry and round)."""
        s = self.series[0]
        if s.final or s.calls != 1 or not s.round_sizes or (fixed and s.round_sizes[-1] >= 1):
            self.work()
            return
        spent = timer.sample(self.work, 1)
        s.sample(spent, spent, timer.held, timer.taken)

    def take(self, timer: Timer, value: float, spent: float, held: bool, taken: Optional[float]) -> None:
        """A sample another item's run gave this (fed) probe: a whole pass a pass probe timed. Before the probe's
        own turn in the round, kept until it comes."""
        if self.series[0].final:
            return
        if self._opened == timer.round:
            self.series[0].sample(value, spent, held, taken)
        else:
            self._pending.append((value, spent, held, taken))

    def run_round(self, timer: Timer, fixed: bool) -> None:
        s = self.series[0]
        if s.final:
            return
        s.round_sizes.append(0)
        if self.fed:
            self._opened = timer.round
            pending, self._pending = self._pending, []
            for value, spent, held, taken in pending:
                s.sample(value, spent, held, taken)
            return
        if self.rewarm:
            self._rewarm()
        for _ in range(self.per_round):
            if self.before_probe is not None:
                self.before_probe.sample_before(timer, fixed)
            elif self.before is not None:
                self.before()
            spent = timer.sample(self.work, s.calls, self.blocking)
            held, taken = timer.held, timer.taken
            if self.after is not None:
                self.after()
            s.sample(spent / s.calls, spent, held, taken)

    def skip_round(self) -> None:
        """Another stratum's round: no sample, an empty round (rounds stay aligned across entries)."""
        s = self.series[0]
        self._pending = []
        if not s.final:
            s.round_sizes.append(0)

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

    def __init__(
        self,
        order: Sequence[Optional[EntryFactory]],
        run_pass: Callable[[object, object], None],
        before: Optional[Callable[[], object]] = None,
        timeline: Optional[Timeline] = None,
        phase: str = "forward",
        names: Sequence[Optional[str]] = (),
        details: Sequence[Optional[dict]] = (),
        whole: Optional[Probe] = None,
        between: Optional[Callable[[], object]] = None,
        between_ns: float = 0.0,
        estimate_ns: Optional[float] = None,
    ):
        self.order = list(order)  # an entry factory per function of the pass, None for a non-layer
        # ``whole``: a fed probe that takes a pass run without hooks as a sample, before the hooked pass of each
        # round; ``between``: what the hooked pass needs after it (a backward pass, the forward pass that the lean
        # one's clearing took), ``between_ns`` its cost; ``estimate_ns``: what a pass costs, known already (no
        # warm-up run of its own)
        self.whole, self.estimate_ns = whole, estimate_ns
        self.between, self.between_ns = between, between_ns
        self.run_pass, self.before = run_pass, before
        self.series = [Series(f) for f in self.order if f is not None]
        self._slots = [i for i, f in enumerate(self.order) if f is not None]
        self.timeline, self.phase = timeline, phase
        self.names, self.details = list(names), list(details)
        self.rounds = 0
        self.warm_ns = 0.0
        self.layer = False

    def warm(self, timer: Timer, fixed: bool) -> None:
        if self.estimate_ns is not None:  # the section's first step ran every function of the pass already
            self.warm_ns = self.estimate_ns
            for s in self.series:
                s.overhead_ns = timer.hook_inside_ns
            return
        now = timer.clock.now_ns
        t0 = now()
        for _ in range(timer.sampling.warmup):
            if self.before is not None:
                self.before()
            self.run_pass(None, None)
        self.warm_ns = (now() - t0) / max(1, timer.sampling.warmup)
        for s in self.series:  # the hooks' cost inside each function's interval
            s.overhead_ns = timer.hook_inside_ns

    def round_cost(self, timer: Timer) -> float:
        if self.whole is None or self.whole.series[0].final:
            return self.warm_ns
        return 2 * self.warm_ns + self.between_ns

    def _lean_pass(self, timer: Timer, whole: Probe) -> None:
        """The pass as a whole, without hooks: what it takes without nnprofile's readings, not a hooked pass less
        an estimate of what the hooks cost (794 small functions' estimate errs by several percent of the pass)."""
        if self.before is not None:
            self.before()
        spent = timer.sample(lambda: self.run_pass(None, None), 1)
        whole.take(timer, float(spent), spent, timer.held, timer.taken)

    def run_round(self, timer: Timer, fixed: bool) -> None:
        whole = self.whole if self.whole is not None and not self.whole.series[0].final else None
        layers = not all(s.final for s in self.series)
        if whole is not None:
            self._lean_pass(timer, whole)
            if not layers:
                return
            if self.between is not None:  # the lean pass cleared what the hooked one needs (its forward pass)
                self.between()
        elif not layers:
            return
        starts: List[int] = []
        ends: List[int] = []
        cpu: List[int] = []
        pre, post = timing_hooks(timer, starts, ends, cpu)
        if self.before is not None:
            self.before()
        now = timer.clock.now_ns
        t0 = now()
        self.run_pass(pre, post)
        spent = now() - t0
        if len(starts) != len(self.order) or len(ends) != len(self.order):
            raise ProfileError(
                "graph mode: a pass ran %d functions where %d were expected; "
                "use --mode isolated" % (len(starts), len(self.order))
            )
        marked = len(cpu) == 2 * len(starts)
        for s, i in zip(self.series, self._slots):
            if not s.final:
                s.round_sizes.append(0)
                wall, on_cpu = ends[i] - starts[i], cpu[2 * i + 1] - cpu[2 * i] if marked else 0
                held = marked and shortfall(starts[i], ends[i], cpu[2 * i], cpu[2 * i + 1], "cpu")
                s.sample(wall, spent, held, float(max(0, wall - on_cpu)) if held else None)
        self.rounds += 1
        if self.timeline is not None:
            self.timeline.add_pass(self.rounds, self.phase, t0, t0 + spent, starts, ends, self.names, self.details)


class Action:
    """Untimed work between the probes of a round: it runs only while a later probe still samples.

    ``layer``: work for the layer entries only (fresh buffers before them), skipped in rounds
    without them.
    """

    series: List[Series] = []

    def __init__(
        self, work: Callable[[], object], layer: bool = False, lean_only: bool = False, costs_as: Optional[Probe] = None
    ):
        self.work = work
        self.layer = layer
        # Runs only when the plan is lean (see RoundRunner.run), and not in the warm-up pass: its cost
        # is taken as that of ``costs_as``, a probe of the same work.
        self.lean_only = lean_only
        self.costs_as = costs_as
        self.warm_ns = 0.0

    def warm(self, timer: Timer, fixed: bool) -> None:
        """In the warm-up pass too (fresh state for the probes that follow), when there is one."""
        if timer.sampling.warmup and not self.lean_only:
            now = timer.clock.now_ns
            t0 = now()
            self.work()
            self.warm_ns = float(now() - t0)

    def round_cost(self, timer: Timer) -> float:
        if self.costs_as is not None:
            return self.costs_as.warm_ns
        return self.warm_ns

    def run_round(self, timer: Timer, fixed: bool) -> None:
        self.work()


Item = Union[Probe, PassProbe, Action]
