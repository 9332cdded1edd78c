"""Where a training step's time goes, and what to try first.

Pure functions over a measured training section: a step breakdown (as
TensorBoard's profiler gives), the share of functions that ran in half
precision, the top layers, and recommendations, each carrying the measured
evidence that triggered it. Every rule is a small function in ``RULES``, so
that its trigger can be tested on hand-made figures.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base.choices import GPU_BACKENDS, HALF_DTYPES, OPTIMIZER, SCRIPT
from ..result import Entry, Section

PARTS = ("input", "forward", "backward", "update", "monitor", "other")
PHASE_PART = {
    "load_dataset": "input", "let_data": "input", "generate_data": "input",
    "forward_all": "forward", "backward_all": "backward",
    "update": "update", "weight_decay": "update", "solver": "update",
    "monitor_loss": "monitor", "prepare_backward": "other",
}

INPUT_BOUND_SHARE = 0.20
DOMINANT_LAYER_SHARE = 0.50
SLOW_LAYER_FACTOR = 0.10      # achieved GFLOP/s below a tenth of the network's best
SLOW_LAYER_MIN_SHARE = 0.05   # ... in a layer that matters (5% of the step or more)
BETWEEN_LAYERS_COVERAGE = 0.80
UPDATE_SHARE = 0.20
EVALUATION_SHARE = 0.10       # a forward-only graph costing this share of the step is said
TOP_LAYERS = 5


@dataclass(frozen=True)
class LayerTime:
    """One layer's forward and backward, paired by the layer's identity (not its name)."""

    layer: str
    layer_type: str
    forward_ms: float
    backward_ms: float
    flops: Optional[int]  # forward + backward, None when unknown
    bytes_moved: int = 0  # read and written, forward + backward
    forward: Optional[Entry] = field(default=None, compare=False)   # the entries behind the figures
    backward: Optional[Entry] = field(default=None, compare=False)
    copies: int = 1  # a base layer: how many unrolled (or repeated) copies it sums
    # A recorded program's layer: its time per step (its calls in a step, summed), which differs
    # from a call's where its graph runs more or less than once a step; None: one call a step.
    per_step: Optional[float] = None

    @property
    def total_ms(self) -> float:
        """Forward and backward, per call."""
        return self.forward_ms + self.backward_ms

    @property
    def step_ms(self) -> float:
        """Its time in a step: what its share of the step is made of."""
        return self.total_ms if self.per_step is None else self.per_step

    @property
    def gflops_per_s(self) -> Optional[float]:
        if self.flops is None or self.total_ms <= 0:
            return None
        return self.flops / (self.total_ms * 1e6)


@dataclass(frozen=True)
class Advice:
    rule: str
    text: str
    evidence: str


@dataclass(frozen=True)
class GraphTime:
    """A recorded program's graph in its step: passes per step and time per step."""

    name: str
    trained: bool
    forward_per_step: float
    backward_per_step: float
    forward_ms: float       # per step
    backward_ms: float      # per step
    forward_pass_ms: float  # one pass


@dataclass
class Summary:
    section: str
    # (part, ms per step): a project's in PARTS order; a program's named by what they are
    # ("input (data)", "forward (loss)", "update (Adam: gen)", "monitor", "other"), the first
    # word of the name its kind (part_kind).
    parts: List[Tuple[str, float]]
    half_functions: int
    functions: int
    layers: List[LayerTime]         # forward order
    coverage: Optional[float]       # sum of forward layers / forward_all
    backend: str
    type_config: str
    advice: List[Advice]
    graphs: List[GraphTime] = field(default_factory=list)  # a recorded program's graphs

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


def layer_times(section: Section) -> List[LayerTime]:
    """Forward and backward of each layer, in forward order, paired by ``layer_id``.

    Results of version 1 carry no ids; there, the layer name (then unique per
    section) stands for the identity.
    """
    def key(e):
        return e.layer_id if e.layer_id is not None else e.layer
    backward = {key(e): e for e in section.entries_of("backward_function")}
    out = []
    for f in section.entries_of("forward_function"):
        b = backward.get(key(f))
        flops: Optional[int] = None
        if f.flops is not None and (b is None or b.flops is not None):
            flops = f.flops + (b.flops or 0 if b is not None else 0)
        moved = sum((e.bytes_read or 0) + (e.bytes_written or 0) for e in (f, b) if e is not None)
        out.append(LayerTime(f.layer or "", f.layer_type or "", f.mean_ms, b.mean_ms if b else 0.0, flops, moved,
                             f, b))
    return out


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
        merged[name] = replace(m, forward_ms=m.forward_ms + l.forward_ms, backward_ms=m.backward_ms + l.backward_ms,
                               flops=flops, bytes_moved=m.bytes_moved + l.bytes_moved, copies=m.copies + 1,
                               per_step=per_step)
    return list(merged.values())


def part_kind(part: str) -> str:
    """What a part of the step is: the first word of its name."""
    return part.split(" ", 1)[0]


def round_totals(entry: Entry) -> List[float]:
    """An entry's time in each round (a recorded program's step): its calls summed, the timing's own
    cost taken off each, in ns; a round without a call counts as none."""
    totals: List[float] = []
    start = 0
    for n in entry.round_sizes or [len(entry.samples_ns)]:
        totals.append(sum(max(0.0, x - entry.overhead_ns) for x in entry.samples_ns[start:start + n]))
        start += n
    return totals


def per_step_ms(entry: Entry) -> float:
    """A recorded program's entry: its time per step, the mean over the kept steps of its calls summed
    (a step without a call counts as none; the steps the machine ran slow in are left out, as the
    step's own figure leaves them out)."""
    dropped = set(entry.dropped_rounds)
    every = round_totals(entry)
    kept = [t for r, t in enumerate(every) if r not in dropped] or every
    return sum(kept) / len(kept) / 1e6 if kept else 0.0


def _inside(label: str) -> str:
    """What a label's parentheses hold: "Adam: gen" in "update (Adam: gen)"."""
    return label[label.index("(") + 1:label.rindex(")")] if "(" in label and label.endswith(")") else label


def summarize_program(script: Section, graphs: Sequence[Section], context: str = "cpu:float",
                      layers: Optional[Dict[str, List[LayerTime]]] = None,
                      forward_coverage: Optional[float] = None) -> Optional[Summary]:
    """A recorded program's step: its parts (each iterator's wait, each graph's forward and backward,
    each solver's calls, monitors, communication, the program's own time), per step, adding up to
    the measured step."""
    if not script.complete or not script.entries_of("step"):
        return None
    parts: List[Tuple[str, float]] = []
    for e in script.entries_of("load_dataset"):
        parts.append(("input (%s)" % _inside(e.label), per_step_ms(e)))
    graph_times: List[GraphTime] = []
    for g in graphs:
        f = [per_step_ms(e) for e in g.entries_of("forward_all")]
        b = [per_step_ms(e) for e in g.entries_of("backward_all")]
        info = g.info or {}
        if f:
            parts.append(("forward (%s)" % g.name, f[0]))
        if b:
            parts.append(("backward (%s)" % g.name, b[0]))
        one = g.entries_of("forward_all")
        graph_times.append(GraphTime(g.name, bool(info.get("trained_by")), float(info.get("forward_per_step") or 0),
                                     float(info.get("backward_per_step") or 0), f[0] if f else 0.0,
                                     b[0] if b else 0.0, one[0].mean_ms if one else 0.0))
    solvers: Dict[str, float] = {}
    for e in script.entries:
        if e.phase in ("prepare_backward", "weight_decay", "update", "solver"):
            key = _inside(e.label)
            solvers[key] = solvers.get(key, 0.0) + per_step_ms(e)
    parts += [("update (%s)" % key, ms) for key, ms in solvers.items()]
    for kind, phase in (("monitor", "monitor_loss"), ("communication", "communication")):
        entries = script.entries_of(phase)
        if entries:
            parts.append((kind, sum(per_step_ms(e) for e in entries)))
    step = per_step_ms(script.entries_of("step")[0])
    parts.append(("other", max(0.0, step - sum(ms for _, ms in parts))))
    named = layers or {}
    every = [l for g in graphs for l in named.get(g.name, [])]
    forward = [e for g in graphs for e in g.entries_of("forward_function")]
    backend, _, type_config = context.partition(":")
    summary = Summary(section=script.title, parts=[(p, round(ms, 6)) for p, ms in parts],
                      half_functions=sum(1 for e in forward if (e.dtype or "") in HALF_DTYPES),
                      functions=len(forward), layers=every, coverage=forward_coverage, backend=backend,
                      type_config=type_config or "float", advice=[], graphs=graph_times)
    summary.advice = [a for rule in RULES for a in rule(summary)]
    return summary


def program_layers(graph: Section, several: bool) -> List[LayerTime]:
    """A graph's layers with their time per step (and, among several graphs, named with their graph)."""
    out = []
    for l in layer_times(graph):
        per_step = sum(per_step_ms(e) for e in (l.forward, l.backward) if e is not None)
        name = "%s: %s" % (graph.name, l.layer) if several else l.layer
        out.append(replace(l, layer=name, per_step=per_step))
    return out


def summarize_section(section: Section, context: str = "cpu:float",
                      layers: Optional[List[LayerTime]] = None,
                      forward_coverage: Optional[float] = None) -> Optional[Summary]:
    """The breakdown of one complete training section (None for others)."""
    if section.kind not in (OPTIMIZER, SCRIPT) or not section.complete:
        return None
    totals = {part: 0.0 for part in PARTS}
    for e in section.entries:
        part = PHASE_PART.get(e.phase)
        if part:
            totals[part] += e.mean_ms
    measured_step = section.entries_of("step")
    if measured_step:  # a program's step is measured: what its parts leave is the program's own time
        totals["other"] += max(0.0, measured_step[0].mean_ms - sum(totals.values()))
    forward = section.entries_of("forward_function")
    half = sum(1 for e in forward if (e.dtype or "") in HALF_DTYPES)
    backend, _, type_config = context.partition(":")
    summary = Summary(section=section.title, parts=[(p, round(totals[p], 6)) for p in PARTS],
                      half_functions=half, functions=len(forward),
                      layers=layer_times(section) if layers is None else layers,
                      coverage=forward_coverage, backend=backend,
                      type_config=type_config or "float", advice=[])
    summary.advice = [a for rule in RULES for a in rule(summary)]
    return summary


def _named(l: LayerTime) -> str:
    """A layer's name, with how many unrolled copies it sums."""
    return l.layer if l.copies == 1 else "%s (%d copies)" % (l.layer, l.copies)


def _pct(x: float) -> str:
    return "%.1f%%" % (100 * x)


# -- rules: each takes a Summary and returns the advice it triggers ---------------

def input_bound(s: Summary) -> List[Advice]:
    share = s.share("input")
    if share <= INPUT_BOUND_SHARE:
        return []
    return [Advice("input_bound",
                   "The step waits for its data: prepare batches ahead (a dataset cache on fast storage, "
                   "smaller images, fewer augmentations) or overlap loading with computing.",
                   "input (load_dataset, let_data) takes %.3f ms, %s of the %.3f ms step (threshold %s)"
                   % (s.kind_ms("input"), _pct(share), s.step_ms, _pct(INPUT_BOUND_SHARE)))]


def no_half_on_gpu(s: Summary) -> List[Advice]:
    if s.backend not in GPU_BACKENDS or s.half_functions > 0 or not s.functions:
        return []
    return [Advice("no_half_precision",
                   "No function ran in half precision on a GPU backend: try mixed precision "
                   "(nnprofile compare PROJECT --set type_config=float --set type_config=half) and "
                   "check the validation error with --train-epochs.",
                   "0 of %d functions ran in half precision on %s:%s" % (s.functions, s.backend, s.type_config))]


def dominant_layer(s: Summary) -> List[Advice]:
    step = s.step_ms
    out = []
    for l in s.base_layers:
        if step > 0 and l.step_ms / step > DOMINANT_LAYER_SHARE:
            out.append(Advice("dominant_layer",
                              "One layer dominates the step: shrink %s (fewer maps, a smaller kernel, "
                              "a stride) or move it later, after pooling." % l.layer,
                              "%s (%s) takes %.3f ms forward + backward, %s of the %.3f ms step (threshold %s)"
                              % (_named(l), l.layer_type, l.step_ms, _pct(l.step_ms / step), step,
                                 _pct(DOMINANT_LAYER_SHARE))))
    return out


def slow_layer(s: Summary) -> List[Advice]:
    layers = s.base_layers
    rates = {id(l): l.gflops_per_s for l in layers}
    rated = [l for l in layers if rates[id(l)] is not None and l.total_ms > 0]
    if len(rated) < 2 or s.step_ms <= 0:
        return []
    best = max(rated, key=lambda l: rates[id(l)] or 0.0)
    best_rate = rates[id(best)] or 0.0
    out = []
    for l in rated:
        rate = rates[id(l)] or 0.0
        if l is best or l.step_ms / s.step_ms < SLOW_LAYER_MIN_SHARE:
            continue
        if rate < SLOW_LAYER_FACTOR * best_rate:
            out.append(Advice("slow_layer",
                              "%s computes far below what this machine reaches in this network: its "
                              "implementation or its shape (memory-bound, small or odd sizes) costs more "
                              "than its arithmetic." % l.layer,
                              "%s (%s) achieves %.3f GFLOP/s over %.3f ms (%s of the step)%s; the best "
                              "layer, %s, achieves %.3f GFLOP/s (threshold: a tenth of it)"
                              % (_named(l), l.layer_type, rate, l.step_ms, _pct(l.step_ms / s.step_ms),
                                 _memory(l), best.layer, best_rate)))
    return out


def _memory(l: LayerTime) -> str:
    """For the evidence: how memory-bound a layer is, and the bandwidth it reached."""
    if not l.bytes_moved or l.flops is None:
        return ""
    return ", %.2f FLOP/byte, %.2f GB/s moved" % (l.flops / l.bytes_moved,
                                                 l.bytes_moved / (l.total_ms * 1e6))


def between_layers(s: Summary) -> List[Advice]:
    if s.coverage is None or s.coverage >= BETWEEN_LAYERS_COVERAGE:
        return []
    return [Advice("between_layers",
                   "Much of forward_all is spent between the layers (graph bookkeeping, memory "
                   "allocation, launches): larger batches or fewer, larger layers amortise it.",
                   "the forward_function entries add up to %s of forward_all (threshold %s)"
                   % (_pct(s.coverage), _pct(BETWEEN_LAYERS_COVERAGE)))]


def heavy_update(s: Summary) -> List[Advice]:
    share = s.share("update")
    if share <= UPDATE_SHARE:
        return []
    return [Advice("heavy_update",
                   "The solver update is a large part of the step: a network with many parameters "
                   "and little computation; a simpler solver (SGD, Momentum) or larger batches help.",
                   "update (and weight decay) take %.3f ms, %s of the step (threshold %s)"
                   % (s.kind_ms("update"), _pct(share), _pct(UPDATE_SHARE)))]


def costly_evaluation(s: Summary) -> List[Advice]:
    """A graph that runs forward only (a validation pass) and costs a notable share of the step."""
    step = s.step_ms
    out = []
    for g in s.graphs:
        if g.trained or g.backward_per_step or step <= 0 or g.forward_ms / step < EVALUATION_SHARE:
            continue
        out.append(Advice("costly_evaluation",
                          "The graph '%s' runs forward only (an evaluation) and costs %s of the training step: "
                          "evaluate less often, on fewer batches, or with a larger batch."
                          % (g.name, _pct(g.forward_ms / step)),
                          "%.2f forward passes of '%s' per step, %.3f ms each: %.3f ms of the %.3f ms step "
                          "(threshold %s)" % (g.forward_per_step, g.name, g.forward_pass_ms, g.forward_ms, step,
                                             _pct(EVALUATION_SHARE))))
    return out


RULES: List[Callable[[Summary], List[Advice]]] = [
    input_bound, no_half_on_gpu, dominant_layer, slow_layer, between_layers, heavy_update, costly_evaluation,
]


def summary_lines(s: Summary) -> List[str]:
    """The log footer of a training section."""
    step = s.step_ms
    lines = ["Step: %.3f ms = %s" % (step, " + ".join(
        "%s %.3f ms (%s)" % (p, ms, _pct(ms / step if step > 0 else 0)) for p, ms in s.parts))]
    if s.functions:
        lines.append("Half precision: %d of %d functions" % (s.half_functions, s.functions))
    if s.layers:
        lines.append("Top layers (forward + backward): %s" % ", ".join(
            "%s %.3f ms (%s)" % (_named(l), l.step_ms, _pct(l.step_ms / step if step > 0 else 0))
            for l in s.top_layers))
    for a in s.advice:
        lines.append("Advice: %s Evidence: %s." % (a.text, a.evidence))
    if not s.advice:
        lines.append("Advice: none of nnprofile's rules fired for this step.")
    return lines


def summary_rows(s: Summary) -> List[List[object]]:
    """Rows of summary.csv and the Summary sheet: section, item, name, ms, percent, detail."""
    step = s.step_ms
    rows: List[List[object]] = [[s.section, "step", "training step", round(step, 6), 100.0, ""]]
    for p, ms in s.parts:
        rows.append([s.section, "part", p, ms, round(100 * ms / step, 2) if step > 0 else 0.0, ""])
    if s.functions:
        rows.append([s.section, "half_precision", "functions in half precision", s.half_functions,
                     round(100.0 * s.half_functions / s.functions, 2), "%d of %d" % (s.half_functions, s.functions)])
    for l in s.top_layers:
        rows.append([s.section, "top_layer", l.layer, round(l.step_ms, 6),
                     round(100 * l.step_ms / step, 2) if step > 0 else 0.0,
                     "forward %.6f ms, backward %.6f ms%s" % (l.forward_ms, l.backward_ms,
                                                             ", %d unrolled copies summed" % l.copies if l.copies > 1 else "")])
    for a in s.advice:
        rows.append([s.section, "advice", a.rule, "", "", "%s Evidence: %s." % (a.text, a.evidence)])
    return rows
