"""Where a training step's time goes: the step's parts, its layers, its graphs.

Pure functions over measured sections: a step breakdown (as TensorBoard's profiler gives) of a
project's training section (input, forward, backward, update, monitor, other) or of a recorded
program's step (each iterator's wait, each graph's passes, each solver's calls, the eager work,
monitors, communication, the program's own time), the share of functions that ran in half
precision, each layer's forward and backward paired by identity, the top layers. What to try
first is decided from a ``Summary`` by ``nnprofile.analysis.advice``.
"""

from __future__ import annotations

import math

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..base.choices import HALF_DTYPES, OPTIMIZER, PART_OF_PHASE, SCRIPT
from ..result import Entry, Section
from ..result.paired import LayerTime, layer_times  # noqa: F401  (the one pairing rule)
from . import evidence
from .facts import Facts, InputHeldUp, PartsOverStep, StepNote
from .ownlines import (  # noqa: F401  (wilson: read from here by the tests)
    MIN_SHARE_SAMPLES,
    OwnLine,
    own_clock,
    own_lines,
    wilson,
)

PARTS = ("input", "forward", "backward", "update", "monitor", "other")
TOP_LAYERS = 5


# Other work taking this share of the program's thread or more: its data iterators' threads, which its reads wait
# for, were held up too (unmeasured), and the input's figure is said to be uncertain, no advice built on it.
BUSY_SHARE = 0.05


@dataclass(frozen=True)
class Advice:
    """What a rule found: its name and the figures it stands on (the words: ``nnprofile.render.advice``)."""

    rule: str
    facts: Facts


@dataclass(frozen=True)
class GraphTime:
    """A recorded program's graph in its step: passes per step and time per step."""

    name: str
    trained: bool
    forward_per_step: float
    backward_per_step: float
    forward_ms: float  # per step
    backward_ms: float  # per step
    forward_pass_ms: float  # one pass
    role: str = ""  # trained, backward, feeds, evaluation ("" in older results: what it ran says)
    feeds: Tuple[str, ...] = ()

    @property
    def evaluation(self) -> bool:
        """A forward-only graph that nothing trained reads (older results: any forward-only graph)."""
        if self.role:
            return self.role == "evaluation"
        return not self.trained and not self.backward_per_step


class Part(NamedTuple):
    """A part of a step: its name (input, forward, update (Adam), other, ...) and its time per step (ms). A tuple,
    so that ``dict(summary.parts)`` reads it."""

    name: str
    ms: float


@dataclass
class Summary:
    section: str
    # (part, ms per step): a project's in PARTS order; a program's named by what they are
    # ("input (data)", "forward (loss)", "update (Adam: gen)", "monitor", "other"), the first
    # word of the name its kind (part_kind).
    parts: List["Part"]
    half_functions: int
    functions: int
    layers: List[LayerTime]  # forward order
    coverage: Optional[float]  # sum of forward layers / forward_all
    backend: str
    type_config: str
    advice: List[Advice]
    graphs: List[GraphTime] = field(default_factory=list)  # a recorded program's graphs
    notes: List[StepNote] = field(default_factory=list)  # how a part was reckoned, where it is not the plain rule
    machine_rates: Dict[str, float] = field(default_factory=dict)  # what this machine reaches, as measured
    # A recorded program's own lines in ``other`` (sampled between NNabla's calls), the most first.
    own_lines: List["OwnLine"] = field(default_factory=list)
    own_samples: int = 0
    # What those samples came from ("cpu": the thread's CPU clock; "timer": the profiling timer, at the kernel's tick;
    # "thread": a thread of nnprofile's, on the wall clock), and how far apart they were asked for (ms).
    own_clock: Tuple[str, float] = ("", 0.0)
    # Each part's standard error (ms per step) and the step's (``nnprofile.analysis.evidence``): how sure advice is.
    errors: Dict[str, float] = field(default_factory=dict)
    step_error: float = 0.0
    training: bool = True  # a training step (a program that trains nothing: an inference loop's step)

    def kind_error(self, kind: str) -> float:
        """The standard error of the parts of a kind together."""
        return math.sqrt(sum(self.errors.get(p, 0.0) ** 2 for p, _ in self.parts if part_kind(p) == kind))

    @property
    def step_ms(self) -> float:
        return sum(ms for _, ms in self.parts)

    def kind_ms(self, kind: str) -> float:
        """The parts of a kind together (input, forward, backward, update, monitor, other)."""
        return sum(ms for part, ms in self.parts if part_kind(part) == kind)

    def share(self, kind: str) -> float:
        total = self.step_ms
        return self.kind_ms(kind) / total if total > 0 else 0.0

    @property
    def base_layers(self) -> List[LayerTime]:
        """The layers with their unrolled copies summed into their base layer (see ``base_layers``),
        computed once."""
        cached = self.__dict__.get("_base_layers")
        if cached is None or cached[0] is not self.layers:
            cached = self.__dict__["_base_layers"] = (self.layers, base_layers(self.layers))
        return cached[1]

    @property
    def top_layers(self) -> List[LayerTime]:
        return sorted(self.base_layers, key=lambda l: -l.step_ms)[:TOP_LAYERS]


# An unrolled copy of a layer: NNabla names it ``<layer>_<repeat id>[<i>]`` (Affine_2_RecurrentInput[3]),
# a recorded program ``<scope>[<i>]`` (conv1/conv[2], the same parameters applied again).
_COPY = re.compile(r"(?:_[A-Z][A-Za-z0-9]*)?\[\d+\]$")


def base_name(layer: str) -> str:
    """The layer an unrolled or repeated copy belongs to: ``Affine_2`` for ``Affine_2_RecurrentInput[3]``."""
    base = layer
    while True:
        stripped = _COPY.sub("", base)
        if stripped == base or not stripped:
            return base
        base = stripped


def base_layers(layers: List[LayerTime]) -> List[LayerTime]:
    """Layers with their unrolled copies summed into their base layer, in order of first appearance."""
    merged: Dict[str, LayerTime] = {}
    for l in layers:
        name = base_name(l.layer) if "[" in l.layer else l.layer
        m = merged.get(name)
        if m is None:
            merged[name] = l if name == l.layer else replace(l, layer=name, copies=1)
            continue
        flops = m.flops + l.flops if m.flops is not None and l.flops is not None else None
        per_step = m.step_ms + l.step_ms if m.per_step is not None or l.per_step is not None else None
        merged[name] = replace(
            m,
            forward_ms=m.forward_ms + l.forward_ms,
            backward_ms=m.backward_ms + l.backward_ms,
            flops=flops,
            bytes_moved=m.bytes_moved + l.bytes_moved,
            copies=m.copies + 1,
            per_step=per_step,
        )
    return list(merged.values())


def part_kind(part: str) -> str:
    """What a part of the step is: the first word of its name."""
    return part.split(" ", 1)[0]


def round_totals(entry: Entry) -> List[float]:
    """An entry's time in each round (``Entry.round_totals``)."""
    return entry.round_totals()


def per_step_ms(entry: Entry) -> float:
    """A recorded program's entry: its time per step, over the kept steps (``Entry.per_round_ns``). Every
    part counts the same steps: where leaving the slow ones out would leave a graph that ran in few steps
    without a call, none is left out (``nnprofile.result.drift.drift_over``), so that no part reads zero."""
    return entry.per_round_ns() / 1e6


def _inside(label: str) -> str:
    """What a label's parentheses hold: "Adam: gen" in "update (Adam: gen)"."""
    return label[label.index("(") + 1 : label.rindex(")")] if "(" in label and label.endswith(")") else label


def _graph_parts(graphs: Sequence[Section], add: Callable[[str, Sequence[Entry]], None]) -> List["GraphTime"]:
    """Each graph's forward and backward, as parts of the step (``add``), and its passes per step."""
    graph_times: List[GraphTime] = []
    for g in graphs:
        f, b = g.entries_of("forward_all"), g.entries_of("backward_all")
        if f:
            add("forward (%s)" % g.name, f[:1])
        if b:
            add("backward (%s)" % g.name, b[:1])
        # Passes per step and time per pass over the steps the parts count: their product is the part.
        forward_passes = f[0].calls_per_round() if f else 0.0
        forward_ms = per_step_ms(f[0]) if f else 0.0
        graph_times.append(
            GraphTime(
                g.name,
                bool(g.info.trained_by),
                forward_passes,
                b[0].calls_per_round() if b else 0.0,
                forward_ms,
                per_step_ms(b[0]) if b else 0.0,
                forward_ms / forward_passes if forward_passes else 0.0,
                g.info.role or "",
                tuple(g.info.feeds or ()),
            )
        )
    return graph_times


def _by_solver(script: Section) -> Dict[str, List[Entry]]:
    """A program's solver calls (update's part) by the solver they name, in order of first call."""
    solvers: Dict[str, List[Entry]] = {}
    for e in script.entries:
        if PART_OF_PHASE.get(e.phase) == "update":
            solvers.setdefault(_inside(e.label), []).append(e)
    return solvers


def _program_parts(
    script: Section, graphs: Sequence[Section]
) -> Tuple[List[Tuple[str, float]], Dict[str, float], List["GraphTime"]]:
    """The step's parts but ``other`` (ms per step) with each one's standard error, and each graph's passes."""
    parts: List[Tuple[str, float]] = []
    errors: Dict[str, float] = {}

    def add(name: str, entries: Sequence[Entry]) -> None:
        parts.append((name, sum(per_step_ms(e) for e in entries)))
        errors[name] = evidence.combined(evidence.entry_error(e, per_step_ms(e)) for e in entries)

    validation = dict(script.info.inputs_of or {})
    for e in script.entries_of("load_dataset"):
        name = _inside(e.label)
        if name in validation:  # a validation's data: part of the evaluation, not the training's input
            add("evaluation input (%s, for '%s')" % (name, validation[name]), [e])
        else:
            add("input (%s)" % name, [e])
    graph_times = _graph_parts(graphs, add)
    if script.entries_of("eager"):
        add("eager", script.entries_of("eager"))
    for key, entries in _by_solver(script).items():
        add("update (%s)" % key, entries)
    for phase, kind in PART_OF_PHASE.items():  # a part of its own (monitor, communication): its phase's calls
        if kind not in ("input", "forward", "backward", "update") and script.entries_of(phase):
            add(kind, script.entries_of(phase))
    return parts, errors, graph_times


def summarize_program(
    script: Section,
    graphs: Sequence[Section],
    context: str = "cpu:float",
    layers: Optional[Dict[str, List[LayerTime]]] = None,
    forward_coverage: Optional[float] = None,
) -> Optional[Summary]:
    """A recorded program's step: its parts (each iterator's wait, each graph's forward and backward,
    each solver's calls, the eager work, monitors, communication, and the program's own time), per step.

    Each part is its calls per step times its time per call (``per_step_ms``): a graph that ran in the
    recorded steps always has its part, also when it ran in few of them. The program's own time
    (``other``) is what the step leaves beyond its parts, so that they add up to the step; where the
    parts alone come to more than the step (a part's calls all in steps the machine ran slow in, which
    the step leaves out), the note says so."""
    if not script.complete or not script.entries_of("step"):
        return None
    parts, errors, graph_times = _program_parts(script, graphs)
    notes: List[StepNote] = []
    step = per_step_ms(script.entries_of("step")[0])
    step_error = evidence.entry_error(script.entries_of("step")[0], step)
    held = sum(ms for _, ms in parts)
    if held > step * 1.001:
        notes.append(PartsOverStep(held, step))
    busy = script.interference.share if script.interference is not None else None
    reading = sum(ms for p, ms in parts if part_kind(p) == "input")
    if busy is not None and busy >= BUSY_SHARE and reading > 0:
        notes.append(InputHeldUp(busy, reading))
    other = max(0.0, step - held)
    parts.append(("other", other))
    errors["other"] = evidence.combined([step_error] + list(errors.values()))
    own = own_lines(script.info, other)
    named = layers or {}
    every = [l for g in graphs for l in named.get(g.name, [])]
    forward = [e for g in graphs for e in g.entries_of("forward_function")]
    backend, _, type_config = context.partition(":")
    return Summary(
        section=script.title,
        parts=[Part(p, round(ms, 6)) for p, ms in parts],
        half_functions=sum(1 for e in forward if (e.dtype or "") in HALF_DTYPES),
        functions=len(forward),
        layers=every,
        coverage=forward_coverage,
        backend=backend,
        type_config=type_config or "float",
        advice=[],
        graphs=graph_times,
        notes=notes,
        own_lines=own,
        own_samples=script.info.own_samples or 0,
        own_clock=own_clock(script.info),
        errors=errors,
        step_error=step_error,
        training=any(g.info.trained_by or g.info.role == "trained" for g in graphs) or not graphs,
    )


def program_layers(graph: Section, several: bool) -> List[LayerTime]:
    """A graph's layers with their time per step (and, among several graphs, named with their graph)."""
    out = []
    for l in layer_times(graph):
        per_step = sum(per_step_ms(e) for e in (l.forward, l.backward) if e is not None)
        name = "%s: %s" % (graph.name, l.layer) if several else l.layer
        out.append(replace(l, layer=name, per_step=per_step))
    return out


def summarize_section(
    section: Section,
    context: str = "cpu:float",
    layers: Optional[List[LayerTime]] = None,
    forward_coverage: Optional[float] = None,
) -> Optional[Summary]:
    """The breakdown of one complete training section (None for others)."""
    if section.kind not in (OPTIMIZER, SCRIPT) or not section.complete:
        return None
    totals = {part: 0.0 for part in PARTS}
    spread: Dict[str, List[float]] = {part: [] for part in PARTS}
    for e in section.entries:
        part = PART_OF_PHASE.get(e.phase)
        if part in totals:
            totals[part] += e.mean_ms
            spread[part].append(evidence.entry_error(e, e.mean_ms))
    measured_step = section.entries_of("step")
    step_error = evidence.combined(x for xs in spread.values() for x in xs)
    if measured_step:  # a program's step is measured: what its parts leave is the program's own time
        totals["other"] += max(0.0, measured_step[0].mean_ms - sum(totals.values()))
        step_error = evidence.entry_error(measured_step[0], measured_step[0].mean_ms)
        spread["other"].append(step_error)
    errors = {p: evidence.combined(spread[p]) for p in PARTS}
    forward = section.entries_of("forward_function")
    half = sum(1 for e in forward if (e.dtype or "") in HALF_DTYPES)
    backend, _, type_config = context.partition(":")
    return Summary(
        section=section.title,
        parts=[Part(p, round(totals[p], 6)) for p in PARTS],
        half_functions=half,
        functions=len(forward),
        layers=layer_times(section) if layers is None else layers,
        coverage=forward_coverage,
        backend=backend,
        type_config=type_config or "float",
        advice=[],
        errors=errors,
        step_error=step_error,
    )
