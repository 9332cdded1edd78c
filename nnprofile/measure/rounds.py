"""Sampling in rounds: every entry of a section a few samples per round, round after round.

A machine that slows down for a few seconds then touches every entry alike,
instead of the few that happened to be measured during the slow spell. The
per-round totals measure the machine's speed during the run
(``nnprofile.result.drift``); rounds that ran slower than the usual
speed are left out of every entry's mean (``nnprofile.base.stats.summarize_rounds``),
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
from typing import Callable, List, Optional, Sequence, Tuple

from ..result import Entry, Section
from ..result.details import Sampling
from ..result.drift import apply_drift, measure_drift
from ..base.stats import Drift
from .allocation import FIRST_PLAN, MARGIN, REPLAN, Allocation, Need, RoundLevels, shares
from .items import Action, Item, Probe, Series
from .machine_watch import Reference, Watch
from .plans import MIN_LAYER_ROUNDS, Plan, Stratum, make_plan
from .timing import Measurement, Timer

# In lean rounds, the heaviest layer entries keep their normal samples per round while that adds at
# most this share to a layer round's cost.
LEAN_EXTRA = 0.10
# A partial layer round (see RoundRunner._stratum) plans to use at most this share of what is left.
PARTIAL_SHARE = 0.9
# A fixed number of runs (``--runs``) takes up to this many times as many rounds while other work holds samples up.
FIXED_RETRIES = 3

EntryCallback = Callable[[Section, Entry], None]
RoundCallback = Callable[[Section, float], None]  # after each round: how far the section's sampling has got


class RoundRunner:
    """Runs a section's items round after round until the sampling rule holds."""

    def __init__(
        self,
        timer: Timer,
        on_entry: Optional[EntryCallback] = None,
        reference: bool = True,
        on_round: Optional[RoundCallback] = None,
    ):
        self.timer = timer
        self.on_entry = on_entry or (lambda section, entry: None)
        self.on_round = on_round or (lambda section, done: None)
        self.reference = Reference(timer) if reference else None

    def run(self, section: Section, items: Sequence[Item]) -> Drift:
        """Measure every entry of the items into ``section``, in their order; returns the drift seen.

        Entries are appended as they become final, in order. On a failure or
        Ctrl-C, every sample taken so far is kept: the remaining entries are
        appended with ``complete`` False, and the exception goes on. The
        section's ``sampling`` says what the budget allowed. The rounds' levels
        (``speed_levels``) the figures leave slow rounds out by are taken over
        every sample once sampling ends.
        """
        sampling = self.timer.sampling
        watch = Watch(self.timer)
        self._waited0 = watch.waited
        st = _State(items, not sampling.adaptive, sampling.drift_threshold, self._own())
        try:
            for item in items:
                _labelled(item, lambda: item.warm(self.timer, st.fixed))  # noqa: B023 (called at once)
            if not st.fixed:
                st.plan = self._plan(items, self._own() - st.started)
            while not all(s.final for s in st.all_series):
                self._round(section, st)
        except BaseException:
            st.stopped = "interrupted"
            for s in st.all_series[st.emitted :]:
                if s.samples:
                    section.entries.append(s.entry(st.drift, complete=False, per_ns=self.timer.held_rate()))
            raise
        finally:
            if st.rounds:
                st.drift = measure_drift(
                    (s.clean() for s in st.all_series),
                    st.rounds,
                    sampling.drift_threshold,
                    reference=section.reference_ns,
                )
                apply_drift([section], st.drift)
            section.sampling = self._sampling(st)
            section.interference = watch.taken(section)
        return st.drift

    def _round(self, section: Section, st: "_State") -> None:
        """One round: every item in it (as the plan and the shares say), then the rule, the shares again, the
        entries now final handed over."""
        clock, timer, items, plan = self.timer.clock, self.timer, st.items, st.plan
        timer.round += 1
        t0 = self._own()
        # Every entry gets its samples: the first round holds the layers, whatever the budget.
        layer_round = (
            st.rounds == 0
            or st.rounds >= st.next_layers
            and not (
                plan.lean
                and not self._fits(plan, st.round_costs, True, t0 - st.started)
                and self._fits(plan, st.round_costs, False, t0 - st.started)
            )
        )
        # A full layer round no longer fits, and some layer entries are short of their rounds:
        # those, the heaviest first, take what is left of the budget.
        stratum = None
        if not layer_round and plan.lean and st.rounds >= st.next_layers:
            stratum = self._stratum(items, plan, st.round_costs, t0 - st.started, st.rounds)
            layer_round = stratum is not None
            st.partial_rounds += layer_round
        if layer_round:
            st.next_layers = st.rounds + plan.layer_every
        part = self._participants(st, layer_round, stratum)
        predicted, ran_layers = 0.0, False
        for i, item in enumerate(items):
            if isinstance(item, Action):
                if (
                    (layer_round or not item.layer)
                    and (plan.lean or not item.lean_only)
                    and _pending(items, part, i, item, ran_layers)
                ):
                    item.run_round(timer, st.fixed)
                    predicted += item.round_cost(timer)
            elif part[i] is False or part[i] is None and not stratum.takes(item, clock.now_ns(), timer):  # type: ignore
                item.skip_round()  # type: ignore[union-attr]
            else:
                if not all(s.final for s in item.series):
                    predicted += item.round_cost(timer)
                    ran_layers = ran_layers or item.layer
                _labelled(item, lambda: item.run_round(timer, st.fixed))  # noqa: B023 (called at once)
        st.rounds += 1
        if self.reference is not None:
            section.reference_ns.append(round(self.reference.sample(), 1))
        st.levels.add_round([s.clean() for s in st.all_series])
        st.drift = Drift(tuple(st.levels.levels(section.reference_ns)), self.timer.sampling.drift_threshold)
        st.measured_ns = self._own() - st.started
        if stratum is None:  # (a partial round predicts neither kind of round)
            st.round_costs.append((layer_round, st.measured_ns + st.started - t0))
        st.scale = (st.measured_ns + st.started - t0) / predicted if predicted > 0 else 1.0
        st.stopped = self._decide(st)
        if not st.stopped and not st.fixed and st.rounds >= st.next_plan:
            self._allocate(st)
        st.emitted = self._emit(section, st.all_series, st.emitted, st.drift)
        apply_drift([section], st.drift)  # the levels so far; the entries emitted so far
        self.on_round(section, 1.0 if st.stopped else self._done(st.rounds, st.measured_ns))

    def _participants(self, st: "_State", layer_round: bool, stratum: Optional[Stratum]) -> List[Optional[bool]]:
        """Per item: in this round (True), not (False), or as the partial layer round decides when it comes to
        it (None); an entry's share of the rounds is taken here, once a round."""
        part: List[Optional[bool]] = []
        for item in st.items:
            if isinstance(item, Action) or all(s.final for s in item.series):
                part.append(False)
            elif item.layer and not layer_round:
                part.append(False)
            elif item.layer and stratum is not None:
                part.append(None if isinstance(item, Probe) else False)
            elif isinstance(item, Probe) and item.layer and not item.fed and st.allocation.planned:
                part.append(st.allocation.takes(id(item)))
            else:
                part.append(True)
        return part

    def _allocate(self, st: "_State") -> None:
        """The per-layer entries' shares of the rounds to come, from the spread each has shown (see
        ``nnprofile.measure.allocation``); one at its target after ``min_rounds`` is final."""
        sampling, timer = self.timer.sampling, self.timer
        st.next_plan = max(st.rounds + 1, int(st.rounds * REPLAN))
        for item in st.items:  # the samples each takes in a round, by where its spread lies
            if isinstance(item, Probe) and not item.fed and not item.series[0].final:
                item.replan(timer)
        dropped = st.drift.dropped
        probes = [p for p in st.items if isinstance(p, Probe) and p.layer and not p.fed and not p.series[0].final]
        if not probes:
            return
        lean = 1.0 / st.plan.layer_every if st.plan.lean else 1.0
        needs = []
        for p in probes:
            k = st.index[id(p.series[0])]
            needs.append(
                Need(
                    st.levels.rounds_in(k, dropped),
                    st.levels.rse(k, dropped, p.series[0].overhead_ns),
                    _cost(p, timer),
                    lean,
                )
            )
        chosen = {id(p) for p in probes}
        fixed_ns = sum(
            _cost(item, timer)
            for item in st.items
            if id(item) not in chosen and not (item.series and all(s.final for s in item.series))
        )
        remaining = (sampling.max_seconds * 1e9 - st.measured_ns) / max(st.scale, 0.5)
        goal = MARGIN * sampling.target_rse
        planned, reachable = shares(
            needs, goal, sampling.min_rounds, remaining, fixed_ns, sampling.max_rounds - st.rounds
        )
        for p, share, ok in zip(probes, planned, reachable):
            s = p.series[0]
            if (
                ok
                and share <= 0
                and s.rounds_with_samples(dropped) >= sampling.min_rounds
                and s.rse(dropped, self.timer.held_rate()) <= goal
            ):
                s.final = True  # sure enough: its rounds go to the others
        st.allocation.plan([id(p) for p in probes], planned)

    def _sampling(self, st: "_State") -> Sampling:
        """What the budget allowed, as the section keeps it."""
        sampling = self.timer.sampling
        return Sampling(
            rounds=st.rounds,
            seconds=round(st.measured_ns / 1e9, 3),
            budget_seconds=None if st.fixed else sampling.max_seconds,
            lean=st.plan.lean,
            layer_every=st.plan.layer_every,
            stopped=st.stopped,
            shared_from=FIRST_PLAN + 1 if st.allocation.planned else None,
            partial_rounds=st.partial_rounds or None,
            partial_short_of=MIN_LAYER_ROUNDS if st.partial_rounds else None,
        )

    def _plan(self, items: Sequence[Item], elapsed_ns: float) -> Plan:
        """After the warm-up pass: lean rounds when normal rounds do not fit the budget."""
        sampling = self.timer.sampling
        # The layer entries, and the actions that refresh their buffers.
        layer_items = [item for item in items if item.layer]
        whole_ns = sum(item.round_cost(self.timer) for item in items if not item.layer)
        layer_normal = sum(item.round_cost(self.timer) for item in layer_items)
        remaining = sampling.max_seconds * 1e9 - elapsed_ns
        lean_ns = 0.0
        for item in layer_items:  # the lean cost of each, configured back if normal rounds fit
            if isinstance(item, Probe):
                item.configure(self.timer, False, lean=True)
            lean_ns += item.round_cost(self.timer)
        plan = make_plan(whole_ns, layer_normal, lean_ns, remaining, sampling.min_rounds)
        if not plan.lean:
            for item in layer_items:
                if isinstance(item, Probe):
                    item.configure(self.timer, False)
            return plan
        # The heaviest layer entries (few, and the ones whose figures matter) keep their normal
        # samples per round, as long as that adds at most LEAN_EXTRA to a layer round.
        extra, allowed = 0.0, LEAN_EXTRA * lean_ns
        heavy = sorted(
            (p for p in layer_items if isinstance(p, Probe) and math.isfinite(p.estimate)),
            key=lambda p: -p.estimate * p.series[0].calls,
        )
        for p in heavy:
            one = p.round_cost(self.timer)
            p.configure(self.timer, False)
            more = p.round_cost(self.timer) - one
            if p.per_round == 1 or extra + more > allowed:
                p.configure(self.timer, False, lean=True)
                if extra + more > allowed:
                    break
                continue
            extra += more
        return plan

    def _stratum(
        self, items: Sequence[Item], plan: Plan, round_costs: List[Tuple[bool, float]], elapsed_ns: float, rounds: int
    ) -> Optional[Stratum]:
        """A partial layer round (see ``Stratum``), or None.

        When a slow spell makes a full lean layer round too long for what is left of the budget,
        the layer entries that have had fewer than MIN_LAYER_ROUNDS rounds still take what is
        left: the fewest rounds first, then the heaviest (those that make up the step), as many as
        fit beside the layers' untimed passes and the whole-step rounds still owed (this one's, and
        while every layer entry has two rounds, enough for ``min_rounds`` in all). Their predicted
        costs are scaled by what layer rounds really cost against the plan.
        """
        probes = [item for item in items if isinstance(item, Probe) and item.layer and not item.series[0].final]
        short = [p for p in probes if p.series[0].rounds_with_samples() < MIN_LAYER_ROUNDS]
        if not short:
            return None
        whole = _round_cost(plan, round_costs, False)
        layered = [ns for kind, ns in round_costs if kind][-3:]
        scale = 1.0
        if layered and plan.layer_ns > 0:
            scale = max(1.0, (sum(layered) / len(layered) - whole) / plan.layer_ns)
        actions = sum(
            item.round_cost(self.timer)
            for item in items
            if isinstance(item, Action) and item.layer and (plan.lean or not item.lean_only)
        )
        # An entry with one round has no error at all: its second round comes before the whole-step
        # entries' further rounds. Past that, those are owed their min_rounds first.
        fewest = min(p.series[0].rounds_with_samples() for p in short)
        owed = (1 if fewest < 2 else max(1, self.timer.sampling.min_rounds - rounds)) * whole
        # (a tenth kept back: a partial round's cost is a prediction, and the budget is a bound)
        rest = self.timer.sampling.max_seconds * 1e9 - elapsed_ns - owed
        left = PARTIAL_SHARE * rest / scale - actions
        # What follows the layers: their settling passes, and the whole-step entries.
        after = sum(
            item.round_cost(self.timer) for item in items if isinstance(item, Action) and item.layer and item.lean_only
        )
        end = self.timer.clock.now_ns() + self.timer.sampling.max_seconds * 1e9 - elapsed_ns - (owed - whole)
        chosen = set()
        for p in sorted(short, key=lambda p: (p.series[0].rounds_with_samples(), -p.round_cost(self.timer))):
            cost = p.round_cost(self.timer)
            if cost <= left:
                chosen.add(id(p))
                left -= cost
        return Stratum(chosen, end, (after + whole) * scale) if chosen else None

    def _decide(self, st: "_State") -> str:
        """Marks every series final when the rule holds; returns why ("" while sampling goes on)."""
        sampling = self.timer.sampling
        all_series, rounds, drift, plan = st.all_series, st.rounds, st.drift, st.plan
        reason = ""
        if not sampling.adaptive:
            # The runs asked for, undisturbed: an entry that has them is done; the rounds go on for those whose
            # samples other work held up (up to FIXED_RETRIES times as many rounds; an entry still short says so).
            wanted = sampling.runs or 1
            if rounds >= wanted:
                for s in all_series:
                    if not s.final and s.usable() >= wanted:
                        s.final = True
                if rounds >= FIXED_RETRIES * wanted or all(s.final for s in all_series):
                    reason = "runs"
        else:
            # An entry that has had its budget of timed work ends the sampling of all (a whole-step entry: every
            # round holds it), or its own (a per-layer entry whose share of the rounds is planned).
            # Lean: a round of the whole-step entries alone is the cheapest that can come next.
            next_round = _round_cost(plan, st.round_costs, not plan.lean)
            kept = rounds - len(drift.dropped)
            budget = sampling.max_seconds_per_entry * 1e9
            if st.allocation.planned:  # an entry that has had its budget is done; the others go on
                for k, s in enumerate(all_series):
                    if not s.final and k in st.allocated and s.spent_ns >= budget:
                        s.final = True
            dropped = drift.dropped
            steady = all(
                s.final
                or (
                    st.levels.rse(k, dropped, s.overhead_ns) <= sampling.target_rse
                    and st.levels.rounds_in(k, dropped) >= sampling.min_rounds
                )
                for k, s in enumerate(all_series)
            ) and all(s.final or s.rse(dropped, self.timer.held_rate()) <= sampling.target_rse for s in all_series)
            if steady and kept >= sampling.min_rounds and not drift.flagged:
                reason = "target"
            elif not plan.lean and any(
                s.spent_ns >= budget
                for k, s in enumerate(all_series)
                if not (st.allocation.planned and k in st.allocated)
            ):
                # (A lean plan has shared the section's budget out already: a whole pass may use it.)
                reason = "entry budget"
            elif st.measured_ns + next_round > sampling.max_seconds * 1e9:
                reason = "budget"
            elif rounds >= sampling.max_rounds:
                reason = "max rounds"
        if reason:
            for s in all_series:
                s.final = True
        return reason

    def _own(self) -> int:
        """The clock, less the time other work on the machine took from this thread since sampling began (its wait
        for a CPU): the budget is of the profile's own time, so that a busy machine gets the rounds a quiet one
        would."""
        now = self.timer.clock.now_ns()
        start = getattr(self, "_waited0", None)
        if start is None:
            return now
        waited = self.timer.probe.waited_ns()
        return now - (waited - start if waited is not None else 0)

    def _done(self, rounds: int, elapsed_ns: float) -> float:
        """How far sampling has got, for a progress bar: rounds of a fixed number, else the budget spent
        (sampling may stop sooner, when the target is reached)."""
        sampling = self.timer.sampling
        if not sampling.adaptive:
            return min(1.0, rounds / (sampling.runs or 1))
        return min(0.99, max(elapsed_ns / (sampling.max_seconds * 1e9), rounds / sampling.max_rounds))

    def _fits(self, plan: Plan, round_costs: List[Tuple[bool, float]], layer_round: bool, elapsed_ns: float) -> bool:
        """Whether a round of this kind fits in what is left of the budget."""
        return elapsed_ns + _round_cost(plan, round_costs, layer_round) <= self.timer.sampling.max_seconds * 1e9

    def _emit(self, section: Section, all_series: List[Series], emitted: int, drift: Drift) -> int:
        while emitted < len(all_series) and all_series[emitted].final:
            entry = all_series[emitted].entry(drift, per_ns=self.timer.held_rate())
            section.entries.append(entry)
            self.on_entry(section, entry)
            emitted += 1
        return emitted


class _State:
    """A section's sampling under way: its items and series, the rounds so far, the plan and the shares."""

    def __init__(self, items: Sequence[Item], fixed: bool, threshold: float, started: int):
        self.items = items
        self.fixed = fixed
        self.all_series: List[Series] = [s for item in items for s in item.series]
        self.index = {id(s): k for k, s in enumerate(self.all_series)}
        # the per-layer entries, whose shares of the rounds are planned (the whole-step ones are in every round)
        self.allocated = {self.index[id(item.series[0])] for item in items if isinstance(item, Probe) and item.layer}
        self.started = started
        self.rounds = self.emitted = self.partial_rounds = self.next_layers = 0
        self.next_plan = FIRST_PLAN
        self.measured_ns = 0
        self.scale = 1.0  # the last round's cost against its prediction
        self.round_costs: List[Tuple[bool, float]] = []  # (a layer round, ns) of each round
        self.plan = Plan()
        self.drift = Drift((), threshold)
        self.levels = RoundLevels()
        self.allocation = Allocation()
        self.stopped = ""


def _labelled(item: Item, run: Callable[[], object]) -> None:
    """Run an item's work; an exception says which entry was being measured."""
    try:
        run()
    except Exception as e:
        if not hasattr(e, "nnprofile_entry") and item.series:
            label = item.series[0].make_entry(Measurement([0.0])).label
            setattr(e, "nnprofile_entry", label)  # noqa: B010  (an attribute of nnprofile's on the exception)
        raise


def _cost(item: Item, timer: Timer) -> float:
    """What a round of an item costs: as predicted, or as its samples took where that is more."""
    predicted = item.round_cost(timer)
    if isinstance(item, Probe) and item.series:
        s = item.series[0]
        return max(predicted, s.spent_ns / max(1, s.rounds_with_samples()))
    return predicted


def _round_cost(plan: Plan, round_costs: List[Tuple[bool, float]], layer_round: bool) -> float:
    """What a round of this kind costs: the last ones of its kind, else the plan's prediction (a
    layer round: a whole-step round plus the layers)."""
    same = [ns for kind, ns in round_costs if kind == layer_round][-3:]
    if same:
        return sum(same) / len(same)
    if layer_round:
        whole = [ns for kind, ns in round_costs if not kind][-3:]
        return (sum(whole) / len(whole) if whole else plan.whole_ns) + plan.layer_ns
    layered = [ns for kind, ns in round_costs if kind][-3:]
    return min(plan.whole_ns, sum(layered) / len(layered)) if layered and plan.whole_ns else plan.whole_ns


def _pending(
    items: Sequence[Item], part: Sequence[Optional[bool]], index: int, action: "Action", ran_layers: bool
) -> bool:
    """Whether an action runs: a layer entries' refresh where a layer entry after it is in this round; the
    settling step after them where they ran; any other where any probe after it is."""
    if action.lean_only and not ran_layers:
        return False
    only_layers = action.layer and not action.lean_only
    return any(
        p is not False
        for item, p in zip(items[index + 1 :], part[index + 1 :])
        if not isinstance(item, Action) and (item.layer or not only_layers)
    )
