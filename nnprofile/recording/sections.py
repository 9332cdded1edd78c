"""From a recorded program to sections: one per graph, and the program's own step.

The pipeline: the recorder's raw events are cut into steps
(``nnprofile.recording.steps``), each step's function calls grouped into passes
(``passes``), the passes into graphs (``graphs``), and here each graph becomes
a section (its layers' forward and backward, its whole passes), and the rest
of the step (input, solvers, monitors, the whole step) the program's section.

Each kept step is a round of the profile: an entry's samples are its calls, its
round sizes the calls per step (a validation pass every five steps: one round
in five holds its samples), and steps the machine ran slow in are left out of
every section alike. The hooks' own cost, measured at start-up, is taken off
every function's time and off the passes and steps they sit in; nnprofile's
own work between the program's calls (reading parameter names) is not part of
any step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base.choices import GRAPH, PHASES, SCRIPT
from ..result import Entry, Section
from ..base.stats import Drift, speed_levels
from .graphs import Graph, Namer, layer_keys, solver_labels, split_by_graph, trainers
from ..base.hookcost import HookCosts, measured_in_program
from ..base.stats import median
from ..result.layer import Layer
from .passes import Pass, SiteReader, group_passes
from .recorder import CommCall, FunctionCall, Hooks, InputCall, MonitorCall, Recorder, SolverCall, StepMark
from .steps import step_bounds, steps_of

SOLVER_PHASES = {"zero_grad": "prepare_backward", "weight_decay": "weight_decay", "update": "update"}
# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000
INPUT_NOTE = ("input (load_dataset) is the time the program waited in DataIterator.next(); NNabla's "
              "iterators load the next batch in a thread while the step runs (use_thread, the default), so "
              "it is the wait, not the loading")


@dataclass
class _Series:
    samples: List[float] = field(default_factory=list)
    sizes: List[int] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.samples.append(value)
        self.sizes[-1] += 1


class _Table:
    """Series by key, in order of first sight, every one with a round per step."""

    def __init__(self) -> None:
        self.series: Dict[Any, _Series] = {}
        self.rounds = 0

    def next_round(self) -> None:
        self.rounds += 1
        for s in self.series.values():
            s.sizes.append(0)

    def get(self, key: Any) -> _Series:
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = _Series([], [0] * self.rounds)
        return s


@dataclass
class Assembly:
    sections: List[Section]
    timeline: List[Dict[str, Any]]
    steps: int              # steps found in the recording (but those run without the hooks)
    skip: int               # of them set aside first
    kept: int               # of them kept
    how: str                # how the steps were found
    notes: List[str]
    costs: HookCosts        # what the hooks cost, as taken off (measured in the program where it could be)
    in_program: Optional[Dict[str, float]] = None  # plain and hooked steps' medians, how many, cost
    origin_ns: int = 0      # the recorder's clock at the timeline's zero (the first kept step's start)


def _plain_steps(per_step: List[List[Any]]) -> List[bool]:
    """Which steps ran without the function hooks (they are switched at a step's start)."""
    out = []
    on = True
    for events in per_step:
        for e in events:
            if isinstance(e, Hooks):
                on = e.on
            else:
                break
        out.append(not on)
    return out


def _duration(bounds: Tuple[int, int], excluded: Sequence[Tuple[int, int]]) -> float:
    start, end = bounds
    return end - start - sum(max(0, min(b, end) - max(a, start)) for a, b in excluded)


def assemble(recorder: Recorder, costs: HookCosts, name: str) -> Assembly:
    """The sections of a recorded program, its timeline, and what its steps were."""
    events = recorder.events
    last_ns = max([_end(e) for e in events] + [recorder.started_ns])
    reader = SiteReader()
    update_ends = [(e.solver, e.end_ns) for e in events if isinstance(e, SolverCall) and e.method == "update"]
    marks = [e.at_ns for e in events if isinstance(e, StepMark)]
    pass_starts = [(p.site if p.site is not None else "auto_forward", p.start_ns) for p in group_passes(events, reader)]
    bounds, how = step_bounds(update_ends, marks, pass_starts, recorder.started_ns, last_ns)
    per_step = steps_of(events, bounds)
    skip = min(recorder.skip_first, max(0, len(bounds) - 1))
    plain = _plain_steps(per_step)
    hooked_after_skip = [i for i in range(skip, len(bounds)) if not plain[i]]
    kept = hooked_after_skip[:recorder.active]
    plain_kept = [i for i in range(skip, len(bounds)) if plain[i]]
    # A step's own duration: without nnprofile's work and without the time in collectives, which
    # is the other ranks' (a rank waiting for a straggler would measure the straggler's hooks).
    def own(i: int) -> float:
        return _duration(bounds[i], recorder.excluded) - sum(e.end_ns - e.start_ns for e in per_step[i]
                                                            if isinstance(e, CommCall))
    in_program = measured_in_program(
        costs, [(own(i),
                 sum(1 for e in per_step[i] if isinstance(e, FunctionCall) and not e.dynamic),
                 sum(1 for e in per_step[i] if isinstance(e, FunctionCall) and e.dynamic),
                 sum(e.end_ns - e.start_ns for e in per_step[i] if isinstance(e, FunctionCall))) for i in kept],
        [own(i) for i in plain_kept])
    if in_program is not None:
        costs = in_program[0]
    passes = [group_passes(step, reader) for step in per_step]
    graphs = split_by_graph(per_step, passes)
    labels = solver_labels(recorder.solvers, recorder.parameter_names)
    for g in graphs:
        g.trained_by = trainers(g, per_step, recorder.solvers, recorder.parameter_names)
    builder = _Builder(recorder, costs, name, labels, kept, per_step, bounds)
    shown = sorted((g for g in graphs if any(g.passes[i] for i in kept)),
                   key=lambda g: next((n, min(p.start_ns for p in g.passes[i])) for n, i in enumerate(kept)
                                      if g.passes[i]))  # in order of first use in the kept steps
    sections = [builder.graph_section(g) for g in shown]
    sections.append(builder.program_section())
    _drift(sections, len(kept))
    trained = [s for s, g in zip(sections, shown) if g.trained_by] or sections[:-1]
    if trained and kept:
        trained[0].memory = builder.memory(trained[0])
    notes = []
    if recorder.iterators:
        notes.append(INPUT_NOTE)
    if recorder.callback_used:
        notes.append("the program reduces its gradients with all_reduce_callback: NNabla's backward runs that "
                     "communication itself, where no hook sees it, so it is inside backward_all and the "
                     "backward_function entries, not separated from them (the call that sets it up is timed)")
    undetermined = [g.name for g in graphs if g.dynamic and g.key == ("forward only",)]
    if undetermined:
        notes.append("under auto_forward, functions that no backward reached are in the graph '%s': the rule "
                     "(a function belongs to the graph whose backward reaches it) cannot tell their graph"
                     % undetermined[0])
    return Assembly(sections if any(s.entries for s in sections) else [], builder.timeline,
                    len(bounds) - len(plain_kept), skip, len(kept), how, notes, costs,
                    in_program[1] if in_program is not None else None, builder.origin)


def _end(e: Any) -> int:
    return e.at_ns if isinstance(e, (StepMark, Hooks)) else e.end_ns


def _drift(sections: List[Section], rounds: int) -> None:
    """The machine's speed per step, over every entry of the program (the whole step aside); the
    steps it ran slow in are left out of every section alike."""
    entries = [e for s in sections for e in s.entries]
    drift = Drift(tuple(speed_levels([(e.samples_ns, e.round_sizes) for e in entries if e.phase != "step"],
                                     rounds)), 0.10)
    for s in sections:
        s.speed_levels = [round(level, 4) for level in drift.levels]
        for e in s.entries:
            e.dropped_rounds = drift.dropped


class _Builder:
    def __init__(self, recorder: Recorder, costs: HookCosts, name: str, labels: List[str], kept: List[int],
                 per_step: List[List[Any]], bounds: List[Tuple[int, int]]):
        self.recorder, self.costs, self.name, self.labels = recorder, costs, name, labels
        self.kept, self.per_step, self.bounds = kept, per_step, bounds
        self.parameters = frozenset(recorder.parameter_names)
        self.timeline: List[Dict[str, Any]] = []
        self.origin = bounds[kept[0]][0] if kept else 0
        self.program_title = Section(kind=SCRIPT, name=name, network="").title
        self.layers: Dict[str, Dict[Any, Layer]] = {}  # graph name -> layer key -> layer

    # -- a graph ---------------------------------------------------------------------

    def graph_section(self, graph: Graph) -> Section:
        section = Section(kind=GRAPH, name=graph.name, network="", complete=True)
        layers: Dict[Any, Layer] = self.layers.setdefault(graph.name, {})
        namer = Namer(self.recorder.parameter_names)
        first = next(i for i, p in enumerate(graph.passes) if p)
        sources: Dict[Any, str] = {}
        for key, call, _ in layer_keys(graph, first):  # names follow first sight, in execution order
            if key not in layers:
                layers[key] = Layer(call.function, namer.name(call.function), self.parameters, layer_id=len(layers))
            if key not in sources and call.function in self.recorder.created:
                sources[key] = self.recorder.created[call.function]
        forward, backward, whole = _Table(), _Table(), _Table()
        c = self.costs
        for i in self.kept:
            for table in (forward, backward, whole):
                table.next_round()
            for key, call, phase in layer_keys(graph, i):
                if key not in layers:
                    layers[key] = Layer(call.function, namer.name(call.function), self.parameters,
                                        layer_id=len(layers))
                if key not in sources and call.function in self.recorder.created:
                    sources[key] = self.recorder.created[call.function]
                (forward if phase == "forward" else backward).get(key).add(float(call.end_ns - call.start_ns))
                self._layer_event(i, layers[key], phase, call)
            for p in graph.passes[i]:
                own = sum(c.eviction * max(0.0, x.end_ns - x.start_ns - c.inside("dynamic" if x.dynamic else "static")) for x in p.calls)
                whole.get(p.phase).add(max(0.0, p.end_ns - p.start_ns - len(p.calls) * c.total("dynamic" if p.dynamic else "static") - own))
                self._pass_events(graph, section.title, p, i, layers)
        entries: List[Entry] = []
        for table, phase in ((forward, "forward_function"), (backward, "backward_function")):
            for key, s in table.series.items():
                dynamic = graph.dynamic and phase == "forward_function"
                mean = sum(s.samples) / len(s.samples) if s.samples else 0.0
                e = layers[key].entry(phase, s.samples, 1, c.taken_off(mean, "dynamic" if dynamic else "static"))
                e.round_sizes, e.source = s.sizes, sources.get(key)
                entries.append(e)
        for phase in ("forward", "backward"):
            if phase in whole.series:
                s = whole.series[phase]
                entries.append(Entry(label="%s_all" % phase, phase="%s_all" % phase, samples_ns=s.samples,
                                     round_sizes=s.sizes))
        section.entries = entries
        rounds = max(1, len(self.kept))
        section.info = {
            "graph": graph.name, "dynamic": graph.dynamic,
            "trained_by": [self.labels[t] for t in graph.trained_by if t < len(self.labels)],
            "forward_per_step": round(sum(whole.series["forward"].sizes) / rounds, 4) if "forward" in whole.series else 0,
            "backward_per_step": round(sum(whole.series["backward"].sizes) / rounds, 4)
            if "backward" in whole.series else 0,
        }
        return section

    def _pass_events(self, graph: Graph, title: str, p: Pass, step: int, layers: Dict[Any, Layer]) -> None:
        o = self.origin
        self.timeline.append({"name": "%s (%s)" % (p.phase, graph.name), "cat": p.phase, "start": p.start_ns - o,
                              "end": p.end_ns - o, "args": {"graph": graph.name, "functions": len(p.calls),
                                                            "section": title}})

    def _layer_event(self, step: int, layer: Layer, phase: str, call: FunctionCall) -> None:
        """A function call in the timeline (at most MAX_EVENTS_PER_STEP a step)."""
        counts = self.__dict__.setdefault("_events_per_step", {})
        counts[step] = counts.get(step, 0) + 1
        if counts[step] > MAX_EVENTS_PER_STEP:
            return
        args = layer.trace_args(phase)
        args["source"] = self.recorder.created.get(call.function)
        o = self.origin
        self.timeline.append({"name": layer.name, "cat": phase, "start": call.start_ns - o, "end": call.end_ns - o,
                              "args": args})

    # -- the program's step ------------------------------------------------------------

    def program_section(self) -> Section:
        r, c = self.recorder, self.costs
        section = Section(kind=SCRIPT, name=self.name, network="", complete=True)
        inputs, solvers, monitors, comms, step = _Table(), _Table(), _Table(), _Table(), _Table()
        moved: Dict[str, List[int]] = {}
        for i in self.kept:
            for table in (inputs, solvers, monitors, comms, step):
                table.next_round()
            events = self.per_step[i]
            start, end = self.bounds[i]
            hooked = dynamic = 0
            own = 0.0
            for e in events:
                if isinstance(e, FunctionCall):
                    own += c.eviction * max(0.0, e.end_ns - e.start_ns - c.inside("dynamic" if e.dynamic else "static"))
                    if e.dynamic:
                        dynamic += 1
                    else:
                        hooked += 1
                elif isinstance(e, InputCall):
                    inputs.get(e.iterator).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, SolverCall):
                    solvers.get((e.solver, e.method)).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, MonitorCall):
                    monitors.get(e.monitor).add(float(e.end_ns - e.start_ns))
                elif isinstance(e, CommCall):
                    comms.get(e.method).add(float(e.end_ns - e.start_ns))
                    moved.setdefault(e.method, []).append(e.bytes)
            ours = sum(max(0, min(b, end) - max(a, start)) for a, b in r.excluded)
            step.get("step").add(max(0.0, end - start - ours - hooked * c.static_total - dynamic * c.dynamic_total
                                     - own))
            self._step_events(i, events)
        entries: List[Entry] = []
        for key, s in inputs.series.items():
            entries.append(_entry("load_dataset (%s)" % r.iterators[key].name, "load_dataset", s))
        for (solver, method), s in solvers.series.items():
            label = self.labels[solver] if solver < len(self.labels) else "solver %d" % (solver + 1)
            entries.append(_entry("%s (%s)" % (method, label), SOLVER_PHASES.get(method, "solver"), s))
        for monitor, s in monitors.series.items():
            entries.append(_entry("monitor (%s)" % monitor, "monitor_loss", s))
        kind = r.communicators[0] if r.communicators else "communicator"
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
        self.timeline.append({"name": "step %d" % number, "cat": "step", "start": start - o, "end": end - o,
                              "args": {"step": number}})
        for e in events:
            if isinstance(e, FunctionCall):
                continue  # in the graphs' sections' passes
            elif isinstance(e, SolverCall):
                label = self.labels[e.solver] if e.solver < len(self.labels) else "solver"
                self.timeline.append({"name": "%s (%s)" % (e.method, label), "cat": "update",
                                      "start": e.start_ns - o, "end": e.end_ns - o, "args": {}})
            elif isinstance(e, InputCall):
                self.timeline.append({"name": "load_dataset (%s)" % self.recorder.iterators[e.iterator].name,
                                      "cat": "input", "start": e.start_ns - o, "end": e.end_ns - o, "args": {}})
            elif isinstance(e, MonitorCall):
                self.timeline.append({"name": "monitor (%s)" % e.monitor, "cat": "monitor",
                                      "start": e.start_ns - o, "end": e.end_ns - o, "args": {}})
            elif isinstance(e, CommCall):
                self.timeline.append({"name": e.method, "cat": "communication", "start": e.start_ns - o,
                                      "end": e.end_ns - o, "args": {"bytes": e.bytes}})

    # -- memory --------------------------------------------------------------------------

    def memory(self, section: Section) -> Dict[str, Any]:
        """The step memory of a (training) graph, estimated from its functions in the first kept step."""
        from ..base import buffers as memory
        layers = self.layers.get(section.name, {})
        forward = [(layer.function, layer.name) for key, layer in layers.items()]
        if not forward:
            return {}
        itemsize = next(iter(layers.values())).itemsize
        return memory.step_memory(
            [f for f, _ in forward], [n for _, n in forward], list(self.parameters), itemsize,
            training=bool(section.info.get("backward_per_step")),
            solver_state=sum(memory.solver_state_bytes(s.solver) for s in self.recorder.solvers),
            measured="not measured for a recorded program (its steps are its own); the estimate "
                     "follows the functions of the graph as first recorded")


def _entry(label: str, phase: str, s: _Series) -> Entry:
    return Entry(label=label, phase=phase, samples_ns=[float(x) for x in s.samples], round_sizes=list(s.sizes))
