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

from typing import Any, Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

from ..base import buffers
from ..base.choices import GRAPH
from ..base.hookcost import HookCosts
from ..base.series import SeriesTable
from ..result import Entry, Section
from ..result.details import SectionInfo
from ..result.layer import Layer
from ..result.timeline import TimelineEvent
from .events import Call, Capture, Event
from .interference import disturbance_rate
from .graphs import Graph, layer_keys
from .naming import Namer
from .passes import Pass
from .builds import places
from .calls import Calls
from .program import ProgramSections, entry_of, per_step_of

# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000
# A graph's functions covering less of its passes (by the rest's mean against the pass's, other work's time taken off
# each, or by the functions' own means, as the Coverage line adds them up): the rest is an engine entry.
COVERED = 0.95


class PassRow(NamedTuple):
    """One pass as its section counts it (ns): its time, its functions' (the hooks' cost off each), what other work
    took inside its functions and between them (None: not known)."""

    step: int
    phase: str
    passed: float
    functions: float
    inside: Optional[float]
    gaps: Optional[float]


class Builder:
    """Makes the sections of a recording's kept steps (``kept``: their indexes among ``per_step``): the graphs' here,
    the program's by its ``program`` (``nnprofile.assembly.program``), both over the same ``calls``."""

    def __init__(
        self,
        capture: Capture,
        costs: HookCosts,
        name: str,
        labels: List[str],
        kept: List[int],
        per_step: List[List[Event]],
        step_passes: List[List[Pass]],
        bounds: List[Tuple[int, int]],
        plain: Optional[set] = None,
        kids: Optional[Dict[int, List[Event]]] = None,
    ):
        self.calls = Calls(capture, costs, labels, kids or {}, bounds[kept[0]][0] if kept else 0)
        self.name, self.kept, self.per_step, self.bounds = name, kept, per_step, bounds
        self.plain = plain or set()  # the steps run without the hooks
        self.program = ProgramSections(self.calls, name, kept, per_step, step_passes, bounds, self.plain)
        self.layers: Dict[str, Dict[Hashable, Layer]] = {}  # graph name -> layer key -> layer
        # other work's disturbances per ns of the program's calls (``interference.disturbance_rate``)
        self.switch_rate = disturbance_rate(per_step, kept, capture.marks)
        self._events_per_step: Dict[int, int] = {}
        self._trace_args: Dict[Tuple[int, str, Any], dict] = {}  # (layer, phase, function): its events' args

    # -- a graph ---------------------------------------------------------------------

    def graph_section(self, graph: Graph, outside: Optional[Tuple[Sequence[int], str]] = None) -> Section:
        """A graph's section over the kept steps; ``outside``: over these of its passes' indexes instead (a graph that
        ran only outside the kept steps), and where that was, said. Only the kept steps' calls are on the timeline."""
        section = Section(kind=GRAPH, name=graph.name, network="", complete=True)
        rounds_of = self.kept if outside is None else list(outside[0])
        timeline = outside is None
        layers: Dict[Hashable, Layer] = self.layers.setdefault(graph.name, {})
        namer = Namer(self.calls.capture.graph)

        def layer(key: Hashable, call: Call) -> Layer:
            known = layers.get(key)
            if known is None:
                info = self.calls.functions[call.function]
                known = layers[key] = Layer(info, self.calls.capture.graph, namer.name(info), layer_id=len(layers))
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
                inside, cost = self.calls.inner(call)
                hit = self.calls.hit(call)
                (forward if phase == "forward" else backward).get(key).add(
                    max(0.0, self.calls.span(call) - cost), hit, self.calls.taken(call) if hit else None
                )
                if inside:
                    parents.setdefault((phase, key), []).append((call, cost))
                    if timeline:
                        self.calls.nested_events(call)
                if timeline:
                    self._layer_event(i, known, phase, call)
            for p in graph.passes[i]:
                ran.append(self._pass_row(i, p))
                site = self.calls.capture.sites.get(p.site) if p.site is not None else None
                if site is not None and site.clears:
                    clears[p.phase] = site.clears
                if timeline:
                    self._pass_event(graph, section.title, p)
        entries = self._layer_entries(graph, layers, (forward, backward), parents)
        self._whole_passes(ran, rounds_of, whole, engine)
        section.entries = entries + pass_entries(whole, engine, clears, graph.dynamic, entries)
        section.info = self._graph_info(graph, whole, outside)
        return section

    def _layer_entries(
        self,
        graph: Graph,
        layers: Dict[Hashable, Layer],
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
                cost_key = self.calls.costs.key(
                    self.calls.capture.graph.signature(known.info),
                    "backward" if phase == "backward_function" else "forward",
                )
                off = self.calls.costs.taken_off(mean, kind, cost_key)
                kept_off = self.calls.resolved(known.label(phase), mean, off)
                e = known.entry(phase, s.samples, 1, kept_off)
                e.kept_cost_ns = max(0.0, off - kept_off)
                e.round_sizes = s.round_sizes
                e.disturbed, e.taken_ns, e.switch_rate = list(s.disturbed), list(s.taken), self.switch_rate
                calls = parents.get(("forward" if phase == "forward_function" else "backward", key), [])
                if calls:
                    e.children = self.calls.children(calls)
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
            trained_by=[self.calls.labels[t] for t in graph.trained_by if t < len(self.calls.labels)],
            forward_per_step=per_step_of(whole, "forward", rounds) if outside is None else 0,
            backward_per_step=per_step_of(whole, "backward", rounds) if outside is None else 0,
        )
        if graph.dynamic:
            first = next((p for step in graph.passes for p in step if p.phase == "forward"), None)
            info.built_at = places(first.calls, self.calls.capture.codes) if first is not None else None
        if outside is not None:
            info.outside = outside[1]
            info.passes = {
                phase: len(whole.series[phase].samples) for phase in ("forward", "backward") if phase in whole.series
            }
        return info

    def _pass_row(self, step: int, p: Pass) -> "PassRow":
        """A pass's time, its functions' (the hooks' cost off each, also where an entry keeps it: see ``resolved``),
        and what other work took of it (inside its functions, and between them)."""
        inner = [self.calls.inner(c)[1] for c in p.calls]  # the timing of calls inside its functions
        passed = self.calls.figures(p)[0]  # (its time less the hooks' cost, as every figure of a step takes it)
        own = sum(self.calls.function_time(c, x, p.phase) for c, x in zip(p.calls, inner))
        inside, unknown, gaps = self.calls.pass_taken(p)  # (a function's unknown: the pass's too)
        return PassRow(step, p.phase, passed, own, None if unknown else inside, gaps)

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
                held = row.inside is None or row.inside > 0 or row.gaps is not None
                taken = None if row.inside is None else row.inside + (row.gaps or 0.0)
                whole.get(row.phase).add(row.passed, held, taken if held else None)
                engine.get(row.phase).add(max(0.0, row.passed - row.functions), row.gaps is not None, row.gaps)

    def _pass_event(self, graph: Graph, title: str, p: Pass) -> None:
        o = self.calls.origin
        self.calls.timeline.append(
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
        known = (id(layer), phase, call.function)
        args = self._trace_args.get(known)
        if args is None:
            args = self._trace_args[known] = layer.trace_args(phase)
            args["source"] = self.calls.functions[call.function].created
        o = self.calls.origin
        # (one dict for every call of the function: shared by its events, encoded once in the trace)
        self.calls.timeline.append(TimelineEvent(layer.name, phase, call.start_ns - o, call.end_ns - o, args))

    # -- memory --------------------------------------------------------------------------

    def memory(self, section: Section) -> buffers.StepMemory:
        """The step memory of a (training) graph, estimated from its functions as first recorded."""
        layers = list(self.layers.get(section.name, {}).values())
        if not layers:
            return buffers.StepMemory()
        params = [v.id for v in self.calls.capture.graph.variables.values() if v.parameter]
        return buffers.step_memory(
            [layer.info for layer in layers],
            self.calls.capture.graph,
            [layer.name for layer in layers],
            params,
            layers[0].itemsize,
            training=bool(section.info.backward_per_step),
            solver_state=sum(s.state_bytes for s in self.calls.capture.solvers),
            measured="not measured for a recorded program (its steps are its own); the estimate "
            "follows the functions of the graph as first recorded",
        )


def pass_entries(
    whole: SeriesTable, engine: SeriesTable, clears: Dict[str, str], dynamic: bool, layers: Sequence[Entry] = ()
) -> List[Entry]:
    """A graph's whole passes (forward_all, backward_all), and the rest of a pass its functions leave, where it is
    large (by the entries' means), or where the functions' entries (``layers``, as often as each ran a pass: what the
    Coverage line adds up) cover less than COVERED of the pass: an entry of its own, named by what fills it
    (clearing buffers, auto_forward's Python, allocating)."""
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
        pass_ = next(e for e in entries if e.phase == phase + "_all")
        per_round = pass_.calls_per_round()
        covered = sum(e.stats.mean * e.calls_per_pass(per_round) for e in layers if e.phase == phase + "_function")
        if rest.stats.mean > (1 - COVERED) * pass_.stats.mean or (layers and covered < COVERED * pass_.stats.mean):
            entries.append(rest)
    return entries
