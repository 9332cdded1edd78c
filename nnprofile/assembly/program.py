"""A recorded program's own calls made sections (``nnprofile.assembly.sections``' other half): the step section
(each iterator's wait, each solver's calls, each monitor, each communicator call, the eager work by the line that
called it, and the whole step, less the hooks' cost, nnprofile's own work and the time the thread waited for a CPU)
and the section of the calls outside the kept steps; the program's own lines, and the steps' timeline events."""

from __future__ import annotations

import bisect
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Set, Tuple

from ..base.places import place, short
from ..base.choices import OUTSIDE, PART_OF_PHASE, PHASES, SCRIPT
from ..base.series import RoundSeries, SeriesTable
from ..result import Entry, Section
from ..result.details import SampledLine, SectionInfo
from ..result.timeline import TimelineEvent
from .calls import Calls
from .events import Call, CommCall, EAGER, Event, InputCall, MonitorCall, SolverCall, depth_of
from .intervals import overlap
from .lean import Lean, rescaled, scale_entry
from .roles import solver_label
from .passes import Pass, group_passes

SOLVER_PHASES = {
    "zero_grad": "prepare_backward",
    "weight_decay": "weight_decay",
    "update": "update",
    "save_states": "checkpoint",
    "load_states": "checkpoint",
}
OWN_LINES = 12  # the program's own lines a step's section keeps (the most sampled)


class ProgramSections:
    """Makes the program's sections from its own calls (``calls``, as the graphs' sections read them too): the kept
    steps' (``kept``: their indexes among ``per_step``, ``bounds`` each step's, ``plain`` those run without the
    hooks) and the calls outside them."""

    def __init__(
        self,
        calls: Calls,
        name: str,
        kept: List[int],
        per_step: List[List[Event]],
        step_passes: List[List[Pass]],
        bounds: List[Tuple[int, int]],
        plain: Set[int],
    ) -> None:
        self.calls, self.name, self.kept, self.per_step, self.bounds, self.plain = (
            calls,
            name,
            kept,
            per_step,
            bounds,
            plain,
        )
        self.step_passes = step_passes  # each step's passes (``group_passes``), as the assembly grouped them
        # The plain steps' figures (``nnprofile.assembly.lean``) and each pass's graph, where they were measured.
        self.lean: Optional[Tuple[Lean, Callable[[Pass], Optional[str]]]] = None

    def program_section(self) -> Section:
        c = self.calls.costs
        section = Section(kind=SCRIPT, name=self.name, network="", complete=True)
        tables = _Tables()
        step = SeriesTable()
        step_waited: List[float] = []
        for i in self.kept:
            tables.next_round()
            step.next_round()
            events = self.per_step[i]
            start, end = self.bounds[i]
            step_passes = self.step_passes[i]
            hooks = self._tally(events, tables, step_passes) - sum(self.calls.overshoot(p) for p in step_passes)
            waited = self.calls.waited(start, end)
            lean = self.lean[0].steps.get(i) if self.lean is not None else None
            if lean is not None:  # a step of the plain steps' shape: its gaps as they take without the hooks
                step.get("step").add(lean)
            else:
                off = hooks + sum(1 for p in step_passes if not p.dynamic) * c.per_pass()
                took = end - start - overlap(start, end, self.calls.excluded) - off - waited
                if self.lean is not None:  # (its passes as their sections show them, its rest as the typical steps')
                    took += rescaled(
                        self.lean[0], self.calls, step_passes, self.lean[1], self.lean[0].rests.get(i, 0.0)
                    )
                step.get("step").add(max(0.0, took))
            step_waited.append(waited)
            self._step_events(i, events)
        entries = self._entries(tables, self.lean[0].own if self.lean is not None else {})
        if "step" in step.series:
            entries.append(entry_of("step", "step", step.series["step"]))
            if any(step_waited):
                entries[-1].waited_ns = step_waited
        entries.sort(key=lambda e: PHASES.index(e.phase))  # NNC's order; stable within a phase
        section.entries = entries
        self.own_lines(section.info)
        return section

    def outside_section(self, spans: Sequence[List[Event]], where: str) -> Section:
        """The program's own calls outside the kept steps (``spans``: before the first kept step, after the last
        step): each iterator's wait, each solver's and monitor's calls, the eager work; no step of theirs."""
        section = Section(kind=OUTSIDE, name=self.name, network="", complete=True)
        tables = _Tables()
        for events in spans:
            tables.next_round()
            self._tally(events, tables, group_passes(events, self.calls.capture.sites), timeline=False)
        section.entries = sorted(self._entries(tables), key=lambda e: PHASES.index(e.phase))
        section.info = SectionInfo(outside=where)
        return section

    def _tally(
        self, events: Sequence[Event], tables: "_Tables", step_passes: Sequence[Pass], timeline: bool = True
    ) -> float:
        """The program's own calls among ``events`` into their tables (the calls inside each are its children); returns
        what the hooks cost the events' functions."""
        c = self.calls.costs
        phase_of = {id(x): p.phase for p in step_passes for x in p.calls}
        hooks = 0.0
        for e in events:
            if isinstance(e, Call):
                phase = phase_of.get(id(e), "forward")
                hooks += c.total(e.kind, self.calls.signature(e, phase)) + self.calls.own_cost(e, phase)
            if depth_of(e):
                continue  # inside another call: in its parent's time, and listed as its child
            inside, cost = self.calls.inner(e)
            took = max(0.0, self.calls.span(e) - cost)
            hit = self.calls.hit(e)
            held = (hit, self.calls.taken(e) if hit else None)
            key: Hashable = None
            if isinstance(e, Call):
                if e.kind == EAGER:  # by function type and the program's line (any shapes)
                    f = self.calls.functions[e.function]
                    key = ("eager", f.type, f.created)
                    tables.eager.get(key[1:]).add(took, *held)
            elif isinstance(e, InputCall):
                key = ("input", e.iterator)
                tables.inputs.get(e.iterator).add(took, *held)
            elif isinstance(e, SolverCall):
                key = ("solver", e.solver, e.method)
                tables.solvers.get((e.solver, e.method)).add(took, *held)
            elif isinstance(e, MonitorCall):
                key = ("monitor", e.monitor)
                tables.monitors.get(e.monitor).add(took, *held)
            elif isinstance(e, CommCall):
                key = ("comm", e.method)
                tables.comms.get(e.method).add(took, *held)
                tables.moved.setdefault(e.method, []).append(e.bytes)
            if inside and key is not None:
                tables.parents.setdefault(key, []).append((e, cost))
                if timeline:
                    self.calls.nested_events(e)
        return hooks

    def _entries(self, tables: "_Tables", factors: Optional[Dict[Hashable, float]] = None) -> List[Entry]:
        """The entries of a program's calls (iterators, solvers, eager work, monitors, communication), NNC's phases;
        ``factors``: what takes each to the plain steps' figure (``Lean.own``, by the tables' keys)."""
        capture, c = self.calls.capture, self.calls.costs
        entries: List[Entry] = []

        def add(e: Entry, key: Hashable) -> None:
            if factors and key in factors:
                scale_entry(e, factors[key])
            if key in tables.parents:
                e.children = self.calls.children(tables.parents[key])
            entries.append(e)

        for it, s in tables.inputs.series.items():
            add(entry_of("load_dataset (%s)" % capture.iterators[it].name, "load_dataset", s), ("input", it))
        for (solver, method), s in tables.solvers.series.items():
            label = solver_label(self.calls.labels, solver)
            add(
                entry_of("%s (%s)" % (method, label), SOLVER_PHASES.get(method, "solver"), s),
                ("solver", solver, method),
            )
        for (kind, created), s in tables.eager.series.items():
            e = entry_of("eager (%s at %s)" % (kind, _short(created)), "eager", s)
            mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
            e.overhead_ns, e.layer_type, e.source = (
                self.calls.resolved(e.label, mean, c.taken_off(mean, "eager")),
                kind,
                created,
            )
            add(e, ("eager", kind, created))
        for monitor, s in tables.monitors.series.items():
            add(entry_of("monitor (%s)" % monitor, "monitor_loss", s), ("monitor", monitor))
        kind = capture.communicators[0] if capture.communicators else "communicator"
        for method, s in tables.comms.series.items():
            e = entry_of("%s (%s)" % (method, kind), "communication", s)
            sizes = tables.moved.get(method, [])
            e.bytes_read = int(sum(sizes) / len(sizes)) if sizes else None  # bytes per call
            add(e, ("comm", method))
        return entries

    def own_lines(self, info: SectionInfo) -> None:
        """The program's own lines in the kept steps, as sampled between NNabla's calls, into the step's ``info``:
        each line's samples and the time it was found blocked a step (the most first, at most OWN_LINES), the
        samples in all (``other`` is shared out by them, what the lines waited first), the clock that took them."""
        capture = self.calls.capture
        if not (capture.samples or capture.blocked) or not self.kept:
            return
        counts = self._in_kept(capture.samples, lambda x: 1)
        waited = self._in_kept(capture.blocked, lambda x: x[2])
        total = sum(counts.values())
        if not total and not waited:
            return
        sites = capture.sample_sites
        steps = len(self.kept)
        order = sorted(set(counts) | set(waited), key=lambda w: -waited.get(w, 0) / steps / 1e6 - counts.get(w, 0))
        info.own_samples = total
        info.own_lines = [
            SampledLine(
                short(place(sites[w][0], sites[w][1])),
                sites[w][2],
                sites[w][3],
                counts.get(w, 0),
                round(waited.get(w, 0) / steps / 1e6, 6),
            )
            for w in order[:OWN_LINES]
        ]
        if capture.sample_clock[0]:
            kind, period = capture.sample_clock
            info.own_clock = (str(kind), float(period))

    def _in_kept(self, found: Sequence[Tuple[int, ...]], weight: Callable[[Tuple[int, ...]], int]) -> Dict[int, int]:
        """``found`` (time first, the line's index second) in the kept steps, each line's weights summed."""
        times = [x[0] for x in found]
        out: Dict[int, int] = {}
        for i in self.kept:
            start, end = self.bounds[i]
            for x in found[bisect.bisect_left(times, start) : bisect.bisect_left(times, end)]:
                out[x[1]] = out.get(x[1], 0) + weight(x)
        return out

    def _step_events(self, i: int, events: Sequence[Event]) -> None:
        o = self.calls.origin
        number = i + 1
        start, end = self.bounds[i]
        self.calls.timeline.append(TimelineEvent("step %d" % number, "step", start - o, end - o, {"step": number}))
        for e in events:
            if depth_of(e):
                continue  # nested inside its parent by ``_nested_events``
            if isinstance(e, Call):
                if e.kind == EAGER:
                    f = self.calls.functions[e.function]
                    self.calls.timeline.append(
                        TimelineEvent(
                            "%s (eager)" % f.type, "eager", e.start_ns - o, e.end_ns - o, {"source": f.created}
                        )
                    )
            elif isinstance(e, SolverCall):
                label = self.calls.labels[e.solver] if e.solver < len(self.calls.labels) else "solver"
                part = PART_OF_PHASE.get(SOLVER_PHASES.get(e.method, "solver"), "update")  # update, checkpoint
                self.calls.timeline.append(
                    TimelineEvent("%s (%s)" % (e.method, label), part, e.start_ns - o, e.end_ns - o)
                )
            elif isinstance(e, InputCall):
                self.calls.timeline.append(
                    TimelineEvent(
                        "load_dataset (%s)" % self.calls.capture.iterators[e.iterator].name,
                        "input",
                        e.start_ns - o,
                        e.end_ns - o,
                    )
                )
            elif isinstance(e, MonitorCall):
                self.calls.timeline.append(
                    TimelineEvent("monitor (%s)" % e.monitor, "monitor", e.start_ns - o, e.end_ns - o)
                )
            elif isinstance(e, CommCall):
                self.calls.timeline.append(
                    TimelineEvent(e.method, "communication", e.start_ns - o, e.end_ns - o, {"bytes": e.bytes})
                )


class _Tables:
    """A program's calls by kind, a round per step (or per span outside the steps)."""

    def __init__(self) -> None:
        self.inputs, self.solvers, self.monitors, self.comms, self.eager = (SeriesTable() for _ in range(5))
        self.moved: Dict[str, List[int]] = {}
        self.parents: Dict[Any, List[Tuple[Any, float]]] = {}

    def next_round(self) -> None:
        for table in (self.inputs, self.solvers, self.monitors, self.comms, self.eager):
            table.next_round()


def per_step_of(whole: SeriesTable, phase: str, rounds: int) -> float:
    return round(sum(whole.series[phase].round_sizes) / rounds, 4) if phase in whole.series else 0


def _short(where: Optional[str]) -> str:
    """``train.py:120`` for a program's line (its folder left out: the label names a line); a cell's as it is."""
    return short(where)


def entry_of(label: str, phase: str, s: RoundSeries, per_ns: float = 0.0) -> Entry:
    return Entry(
        label=label,
        phase=phase,
        samples_ns=[float(x) for x in s.samples],
        round_sizes=list(s.round_sizes),
        disturbed=list(s.disturbed),
        taken_ns=list(s.taken),
        switch_rate=per_ns if s.disturbed else 0.0,
    )
