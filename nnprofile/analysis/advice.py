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
from typing import Callable, Dict, List, Optional, Tuple

from ..choices import GPU_BACKENDS, HALF_DTYPES, OPTIMIZER, SCRIPT
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

    @property
    def total_ms(self) -> float:
        return self.forward_ms + self.backward_ms

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


@dataclass
class Summary:
    section: str
    parts: List[Tuple[str, float]]  # (part, ms) in PARTS order
    half_functions: int
    functions: int
    layers: List[LayerTime]         # forward order
    coverage: Optional[float]       # sum of forward layers / forward_all
    backend: str
    type_config: str
    advice: List[Advice]

    @property
    def step_ms(self) -> float:
        return sum(ms for _, ms in self.parts)

    def share(self, part: str) -> float:
        total = self.step_ms
        return dict(self.parts).get(part, 0.0) / total if total > 0 else 0.0

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
        return sorted(self.base_layers, key=lambda l: -l.total_ms)[:TOP_LAYERS]


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
        merged[name] = replace(m, forward_ms=m.forward_ms + l.forward_ms, backward_ms=m.backward_ms + l.backward_ms,
                               flops=flops, bytes_moved=m.bytes_moved + l.bytes_moved, copies=m.copies + 1)
    return list(merged.values())


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
                   % (dict(s.parts)["input"], _pct(share), s.step_ms, _pct(INPUT_BOUND_SHARE)))]


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
        if step > 0 and l.total_ms / step > DOMINANT_LAYER_SHARE:
            out.append(Advice("dominant_layer",
                              "One layer dominates the step: shrink %s (fewer maps, a smaller kernel, "
                              "a stride) or move it later, after pooling." % l.layer,
                              "%s (%s) takes %.3f ms forward + backward, %s of the %.3f ms step (threshold %s)"
                              % (_named(l), l.layer_type, l.total_ms, _pct(l.total_ms / step), step,
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
        if l is best or l.total_ms / s.step_ms < SLOW_LAYER_MIN_SHARE:
            continue
        if rate < SLOW_LAYER_FACTOR * best_rate:
            out.append(Advice("slow_layer",
                              "%s computes far below what this machine reaches in this network: its "
                              "implementation or its shape (memory-bound, small or odd sizes) costs more "
                              "than its arithmetic." % l.layer,
                              "%s (%s) achieves %.3f GFLOP/s over %.3f ms (%s of the step)%s; the best "
                              "layer, %s, achieves %.3f GFLOP/s (threshold: a tenth of it)"
                              % (_named(l), l.layer_type, rate, l.total_ms, _pct(l.total_ms / s.step_ms),
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
                   % (dict(s.parts)["update"], _pct(share), _pct(UPDATE_SHARE)))]


RULES: List[Callable[[Summary], List[Advice]]] = [
    input_bound, no_half_on_gpu, dominant_layer, slow_layer, between_layers, heavy_update,
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
            "%s %.3f ms (%s)" % (_named(l), l.total_ms, _pct(l.total_ms / step if step > 0 else 0))
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
        rows.append([s.section, "top_layer", l.layer, round(l.total_ms, 6),
                     round(100 * l.total_ms / step, 2) if step > 0 else 0.0,
                     "forward %.6f ms, backward %.6f ms%s" % (l.forward_ms, l.backward_ms,
                                                             ", %d unrolled copies summed" % l.copies if l.copies > 1 else "")])
    for a in s.advice:
        rows.append([s.section, "advice", a.rule, "", "", "%s Evidence: %s." % (a.text, a.evidence)])
    return rows
