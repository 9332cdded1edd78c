"""A recorded program's graphs and steps made sections of a profile: one per graph, and the program's step.

Each kept step is a round of the profile: an entry's samples are its calls, its round sizes the
calls per step (a validation pass every five steps: one round in five holds its samples). A
graph's section holds its layers' forward and backward and its whole passes; the program's
section the rest of the step: each iterator's wait, each solver's calls, each monitor, each
communicator call, the eager work (functions called on NdArrays, by the line that called them)
and the whole step. What the hooks cost, as measured, is taken off every function's time and off
the passes and steps they sit in; nnprofile's own work between the program's calls (reading
parameter names) is not part of any step. The timeline holds the kept steps' events. The program's
sections are made by the Builder's other half, ``nnprofile.assembly.program``.

A call that ran others inside it (``nnprofile.assembly.tree``) keeps its whole time, their timing's
cost taken off; its entry lists its children, and the timeline nests them inside it. Where a graph's
functions cover less than COVERED of its passes, the rest is an entry of its own (``engine``): the
graph engine's work between functions (allocating, and clearing buffers where the call asks for it).
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..base import buffers
from ..base.choices import GRAPH
from ..base.hookcost import HookCosts
from ..base.series import SeriesTable
from ..result import Entry, Section
from ..result.details import SectionInfo
from ..result.layer import Layer
from ..result.timeline import TimelineEvent
from .events import WAITS, Call, Capture, CommCall, InputCall, MonitorCall, SolverCall, disturbed, shortfall
from ..base.interference import CPU
from .interference import disturbance_rate
from .intervals import merged, overlap, waited_aside, waited_at
from . import hookfit
from .tree import descendants
from .graphs import Graph, Namer, layer_keys
from .passes import Pass
from .builds import places
from .program import BuilderParts, ProgramPart, entry_of, per_step_of

# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000
# A graph's functions covering less of its passes (the rest's mean against the pass's, other work's time taken off
# each): the rest is an engine entry. Under the 90% the coverage check asks for, so that a rest a little below it by
# the layers' own means is still named.
COVERED = 0.95
UNRESOLVED = 0.9  # the hooks' cost inside a call, as a share of it, beyond which it is not taken off


class PassRow(NamedTuple):
    """One pass as its section counts it (ns): its time, its functions' (the hooks' cost off each), what other work
    took inside its functions and between them (None: not known)."""

    step: int
    phase: str
    passed: float
    functions: float
    inside: float
    gaps: Optional[float]


class Builder(ProgramPart):
    """Makes the sections of a recording's kept steps (``kept``: their indexes among ``per_step``)."""

    def __init__(
        self,
        capture: Capture,
        costs: HookCosts,
        name: str,
        labels: List[str],
        kept: List[int],
        per_step: List[List[Any]],
        bounds: List[Tuple[int, int]],
        plain: Optional[set] = None,
        kids: Optional[Dict[int, List[Any]]] = None,
    ):
        self.capture, self.costs, self.name, self.labels = capture, costs, name, labels
        self.functions = capture.graph.functions
        self.excluded = merged(capture.excluded)
        self.kept, self.per_step, self.bounds = kept, per_step, bounds
        self.plain = plain or set()  # the steps run without the hooks
        self.kids = kids or {}  # id(call) -> the calls that ran inside it
        self.unresolved: List[Tuple[str, float, float]] = []  # (label, mean, the hooks' cost): a tenth shown
        self.timeline: List[TimelineEvent] = []
        self.origin = bounds[kept[0]][0] if kept else 0
        self.layers: Dict[str, Dict[Any, Layer]] = {}  # graph name -> layer key -> layer
        # other work's disturbances per ns of the program's calls (``interference.disturbance_rate``)
        self.switch_rate = disturbance_rate(per_step, kept, capture.marks)
        self._events_per_step: Dict[int, int] = {}
        # The collectives' own waits for a CPU (their marks, read inside them): a rank that waits for the others
        # polls, and is switched out as any spinning task is; that time is the others' to set, not other work's.
        self._comm_waits = sorted(
            (e.start_ns, max(0, e.m1 - e.m0))
            for e in capture.events
            if isinstance(e, CommCall) and not e.depth and e.m1 > e.m0
        )

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
        """The hooks' cost to take off a call of mean ``mean``: where it would leave (almost) nothing of a call that
        ran, only so much that a tenth of what was measured is left (1 - UNRESOLVED), and said (``unresolved``): no
        layer that ran reads zero, and the cost left in (``Entry.kept_cost_ns``) is small beside the pass's."""
        if mean > 0 and off >= UNRESOLVED * mean:
            self.unresolved.append((label, mean, off))
            return UNRESOLVED * mean
        return off

    def inner(self, call: Any) -> Tuple[List[Any], float]:
        """The calls inside ``call`` and what timing them added to its time."""
        inside = descendants(call, self.kids)
        if not inside:
            return inside, 0.0
        return inside, sum(
            self.costs.total(x.kind, self.signature(x)) + self.own_cost(x) if isinstance(x, Call) else 0.0
            for x in inside
        )

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
        return [
            {
                "label": label,
                "type": types[label],
                "calls": round(len(kinds[label]) / n, 4),
                "mean_ms": round(sum(kinds[label]) / len(kinds[label]) / 1e6, 6),
            }
            for label in order
        ]

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
            self.timeline.append(
                TimelineEvent(
                    label, "inside", child.start_ns - o, child.end_ns - o, {"depth": getattr(child, "depth", 1)}
                )
            )

    def pass_hooks(self, p: Pass) -> float:
        """What the hooks added inside a pass (from its first function's start to its last one's end): each
        call's cost, but the part of each stretch's last one's that falls after its end, outside the pass, and
        between them no more than there was (``overshoot``)."""
        after = sum(self.outside_cost(last, p) for _, _, last in p.spans())
        return self.hook_total(p.calls, p.phase) - after - self.overshoot(p)

    def overshoot(self, p: Pass) -> float:
        """What the hooks' cost between a pass's functions, as estimated, is above the time between them
        (``hookfit.overshoot``): not taken off the pass, nor off the step that holds it."""
        return hookfit.overshoot(p, self.outside_cost, self.excluded)

    def outside_cost(self, call: Call, p: Pass) -> float:
        """What the hooks add after a function of a pass, outside its own interval, as the costs stand."""
        return self.costs.between(call.kind, self.signature(call, p.phase))

    def hit(self, call: Any) -> bool:
        """Whether other work kept the program from running while the call ran (its marks)."""
        return disturbed(call, self.capture.marks)

    def taken(self, call: Any) -> Optional[float]:
        """What other work took of a call it held up: its wall time less the thread's CPU time (None where the marks
        are no CPU time: a wait, an asynchronous device)."""
        if self.capture.marks != CPU or isinstance(call, WAITS):
            return None
        return float(max(0, (call.end_ns - call.start_ns) - (call.m1 - call.m0)))

    def gap_taken(self, p: Pass) -> Optional[float]:
        """What other work took of a pass between its functions: each gap between two of them (within a stretch of
        the pass) whose CPU time falls short of its wall time, by that much; a gap that holds nnprofile's own work
        (left out of the pass already, with whatever held it up) is not read. None where no gap was held up."""
        if self.capture.marks != CPU:
            return None
        taken, hit = 0.0, False
        for calls in p.runs():
            for a, b in zip(calls, calls[1:]):
                if b.start_ns < a.end_ns or overlap(a.end_ns, b.start_ns, self.excluded):
                    continue
                if shortfall(a.end_ns, b.start_ns, a.m1, b.m0, CPU):
                    taken += (b.start_ns - a.end_ns) - (b.m0 - a.m1)
                    hit = True
        return taken if hit else None

    def waited(self, start: int, end: int, field: int = 1) -> float:
        """What other work took of [start, end): the time the thread waited for a CPU (``field`` 2: its involuntary
        context switches), from the readings taken where steps may begin and as nnprofile's own work ends
        (``Capture.waits``), each side interpolated between the readings around it, less what it waited inside
        nnprofile's own work (set aside already) and inside collectives (the other ranks'); 0 where none were
        read."""
        waits = self.capture.waits
        if len(waits) < 2:
            return 0.0
        taken = waited_at(waits, end, field) - waited_at(waits, start, field)
        if field == 1:
            taken -= waited_aside(waits, self.excluded, start, end)  # (nnprofile's own work: set aside already)
            if self._comm_waits:
                taken -= sum(w for at, w in self._comm_waits if start <= at < end)
        return max(0.0, taken)

    def function_time(self, call: Call, inner: float, phase: str) -> float:
        """A function's own time in a pass as its entry counts it: the calls inside it and the hooks' cost inside it
        taken off (so that the pass's rest, between its functions, is what the entries leave of it)."""
        took = max(0.0, self.span(call) - inner)
        return max(0.0, took - self.costs.taken_off(took, call.kind, self.signature(call, phase)))

    def pass_time(self, p: Pass) -> float:
        """The time a pass ran (its stretches: an auto_forward graph's each function from where NNabla began making it),
        nnprofile's own work left out."""
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
        ran: List[PassRow] = []
        parents: Dict[Tuple[str, Any], List[Tuple[Any, float]]] = {}
        clears: Dict[str, str] = {}
        for i in rounds_of:
            for table in (forward, backward):
                table.next_round()
            for key, call, phase in layer_keys(graph, i):
                known = layer(key, call)
                inside, cost = self.inner(call)
                hit = self.hit(call)
                (forward if phase == "forward" else backward).get(key).add(
                    max(0.0, self.span(call) - cost), hit, self.taken(call) if hit else None
                )
                if inside:
                    parents.setdefault((phase, key), []).append((call, cost))
                    if timeline:
                        self._nested_events(call)
                if timeline:
                    self._layer_event(i, known, phase, call)
            for p in graph.passes[i]:
                ran.append(self._pass_row(i, p))
                site = self.capture.sites.get(p.site) if p.site is not None else None
                if site is not None and site.clears:
                    clears[p.phase] = site.clears
                if timeline:
                    self._pass_event(graph, section.title, p)
        entries = self._layer_entries(graph, layers, (forward, backward), parents)
        self._whole_passes(ran, rounds_of, whole, engine)
        section.entries = entries + pass_entries(whole, engine, clears, graph.dynamic)
        section.info = self._graph_info(graph, whole, outside)
        return section

    def _layer_entries(
        self,
        graph: Graph,
        layers: Dict[Any, Layer],
        tables: Tuple[SeriesTable, SeriesTable],
        parents: Dict[Tuple[str, Any], List[Tuple[Any, float]]],
    ) -> List[Entry]:
        """Each layer's forward and backward entry (``tables``: their series), the hooks' cost taken off, with the
        calls that ran inside them (``parents``)."""
        entries: List[Entry] = []
        for table, phase in zip(tables, ("forward_function", "backward_function")):
            for key, s in table.series.items():
                known = layers[key]
                kind = "dynamic" if graph.dynamic and phase == "forward_function" else "static"
                mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
                cost_key = self.costs.key(
                    self.capture.graph.signature(known.info), "backward" if phase == "backward_function" else "forward"
                )
                off = self.costs.taken_off(mean, kind, cost_key)
                kept_off = self.resolved(known.label(phase), mean, off)
                e = known.entry(phase, s.samples, 1, kept_off)
                e.kept_cost_ns = max(0.0, off - kept_off)
                e.round_sizes = s.round_sizes
                e.disturbed, e.taken_ns, e.switch_rate = list(s.disturbed), list(s.taken), self.switch_rate
                calls = parents.get(("forward" if phase == "forward_function" else "backward", key), [])
                if calls:
                    e.children = self.children(calls)
                entries.append(e)
        return entries

    def _graph_info(
        self, graph: Graph, whole: SeriesTable, outside: Optional[Tuple[Sequence[int], str]]
    ) -> SectionInfo:
        """A graph section's info: its name, whether it ran under auto_forward, its trainers, its passes per kept
        step; for a graph that ran only outside the kept steps, where, and its passes there."""
        rounds = max(1, len(self.kept))
        info = SectionInfo(
            graph=graph.name,
            dynamic=graph.dynamic,
            trained_by=[self.labels[t] for t in graph.trained_by if t < len(self.labels)],
            forward_per_step=per_step_of(whole, "forward", rounds) if outside is None else 0,
            backward_per_step=per_step_of(whole, "backward", rounds) if outside is None else 0,
        )
        if graph.dynamic:
            first = next((p for step in graph.passes for p in step if p.phase == "forward"), None)
            info.built_at = places(first.calls, self.capture.codes) if first is not None else None
        if outside is not None:
            info.outside = outside[1]
            info.passes = {
                phase: len(whole.series[phase].samples) for phase in ("forward", "backward") if phase in whole.series
            }
        return info

    def _pass_row(self, step: int, p: Pass) -> "PassRow":
        """A pass's time, its functions' (the hooks' cost off each, also where an entry keeps it: see ``resolved``),
        and what other work took of it (inside its functions, and between them)."""
        inner = [self.inner(c)[1] for c in p.calls]  # the timing of calls inside its functions
        passed = max(0.0, self.pass_time(p) - self.pass_hooks(p) - sum(inner))
        own = sum(self.function_time(c, x, p.phase) for c, x in zip(p.calls, inner))
        held_inside = sum(self.taken(c) or 0.0 for c in p.calls if self.hit(c))
        return PassRow(step, p.phase, passed, own, held_inside, self.gap_taken(p))

    def _whole_passes(
        self, passes: Sequence["PassRow"], rounds_of: Sequence[int], whole: SeriesTable, engine: SeriesTable
    ) -> None:
        """Each pass's time, and the rest its functions leave (the engine's), into their tables; what other work took
        of a pass (inside its functions, between them) is taken off it, and off the engine's rest what it took
        between the functions."""
        by_round = {i: [x for x in passes if x.step == i] for i in rounds_of}
        for i in rounds_of:
            whole.next_round()
            engine.next_round()
            for row in by_round[i]:
                held = row.inside > 0 or row.gaps is not None
                whole.get(row.phase).add(row.passed, held, row.inside + (row.gaps or 0.0) if held else None)
                engine.get(row.phase).add(max(0.0, row.passed - row.functions), row.gaps is not None, row.gaps)

    def _pass_event(self, graph: Graph, title: str, p: Pass) -> None:
        o = self.origin
        self.timeline.append(
            TimelineEvent(
                "%s (%s)" % (p.phase, graph.name),
                p.phase,
                p.start_ns - o,
                p.end_ns - o,
                {"graph": graph.name, "functions": len(p.calls), "section": title},
            )
        )

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

    # -- memory --------------------------------------------------------------------------

    def memory(self, section: Section) -> buffers.StepMemory:
        """The step memory of a (training) graph, estimated from its functions as first recorded."""
        layers = list(self.layers.get(section.name, {}).values())
        if not layers:
            return buffers.StepMemory()
        params = [v.id for v in self.capture.graph.variables.values() if v.parameter]
        return buffers.step_memory(
            [layer.info for layer in layers],
            self.capture.graph,
            [layer.name for layer in layers],
            params,
            layers[0].itemsize,
            training=bool(section.info.backward_per_step),
            solver_state=sum(s.state_bytes for s in self.capture.solvers),
            measured="not measured for a recorded program (its steps are its own); the estimate "
            "follows the functions of the graph as first recorded",
        )


def pass_entries(whole: SeriesTable, engine: SeriesTable, clears: Dict[str, str], dynamic: bool) -> List[Entry]:
    """A graph's whole passes (forward_all, backward_all), and the rest of a pass its functions leave, where it is
    large (by the entries' means): an entry of its own, named by what fills it (clearing buffers, auto_forward's
    Python, allocating)."""
    entries = [
        entry_of("%s_all" % phase, "%s_all" % phase, whole.series[phase])
        for phase in ("forward", "backward")
        if phase in whole.series
    ]
    for phase in ("forward", "backward"):
        gaps, passes = engine.series.get(phase), whole.series.get(phase)
        if gaps is None or passes is None or not passes.samples:
            continue
        how = (
            "clearing buffers (%s=True)" % clears[phase]
            if phase in clears
            else "NNabla making them (auto_forward: parametric functions, their parameters)"
            if dynamic and phase == "forward"
            else "allocating"
        )
        rest = entry_of("engine (%s: between functions, %s)" % (phase, how), "engine", gaps)
        # by the figures every output shows (other work's time taken off each): a pass other work held up for
        # milliseconds reads long by its raw time, its rest between functions small beside it
        if rest.stats.mean > (1 - COVERED) * next(e for e in entries if e.phase == phase + "_all").stats.mean:
            entries.append(rest)
    return entries


def _as_parts(builder: Builder) -> BuilderParts:
    """(For mypy: the Builder is what its program part takes it for, member by member.)"""
    return builder
