"""A recorded program's graphs and steps made sections of a profile: one per graph, and the program's step.

Each kept step is a round of the profile: an entry's samples are its calls, its round sizes the
calls per step (a validation pass every five steps: one round in five holds its samples). A
graph's section holds its layers' forward and backward and its whole passes; the program's
section the rest of the step: each iterator's wait, each solver's calls, each monitor, each
communicator call, the eager work (functions called on NdArrays, by the line that called them)
and the whole step. What the hooks cost, as measured, is taken off every function's time and off
the passes and steps they sit in; nnprofile's own work between the program's calls (reading
parameter names) is not part of any step. The timeline holds the kept steps' events.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base import buffers
from ..base.choices import GRAPH, PHASES, SCRIPT
from ..base.hookcost import HookCosts
from ..base.series import RoundSeries, SeriesTable
from ..result import Entry, Section
from ..result.layer import Layer
from ..result.timeline import TimelineEvent
from .events import EAGER, Call, Capture, CommCall, InputCall, MonitorCall, SolverCall
from .graphs import Graph, Namer, layer_keys
from .passes import Pass, group_passes

SOLVER_PHASES = {"zero_grad": "prepare_backward", "weight_decay": "weight_decay", "update": "update"}
# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000


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
    """How much of [start, end) nnprofile's own work took (``excluded``: merged intervals)."""
    return sum(max(0, min(b, end) - max(a, start)) for a, b in excluded)


class Builder:
    """Makes the sections of a recording's kept steps (``kept``: their indexes among ``per_step``)."""

    def __init__(self, capture: Capture, costs: HookCosts, name: str, labels: List[str], kept: List[int],
                 per_step: List[List[Any]], bounds: List[Tuple[int, int]], plain: Optional[set] = None):
        self.capture, self.costs, self.name, self.labels = capture, costs, name, labels
        self.functions = capture.graph.functions
        self.excluded = merged(capture.excluded)
        self.kept, self.per_step, self.bounds = kept, per_step, bounds
        self.plain = plain or set()  # the steps run without the hooks
        self.timeline: List[TimelineEvent] = []
        self.origin = bounds[kept[0]][0] if kept else 0
        self.layers: Dict[str, Dict[Any, Layer]] = {}  # graph name -> layer key -> layer
        self._events_per_step: Dict[int, int] = {}

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
        return c.eviction * max(0.0, call.end_ns - call.start_ns - c.inside(call.kind, key))

    def hook_total(self, calls: Sequence[Call], phase: str = "forward") -> float:
        """What the hooks added to a stretch of these calls: each call's whole cost and its eviction."""
        c = self.costs
        return sum(c.total(x.kind, self.signature(x, phase)) + self.own_cost(x, phase) for x in calls)

    def pass_hooks(self, p: Pass) -> float:
        """What the hooks added inside a pass (from its first function's start to its last one's end): each
        call's cost, but the part of the last one's that falls after its end, outside the pass."""
        c, last = self.costs, p.calls[-1]
        key = self.signature(last, p.phase)
        return self.hook_total(p.calls, p.phase) - (c.total(last.kind, key) - c.inside(last.kind, key))

    # -- a graph ---------------------------------------------------------------------

    def graph_section(self, graph: Graph) -> Section:
        section = Section(kind=GRAPH, name=graph.name, network="", complete=True)
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
        forward, backward, whole = SeriesTable(), SeriesTable(), SeriesTable()
        for i in self.kept:
            for table in (forward, backward, whole):
                table.next_round()
            for key, call, phase in layer_keys(graph, i):
                known = layer(key, call)
                (forward if phase == "forward" else backward).get(key).add(float(call.end_ns - call.start_ns))
                self._layer_event(i, known, phase, call)
            for p in graph.passes[i]:
                whole.get(p.phase).add(max(0.0, p.end_ns - p.start_ns - self.pass_hooks(p)))
                self._pass_event(graph, section.title, p)
        entries: List[Entry] = []
        for table, phase in ((forward, "forward_function"), (backward, "backward_function")):
            for key, s in table.series.items():
                known = layers[key]
                kind = "dynamic" if graph.dynamic and phase == "forward_function" else "static"
                mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
                key = self.costs.key(self.capture.graph.signature(known.info),
                                     "backward" if phase == "backward_function" else "forward")
                e = known.entry(phase, s.samples, 1, self.costs.taken_off(mean, kind, key))
                e.round_sizes = s.round_sizes
                entries.append(e)
        for phase in ("forward", "backward"):
            if phase in whole.series:
                entries.append(_entry("%s_all" % phase, "%s_all" % phase, whole.series[phase]))
        section.entries = entries
        rounds = max(1, len(self.kept))
        section.info = {
            "graph": graph.name, "dynamic": graph.dynamic,
            "trained_by": [self.labels[t] for t in graph.trained_by if t < len(self.labels)],
            "forward_per_step": _per_step(whole, "forward", rounds),
            "backward_per_step": _per_step(whole, "backward", rounds),
        }
        return section

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
        inputs, solvers, monitors, comms, eager, step = (SeriesTable() for _ in range(6))
        moved: Dict[str, List[int]] = {}
        for i in self.kept:
            for table in (inputs, solvers, monitors, comms, eager, step):
                table.next_round()
            events = self.per_step[i]
            start, end = self.bounds[i]
            step_passes = group_passes(events, capture.sites)
            phase_of = {id(x): p.phase for p in step_passes for x in p.calls}
            hooks = 0.0
            for e in events:
                if isinstance(e, Call):
                    phase = phase_of.get(id(e), "forward")
                    hooks += c.total(e.kind, self.signature(e, phase)) + self.own_cost(e, phase)
                    if e.kind == EAGER:  # by function type and the program's line (any shapes)
                        f = self.functions[e.function]
                        eager.get((f.type, f.created)).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, InputCall):
                    inputs.get(e.iterator).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, SolverCall):
                    solvers.get((e.solver, e.method)).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, MonitorCall):
                    monitors.get(e.monitor).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, CommCall):
                    comms.get(e.method).add(float(e.end_ns - e.start_ns))
                    moved.setdefault(e.method, []).append(e.bytes)
            passes = sum(1 for p in step_passes if not p.dynamic)
            carried = c.carry if i - 1 not in self.plain else 0.0  # the step before had the hooks
            step.get("step").add(max(0.0, end - start - overlap(start, end, self.excluded) - hooks
                                     - passes * c.per_pass() - c.outside - carried))
            self._step_events(i, events)
        entries: List[Entry] = []
        for key, s in inputs.series.items():
            entries.append(_entry("load_dataset (%s)" % capture.iterators[key].name, "load_dataset", s))
        for (solver, method), s in solvers.series.items():
            label = self.labels[solver] if solver < len(self.labels) else "solver %d" % (solver + 1)
            entries.append(_entry("%s (%s)" % (method, label), SOLVER_PHASES.get(method, "solver"), s))
        for (kind, created), s in eager.series.items():
            e = _entry("eager (%s at %s)" % (kind, _short(created)), "eager", s)
            mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
            e.overhead_ns, e.layer_type, e.source = c.taken_off(mean, "eager"), kind, created
            entries.append(e)
        for monitor, s in monitors.series.items():
            entries.append(_entry("monitor (%s)" % monitor, "monitor_loss", s))
        kind = capture.communicators[0] if capture.communicators else "communicator"
        for method, s in comms.series.items():
            e = _entry("%s (%s)" % (method, kind), "communication", s)
            sizes = moved.get(method, [])
            e.bytes_read = int(sum(sizes) / len(sizes)) if sizes else None  # bytes per call
            entries.append(e)
        if "step" in step.series:
            entries.append(_entry("step", "step", step.series["step"]))
        entries.sort(key=lambda e: PHASES.index(e.phase))  # NNC's order; stable within a phase
        section.entries = entries
        return section

    def _step_events(self, i: int, events: Sequence[Any]) -> None:
        o = self.origin
        number = i + 1
        start, end = self.bounds[i]
        self.timeline.append(TimelineEvent("step %d" % number, "step", start - o, end - o, {"step": number}))
        for e in events:
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


def _per_step(whole: SeriesTable, phase: str, rounds: int) -> float:
    return round(sum(whole.series[phase].round_sizes) / rounds, 4) if phase in whole.series else 0


def _short(where: Optional[str]) -> str:
    """``train.py:120`` for a program's line (its folder left out: the label names a line)."""
    if not where:
        return "an unknown line"
    path, _, line = where.rpartition(":")
    return "%s:%s" % (path.replace("\\", "/").rsplit("/", 1)[-1], line)


def _entry(label: str, phase: str, s: RoundSeries) -> Entry:
    return Entry(label=label, phase=phase, samples_ns=[float(x) for x in s.samples], round_sizes=list(s.round_sizes))
