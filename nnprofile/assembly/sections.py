"""A recorded program's graphs and steps made sections of a profile: one per graph, and the program's step.

Each kept step is a round of the profile: an entry's samples are its calls, its round sizes the
calls per step (a validation pass every five steps: one round in five holds its samples). A
graph's section holds its layers' forward and backward and its whole passes; the program's
section the rest of the step: each iterator's wait, each solver's calls, each monitor, each
communicator call, the eager work (functions called on NdArrays, by the line that called them)
and the whole step. What the hooks cost, as measured, is taken off every function's time and off
the passes and steps they sit in; nnprofile's own work between the program's calls (reading
parameter names) is not part of any step. The timeline holds the kept steps' events.

A call that ran others inside it (``nnprofile.assembly.tree``) keeps its whole time, their timing's
cost taken off; its entry lists its children, and the timeline nests them inside it. Where a graph's
functions cover less than COVERED of its passes, the rest is an entry of its own (``engine``): the
graph engine's work between functions (allocating, and clearing buffers where the call asks for it).
"""
from __future__ import annotations

import bisect
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base import buffers
from ..base.choices import GRAPH, OUTSIDE, PHASES, SCRIPT
from ..base.hookcost import HookCosts
from ..base.series import RoundSeries, SeriesTable
from ..result import Entry, Section
from ..result.layer import Layer
from ..result.timeline import TimelineEvent
from .events import (EAGER, Call, Capture, CommCall, InputCall, MonitorCall, SolverCall, depth_of, disturbed,
                     shortfall)
from .interference import disturbance_rate
from .tree import descendants
from .graphs import Graph, Namer, layer_keys
from .passes import Pass, group_passes

SOLVER_PHASES = {"zero_grad": "prepare_backward", "weight_decay": "weight_decay", "update": "update"}
# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000
COVERED = 0.9   # a graph's functions covering less of its passes: the rest is an engine entry
_LAST = float("inf")
UNRESOLVED = 0.9  # the hooks' cost inside a call, as a share of it, beyond which it is not taken off
OWN_LINES = 12    # the program's own lines a step's section keeps (the most sampled)


def merged(intervals: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """Intervals joined where they overlap (nnprofile's own work can hold more of its own), in order."""
    out: List[Tuple[int, int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def overlap(start: int, end: int, excluded: Sequence[Tuple[int, int]]) -> int:
    """How much of [start, end) nnprofile's own work took (``excluded``: merged intervals, in order): found by
    bisection, so that every call of a long window can ask."""
    i = max(0, bisect.bisect_right(excluded, (start, _LAST)) - 1)
    total, n = 0, len(excluded)
    while i < n:
        a, b = excluded[i]
        if a >= end:
            break
        if b > start:
            total += min(b, end) - max(a, start)
        i += 1
    return total


class Builder:
    """Makes the sections of a recording's kept steps (``kept``: their indexes among ``per_step``)."""

    def __init__(self, capture: Capture, costs: HookCosts, name: str, labels: List[str], kept: List[int],
                 per_step: List[List[Any]], bounds: List[Tuple[int, int]], plain: Optional[set] = None,
                 kids: Optional[Dict[int, List[Any]]] = None):
        self.capture, self.costs, self.name, self.labels = capture, costs, name, labels
        self.functions = capture.graph.functions
        self.excluded = merged(capture.excluded)
        self.kept, self.per_step, self.bounds = kept, per_step, bounds
        self.plain = plain or set()  # the steps run without the hooks
        self.kids = kids or {}       # id(call) -> the calls that ran inside it
        self.unresolved: List[Tuple[str, float, float]] = []  # (label, mean, the hooks' cost) shown as measured
        self.timeline: List[TimelineEvent] = []
        self.origin = bounds[kept[0]][0] if kept else 0
        self.layers: Dict[str, Dict[Any, Layer]] = {}  # graph name -> layer key -> layer
        # other work's disturbances per ns of the program's calls (``interference.disturbance_rate``)
        self.switch_rate = disturbance_rate(per_step, kept, capture.marks)
        self._events_per_step: Dict[int, int] = {}

    def span(self, call: Any) -> float:
        """A call's time, nnprofile's own work inside it (the sampler's, its wrappers') left out."""
        start, end = getattr(call, "start_ns", 0), getattr(call, "end_ns", 0)
        return float(end - start - overlap(start, end, self.excluded))

    def signature(self, call: Call, phase: str = "forward") -> Optional[str]:
        """The call's key among the hooks' costs measured per signature (its backward's for a backward call)."""
        f = self.functions.get(call.function)
        return self.costs.key(self.capture.graph.signature(f) if f is not None else None, phase)

    def own_cost(self, call: Call, phase: str = "forward") -> float:
        """What the hooks' eviction adds to a call's own time (the part beyond their fixed cost; none for a
        function measured on replicas, which held their own)."""
        c, key = self.costs, self.signature(call, phase)
        if call.kind == "static" and c.measured(key):
            return 0.0
        return c.eviction * max(0.0, self.span(call) - c.inside(call.kind, key))

    def hook_total(self, calls: Sequence[Call], phase: str = "forward") -> float:
        """What the hooks added to a stretch of these calls: each call's whole cost and its eviction."""
        c = self.costs
        return sum(c.total(x.kind, self.signature(x, phase)) + self.own_cost(x, phase) for x in calls)

    def resolved(self, label: str, mean: float, off: float) -> float:
        """The hooks' cost to take off a call of mean ``mean``: none where it would leave (almost) nothing of a call
        that ran, which is then shown as measured and said (``unresolved``): no layer that ran reads zero."""
        if mean > 0 and off >= UNRESOLVED * mean:
            self.unresolved.append((label, mean, off))
            return 0.0
        return off

    def inner(self, call: Any) -> Tuple[List[Any], float]:
        """The calls inside ``call`` and what timing them added to its time."""
        inside = descendants(call, self.kids)
        if not inside:
            return inside, 0.0
        return inside, sum(self.costs.total(x.kind, self.signature(x)) + self.own_cost(x)
                           if isinstance(x, Call) else 0.0 for x in inside)

    def children(self, calls: Sequence[Tuple[Any, float]]) -> List[Dict[str, Any]]:
        """Each kind of child of these calls (``(call, hooks inside it)``): its calls per parent call and mean."""
        kinds: Dict[str, List[float]] = {}
        order: List[str] = []
        types: Dict[str, str] = {}
        for call, _ in calls:
            for child in self.kids.get(id(call), []):
                label, kind = self._child_label(child)
                if label not in kinds:
                    kinds[label] = []
                    order.append(label)
                    types[label] = kind
                kinds[label].append(self.span(child))
        n = max(1, len(calls))
        return [{"label": label, "type": types[label], "calls": round(len(kinds[label]) / n, 4),
                 "mean_ms": round(sum(kinds[label]) / len(kinds[label]) / 1e6, 6)} for label in order]

    def _child_label(self, child: Any) -> Tuple[str, str]:
        if isinstance(child, Call):
            f = self.functions.get(child.function)
            kind = f.type if f is not None else "function"
            how = {"eager": "on NdArrays", "dynamic": "auto_forward"}.get(child.kind, "graph")
            return "%s (%s)" % (kind, how), kind
        if isinstance(child, SolverCall):
            label = self.labels[child.solver] if child.solver < len(self.labels) else "solver"
            return "%s (%s)" % (child.method, label), "solver"
        if isinstance(child, InputCall):
            return "load_dataset (%s)" % self.capture.iterators[child.iterator].name, "input"
        if isinstance(child, MonitorCall):
            return "monitor (%s)" % child.monitor, "monitor"
        return "%s (communicator)" % getattr(child, "method", "call"), "communication"

    def _nested_events(self, call: Any) -> None:
        """The calls inside ``call``, nested inside it on the timeline."""
        o = self.origin
        for child in descendants(call, self.kids):
            label, _ = self._child_label(child)
            self.timeline.append(TimelineEvent(label, "inside", child.start_ns - o, child.end_ns - o,
                                               {"depth": getattr(child, "depth", 1)}))

    def pass_hooks(self, p: Pass) -> float:
        """What the hooks added inside a pass (from its first function's start to its last one's end): each
        call's cost, but the part of each stretch's last one's that falls after its end, outside the pass."""
        c = self.costs
        after = 0.0
        for _, _, last in p.spans():
            key = self.signature(last, p.phase)
            after += c.total(last.kind, key) - c.inside(last.kind, key)
        return self.hook_total(p.calls, p.phase) - after

    def hit(self, call: Any) -> bool:
        """Whether other work kept the program from running while the call ran (its marks)."""
        return disturbed(call, self.capture.marks)

    def gaps_hit(self, p: Pass) -> bool:
        """Whether other work kept the program from running between a pass's functions (not inside one: that one's
        excess is taken off its pass)."""
        calls = p.calls
        first, last = calls[0], calls[-1]
        if self.capture.marks == "cpu":
            inside = sum((c.end_ns - c.start_ns) - (c.m1 - c.m0) for c in calls if self.hit(c))
            return shortfall(first.start_ns, last.end_ns - int(inside), first.m0, last.m1, "cpu")
        return last.m1 - first.m0 > sum(c.m1 - c.m0 for c in calls)

    def waited(self, start: int, end: int, field: int = 1) -> float:
        """What other work took of [start, end): the time the thread waited for a CPU (``field`` 2: its involuntary
        context switches), from the readings taken as steps ended (``Capture.waits``), each side interpolated between
        the readings around it; 0 where none were read."""
        waits = self.capture.waits
        if len(waits) < 2:
            return 0.0
        return max(0.0, _waited_at(waits, end, field) - _waited_at(waits, start, field))

    def function_time(self, call: Call, inner: float, phase: str) -> float:
        """A function's own time in a pass as its entry counts it: the calls inside it and the hooks' cost inside it
        taken off (so that the pass's rest, between its functions, is what the entries leave of it)."""
        took = max(0.0, self.span(call) - inner)
        return max(0.0, took - self.costs.taken_off(took, call.kind, self.signature(call, phase)))

    def pass_time(self, p: Pass) -> float:
        """The time a pass ran (its stretches: an auto_forward graph's calls among another's), nnprofile's own work
        left out."""
        return float(sum(end - start - overlap(start, end, self.excluded) for start, end, _ in p.spans()))

    # -- a graph ---------------------------------------------------------------------

    def graph_section(self, graph: Graph, outside: Optional[Tuple[Sequence[int], str]] = None) -> Section:
        """A graph's section over the kept steps; ``outside``: over these of its passes' indexes instead (a graph that
        ran only outside the kept steps), and where that was, said. Only the kept steps' calls are on the timeline."""
        section = Section(kind=GRAPH, name=graph.name, network="", complete=True)
        rounds_of = self.kept if outside is None else list(outside[0])
        timeline = outside is None
        layers: Dict[Any, Layer] = self.layers.setdefault(graph.name, {})
        namer = Namer(self.capture.graph)

        def layer(key: Any, call: Call) -> Layer:
            known = layers.get(key)
            if known is None:
                info = self.functions[call.function]
                known = layers[key] = Layer(info, self.capture.graph, namer.name(info), layer_id=len(layers))
            return known
        first = next(i for i, p in enumerate(graph.passes) if p)
        for key, call, _ in layer_keys(graph, first):  # names follow first sight, in execution order
            layer(key, call)
        forward, backward, whole, engine = SeriesTable(), SeriesTable(), SeriesTable(), SeriesTable()
        ran: List[Tuple[int, str, float, List[Tuple[Any, float, bool]], bool]] = []
        parents: Dict[Tuple[str, Any], List[Tuple[Any, float]]] = {}
        clears: Dict[str, str] = {}
        for i in rounds_of:
            for table in (forward, backward):
                table.next_round()
            for key, call, phase in layer_keys(graph, i):
                known = layer(key, call)
                inside, cost = self.inner(call)
                (forward if phase == "forward" else backward).get(key).add(max(0.0, self.span(call) - cost),
                                                                           self.hit(call))
                if inside:
                    parents.setdefault((phase, key), []).append((call, cost))
                    if timeline:
                        self._nested_events(call)
                if timeline:
                    self._layer_event(i, known, phase, call)
            keyed = {id(call): key for key, call, _ in layer_keys(graph, i)}
            for p in graph.passes[i]:
                inner = [self.inner(c)[1] for c in p.calls]  # the timing of calls inside its functions
                passed = max(0.0, self.pass_time(p) - self.pass_hooks(p) - sum(inner))
                took = [(keyed.get(id(c)), self.function_time(c, x, p.phase), self.hit(c)) for c, x in zip(p.calls, inner)]
                # other work between its functions (not inside one: that one's excess is taken off, below)
                gaps_hit = self.gaps_hit(p)
                ran.append((i, p.phase, passed, took, gaps_hit))
                site = self.capture.sites.get(p.site) if p.site is not None else None
                if site is not None and site.clears:
                    clears[p.phase] = site.clears
                if timeline:
                    self._pass_event(graph, section.title, p)
        entries: List[Entry] = []
        for table, phase in ((forward, "forward_function"), (backward, "backward_function")):
            for key, s in table.series.items():
                known = layers[key]
                kind = "dynamic" if graph.dynamic and phase == "forward_function" else "static"
                mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
                cost_key = self.costs.key(self.capture.graph.signature(known.info),
                                          "backward" if phase == "backward_function" else "forward")
                e = known.entry(phase, s.samples, 1, self.resolved(known.label(phase), mean,
                                                                   self.costs.taken_off(mean, kind, cost_key)))
                e.round_sizes = s.round_sizes
                e.disturbed, e.switch_rate = list(s.disturbed), self.switch_rate
                calls = parents.get(("forward" if phase == "forward_function" else "backward", key), [])
                if calls:
                    e.children = self.children(calls)
                entries.append(e)
        self._whole_passes(ran, rounds_of, entries, layers, whole, engine)
        for phase in ("forward", "backward"):
            if phase in whole.series:
                entries.append(_entry("%s_all" % phase, "%s_all" % phase, whole.series[phase]))
        for phase in ("forward", "backward"):  # the rest of a pass its functions leave, where it is large
            gaps, passes = engine.series.get(phase), whole.series.get(phase)
            if gaps is None or passes is None or not passes.samples:
                continue
            if sum(gaps.samples) > (1 - COVERED) * sum(passes.samples):
                how = ("clearing buffers (%s=True)" % clears[phase] if phase in clears else
                       "the program's Python making them (auto_forward)" if graph.dynamic and phase == "forward"
                       else "allocating")
                e = _entry("engine (%s: between functions, %s)" % (phase, how), "engine", gaps)
                entries.append(e)
        section.entries = entries
        rounds = max(1, len(self.kept))
        section.info = {
            "graph": graph.name, "dynamic": graph.dynamic,
            "trained_by": [self.labels[t] for t in graph.trained_by if t < len(self.labels)],
            "forward_per_step": _per_step(whole, "forward", rounds) if timeline else 0,
            "backward_per_step": _per_step(whole, "backward", rounds) if timeline else 0,
        }
        if outside is not None:
            section.info["outside"] = outside[1]
            section.info["passes"] = {phase: len(whole.series[phase].samples) for phase in ("forward", "backward")
                                      if phase in whole.series}
        return section

    def _whole_passes(self, passes: Sequence[Tuple[int, str, float, List[Tuple[Any, float, bool]], bool]],
                      rounds_of: Sequence[int], entries: List[Entry], layers: Dict[Any, Layer], whole: SeriesTable,
                      engine: SeriesTable) -> None:
        """Each pass's time, and the rest its functions leave (the engine's), into their tables. A function other work
        interrupted counts at its layer's undisturbed estimate: what the interruption added is taken off its pass,
        which is then no less a sample of the pass; a pass other work interrupted between its functions is marked."""
        estimate = {(e.phase, e.layer_id): e.stats.mean for e in entries}
        ids = {key: layer.id for key, layer in layers.items()}
        by_round = {i: [x for x in passes if x[0] == i] for i in rounds_of}
        for i in rounds_of:
            whole.next_round()
            engine.next_round()
            for _, phase, passed, took, gaps_hit in by_round[i]:
                name = "%s_function" % phase
                excess = sum(max(0.0, t - estimate.get((name, ids.get(k)), t)) for k, t, hit in took if hit)
                functions = sum(t for _, t, _ in took)
                whole.get(phase).add(max(0.0, passed - excess), gaps_hit)
                engine.get(phase).add(max(0.0, passed - functions), gaps_hit)

    def _pass_event(self, graph: Graph, title: str, p: Pass) -> None:
        o = self.origin
        self.timeline.append(TimelineEvent("%s (%s)" % (p.phase, graph.name), p.phase, p.start_ns - o, p.end_ns - o,
                                           {"graph": graph.name, "functions": len(p.calls), "section": title}))

    def _layer_event(self, step: int, layer: Layer, phase: str, call: Call) -> None:
        """A function call in the timeline (at most MAX_EVENTS_PER_STEP a step)."""
        count = self._events_per_step.get(step, 0) + 1
        self._events_per_step[step] = count
        if count > MAX_EVENTS_PER_STEP:
            return
        args = layer.trace_args(phase)
        args["source"] = self.functions[call.function].created
        o = self.origin
        self.timeline.append(TimelineEvent(layer.name, phase, call.start_ns - o, call.end_ns - o, args))

    # -- the program's step ------------------------------------------------------------

    def program_section(self) -> Section:
        capture, c = self.capture, self.costs
        section = Section(kind=SCRIPT, name=self.name, network="", complete=True)
        tables = _Tables()
        step = SeriesTable()
        step_waited: List[float] = []
        for i in self.kept:
            tables.next_round()
            step.next_round()
            events = self.per_step[i]
            start, end = self.bounds[i]
            step_passes = group_passes(events, capture.sites)
            hooks = self._tally(events, tables, step_passes)
            passes = sum(1 for p in step_passes if not p.dynamic)
            carried = c.carry if i - 1 not in self.plain else 0.0  # the step before had the hooks
            waited = self.waited(start, end)
            step.get("step").add(max(0.0, end - start - overlap(start, end, self.excluded) - hooks
                                     - passes * c.per_pass() - c.outside - carried - waited))
            step_waited.append(waited)
            self._step_events(i, events)
        entries = self._entries(tables)
        if "step" in step.series:
            entries.append(_entry("step", "step", step.series["step"]))
            if any(step_waited):
                entries[-1].waited_ns = step_waited
        entries.sort(key=lambda e: PHASES.index(e.phase))  # NNC's order; stable within a phase
        section.entries = entries
        section.info.update(self.own_lines())
        return section

    def outside_section(self, spans: Sequence[List[Any]], where: str) -> Section:
        """The program's own calls outside the kept steps (``spans``: before the first kept step, after the last
        step): each iterator's wait, each solver's and monitor's calls, the eager work; no step of theirs."""
        section = Section(kind=OUTSIDE, name=self.name, network="", complete=True)
        tables = _Tables()
        for events in spans:
            tables.next_round()
            self._tally(events, tables, group_passes(events, self.capture.sites), timeline=False)
        section.entries = sorted(self._entries(tables), key=lambda e: PHASES.index(e.phase))
        section.info = {"outside": where}
        return section

    def _tally(self, events: Sequence[Any], tables: "_Tables", step_passes: Sequence[Pass], timeline: bool = True) -> float:
        """The program's own calls among ``events`` into their tables (the calls inside each are its children); returns
        what the hooks cost the events' functions."""
        c = self.costs
        phase_of = {id(x): p.phase for p in step_passes for x in p.calls}
        hooks = 0.0
        for e in events:
            if isinstance(e, Call):
                phase = phase_of.get(id(e), "forward")
                hooks += c.total(e.kind, self.signature(e, phase)) + self.own_cost(e, phase)
            if depth_of(e):
                continue  # inside another call: in its parent's time, and listed as its child
            inside, cost = self.inner(e)
            took = max(0.0, self.span(e) - cost)
            key: Any = None
            if isinstance(e, Call):
                if e.kind == EAGER:  # by function type and the program's line (any shapes)
                    f = self.functions[e.function]
                    key = ("eager", f.type, f.created)
                    tables.eager.get(key[1:]).add(took, self.hit(e))
            elif isinstance(e, InputCall):
                key = ("input", e.iterator)
                tables.inputs.get(e.iterator).add(took, self.hit(e))
            elif isinstance(e, SolverCall):
                key = ("solver", e.solver, e.method)
                tables.solvers.get((e.solver, e.method)).add(took, self.hit(e))
            elif isinstance(e, MonitorCall):
                key = ("monitor", e.monitor)
                tables.monitors.get(e.monitor).add(took, self.hit(e))
            elif isinstance(e, CommCall):
                key = ("comm", e.method)
                tables.comms.get(e.method).add(took, self.hit(e))
                tables.moved.setdefault(e.method, []).append(e.bytes)
            if inside and key is not None:
                tables.parents.setdefault(key, []).append((e, cost))
                if timeline:
                    self._nested_events(e)
        return hooks

    def _entries(self, tables: "_Tables") -> List[Entry]:
        """The entries of a program's calls (iterators, solvers, eager work, monitors, communication), NNC's phases."""
        capture, c = self.capture, self.costs
        entries: List[Entry] = []

        def add(e: Entry, key: Any) -> None:
            if key in tables.parents:
                e.children = self.children(tables.parents[key])
            entries.append(e)
        for it, s in tables.inputs.series.items():
            add(_entry("load_dataset (%s)" % capture.iterators[it].name, "load_dataset", s), ("input", it))
        for (solver, method), s in tables.solvers.series.items():
            label = self.labels[solver] if solver < len(self.labels) else "solver %d" % (solver + 1)
            add(_entry("%s (%s)" % (method, label), SOLVER_PHASES.get(method, "solver"), s), ("solver", solver, method))
        for (kind, created), s in tables.eager.series.items():
            e = _entry("eager (%s at %s)" % (kind, _short(created)), "eager", s)
            mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
            e.overhead_ns, e.layer_type, e.source = self.resolved(e.label, mean, c.taken_off(mean, "eager")), kind, created
            add(e, ("eager", kind, created))
        for monitor, s in tables.monitors.series.items():
            add(_entry("monitor (%s)" % monitor, "monitor_loss", s), ("monitor", monitor))
        kind = capture.communicators[0] if capture.communicators else "communicator"
        for method, s in tables.comms.series.items():
            e = _entry("%s (%s)" % (method, kind), "communication", s)
            sizes = tables.moved.get(method, [])
            e.bytes_read = int(sum(sizes) / len(sizes)) if sizes else None  # bytes per call
            add(e, ("comm", method))
        return entries

    def own_lines(self) -> Dict[str, Any]:
        """The program's own lines in the kept steps, as sampled between NNabla's calls: each line's samples
        (the most first, at most OWN_LINES), and the samples in all (``other`` is shared out by them)."""
        samples = self.capture.samples
        if not samples or not self.kept:
            return {}
        times = [t for t, _ in samples]
        counts: Dict[int, int] = {}
        for i in self.kept:
            start, end = self.bounds[i]
            for _, where in samples[bisect.bisect_left(times, start):bisect.bisect_left(times, end)]:
                counts[where] = counts.get(where, 0) + 1
        total = sum(counts.values())
        if not total:
            return {}
        sites = self.capture.sample_sites
        top = sorted(counts.items(), key=lambda kv: -kv[1])[:OWN_LINES]
        return {"own_samples": total, "own_lines": [
            ["%s:%d" % (_base(sites[w][0]), sites[w][1]), sites[w][2], sites[w][3], n] for w, n in top]}

    def _step_events(self, i: int, events: Sequence[Any]) -> None:
        o = self.origin
        number = i + 1
        start, end = self.bounds[i]
        self.timeline.append(TimelineEvent("step %d" % number, "step", start - o, end - o, {"step": number}))
        for e in events:
            if depth_of(e):
                continue  # nested inside its parent by ``_nested_events``
            if isinstance(e, Call):
                if e.kind == EAGER:
                    f = self.functions[e.function]
                    self.timeline.append(TimelineEvent("%s (eager)" % f.type, "eager", e.start_ns - o, e.end_ns - o,
                                                       {"source": f.created}))
            elif isinstance(e, SolverCall):
                label = self.labels[e.solver] if e.solver < len(self.labels) else "solver"
                self.timeline.append(TimelineEvent("%s (%s)" % (e.method, label), "update", e.start_ns - o,
                                                   e.end_ns - o))
            elif isinstance(e, InputCall):
                self.timeline.append(TimelineEvent("load_dataset (%s)" % self.capture.iterators[e.iterator].name,
                                                   "input", e.start_ns - o, e.end_ns - o))
            elif isinstance(e, MonitorCall):
                self.timeline.append(TimelineEvent("monitor (%s)" % e.monitor, "monitor", e.start_ns - o,
                                                   e.end_ns - o))
            elif isinstance(e, CommCall):
                self.timeline.append(TimelineEvent(e.method, "communication", e.start_ns - o, e.end_ns - o,
                                                   {"bytes": e.bytes}))

    # -- memory --------------------------------------------------------------------------

    def memory(self, section: Section) -> Dict[str, Any]:
        """The step memory of a (training) graph, estimated from its functions as first recorded."""
        layers = list(self.layers.get(section.name, {}).values())
        if not layers:
            return {}
        params = [v.id for v in self.capture.graph.variables.values() if v.parameter]
        return buffers.step_memory(
            [layer.info for layer in layers], self.capture.graph, [layer.name for layer in layers], params,
            layers[0].itemsize, training=bool(section.info.get("backward_per_step")),
            solver_state=sum(s.state_bytes for s in self.capture.solvers),
            measured="not measured for a recorded program (its steps are its own); the estimate "
                     "follows the functions of the graph as first recorded")


def _waited_at(waits: Sequence[Tuple[int, int, int]], at: int, field: int = 1) -> float:
    """The time waited for a CPU up to ``at`` (``field`` 2: the involuntary switches), interpolated between the
    readings around it."""
    k = bisect.bisect_right(waits, (at, _LAST, _LAST))
    if k == 0:
        return float(waits[0][field])
    if k == len(waits):
        return float(waits[-1][field])
    (t0, w0), (t1, w1) = (waits[k - 1][0], waits[k - 1][field]), (waits[k][0], waits[k][field])
    return w0 + (w1 - w0) * (at - t0) / (t1 - t0) if t1 > t0 else float(w1)


class _Tables:
    """A program's calls by kind, a round per step (or per span outside the steps)."""

    def __init__(self) -> None:
        self.inputs, self.solvers, self.monitors, self.comms, self.eager = (SeriesTable() for _ in range(5))
        self.moved: Dict[str, List[int]] = {}
        self.parents: Dict[Any, List[Tuple[Any, float]]] = {}

    def next_round(self) -> None:
        for table in (self.inputs, self.solvers, self.monitors, self.comms, self.eager):
            table.next_round()


def _per_step(whole: SeriesTable, phase: str, rounds: int) -> float:
    return round(sum(whole.series[phase].round_sizes) / rounds, 4) if phase in whole.series else 0


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _short(where: Optional[str]) -> str:
    """``train.py:120`` for a program's line (its folder left out: the label names a line)."""
    if not where:
        return "an unknown line"
    path, _, line = where.rpartition(":")
    return "%s:%s" % (path.replace("\\", "/").rsplit("/", 1)[-1], line)


def _entry(label: str, phase: str, s: RoundSeries, per_ns: float = 0.0) -> Entry:
    return Entry(label=label, phase=phase, samples_ns=[float(x) for x in s.samples], round_sizes=list(s.round_sizes),
                 disturbed=list(s.disturbed), switch_rate=per_ns if s.disturbed else 0.0)
