"""What to try first: recommendations over a step's breakdown, each with the measured evidence that triggered it.

Every rule is a small function in ``RULES`` from a ``Summary`` (``nnprofile.analysis.breakdown``)
to the advice it triggers, so that its trigger can be tested on hand-made figures. Advice about a
layer fits what the layer does (``nnprofile.base.kinds``): maps, kernels, strides and pooling are
for convolutions only.
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Tuple

from ..base import kinds, machine
from ..base.choices import GPU_BACKENDS
from . import evidence
from .breakdown import MIN_SHARE_SAMPLES, Advice, LayerTime, Summary, named, pct

INPUT_BOUND_SHARE = 0.20
DOMINANT_LAYER_SHARE = 0.50
SLOW_LAYER_FACTOR = 0.10  # achieved GFLOP/s below a tenth of the network's best
SLOW_LAYER_MIN_SHARE = 0.05  # ... in a layer that matters (5% of the step or more)
BETWEEN_LAYERS_COVERAGE = 0.80
UPDATE_SHARE = 0.20
EVALUATION_SHARE = 0.10  # a forward-only graph costing this share of the step is said


def _kind_share(s: Summary, kind: str) -> Tuple[float, Tuple[float, float]]:
    """A kind of part's share of the step, and its 95 % interval."""
    return s.share(kind), evidence.share_interval(s.kind_ms(kind), s.kind_error(kind), s.step_ms, s.step_error)


def input_bound(s: Summary) -> List[Advice]:
    share, bounds = _kind_share(s, "input")
    if not evidence.past(bounds, INPUT_BOUND_SHARE):
        return []
    return [
        Advice(
            "input_bound",
            "The step waits for its data: prepare batches ahead (a dataset cache on fast storage, "
            "smaller images, fewer augmentations) or overlap loading with computing.",
            "input (load_dataset, let_data) takes %.3f ms, %s %s of the %.3f ms step (threshold %s)"
            % (s.kind_ms("input"), pct(share), evidence.bracket(bounds, True), s.step_ms, pct(INPUT_BOUND_SHARE)),
        )
    ]


def no_half_on_gpu(s: Summary) -> List[Advice]:
    if s.backend not in GPU_BACKENDS or s.half_functions > 0 or not s.functions:
        return []
    return [
        Advice(
            "no_half_precision",
            "No function ran in half precision on a GPU backend: try mixed precision "
            "(nnprofile compare PROJECT --set type_config=float --set type_config=half) and "
            "check the validation error with --train-epochs.",
            "0 of %d functions ran in half precision on %s:%s" % (s.functions, s.backend, s.type_config),
        )
    ]


# What to try where one layer dominates, by what the layer does (``nnprofile.base.kinds``).
DOMINANT_ADVICE = {
    kinds.CONVOLUTION: "shrink %s (fewer maps, a smaller kernel, a stride) or move it later, after pooling.",
    kinds.AFFINE: "%s is a product with a weight matrix: fewer units, a smaller input to it, "
    "or its weight factored into two smaller ones (a low-rank layer, as an "
    "SVD-compressed network has).",
    kinds.RECURRENT: "%s is recurrent, a small product per time step: fewer hidden units, shorter sequences "
    "(truncated backpropagation through time), or a larger batch.",
    kinds.NORMALIZATION: "%s reads and writes its whole input and computes little: normalize fewer or smaller "
    "tensors, or fuse it with the activation after it (F.fused_batch_normalization).",
    kinds.POOLING: "%s reads its whole input: give it a smaller one (a stride in the layer before it).",
    kinds.EMBEDDING: "%s looks up rows of a table; its backward adds into the whole table's gradient and the "
    "solver updates every row: a smaller vocabulary or embedding size, or fewer lookups per step.",
    kinds.ELEMENTWISE: "%s is element-wise: its time is moving its operands through memory, not arithmetic. "
    "Smaller operands (batch, dimensions), or fewer separate element-wise functions (each "
    "reads and writes its whole input).",
    kinds.REDUCTION: "%s reads its whole input to produce little: reduce smaller tensors, or once where the "
    "program reduces the same data several times.",
    kinds.LOSS: "the loss %s has a large input (many classes or positions): fewer classes, or a sampled loss.",
    kinds.DATA: "%s only moves data (reshape, transpose, concatenate, slice): lay the data out so that it "
    "needs no copy.",
}


def _layer_share(s: Summary, l: LayerTime) -> Tuple[float, float]:
    return evidence.share_interval(l.step_ms, evidence.layer_error(l), s.step_ms, s.step_error)


def dominant_layer(s: Summary) -> List[Advice]:
    step = s.step_ms
    out = []
    for l in s.base_layers:
        if step > 0 and evidence.past(_layer_share(s, l), DOMINANT_LAYER_SHARE):
            what = DOMINANT_ADVICE.get(kinds.layer_kind(l.layer_type))
            out.append(
                Advice(
                    "dominant_layer",
                    "One layer dominates the step: "
                    + (
                        what % l.layer
                        if what
                        else "%s; the others matter little until it costs "
                        "less (its shapes and arguments are in the "
                        "layer table)." % l.layer
                    ),
                    "%s (%s) takes %.3f ms forward + backward, %s %s of the %.3f ms step (threshold %s)"
                    % (
                        named(l),
                        l.layer_type,
                        l.step_ms,
                        pct(l.step_ms / step),
                        evidence.bracket(_layer_share(s, l), True),
                        step,
                        pct(DOMINANT_LAYER_SHARE),
                    ),
                )
            )
    return out


# How a layer's rate is judged, by what it does: arithmetic against the machine's matrix product (FLOP/s),
# or moving its operands against the machine's memory bandwidth (bytes/s); other kinds are not judged.
COMPUTE_KINDS = (kinds.CONVOLUTION, kinds.AFFINE, kinds.RECURRENT)
MEMORY_KINDS = (kinds.ELEMENTWISE, kinds.NORMALIZATION, kinds.POOLING, kinds.REDUCTION, kinds.DATA)


def _rate(l: LayerTime) -> Optional[Tuple[float, str, str]]:
    """(the layer's rate, the machine's reach it is judged by, its unit), by what the layer does."""
    kind = kinds.layer_kind(l.layer_type)
    if kind in COMPUTE_KINDS and l.gflops_per_s is not None:
        return l.gflops_per_s, "gflops", "GFLOP/s"
    if kind in MEMORY_KINDS and l.gbytes_per_s is not None:
        return l.gbytes_per_s, "gbytes_per_s", "GB/s"
    return None


def implausible(s: Summary) -> List[str]:
    """Notes for layers whose rate is above what this machine reaches: their time is too short to rate."""
    out = []
    for l in s.base_layers:
        for rate, key, unit in [(l.gflops_per_s, "gflops", "GFLOP/s"), (l.gbytes_per_s, "gbytes_per_s", "GB/s")]:
            reach = s.machine_rates.get(key)
            if rate is not None and reach and not machine.plausible(rate, reach):
                out.append(
                    "%s (%s) reads %.1f %s, above what this machine reaches (%.1f %s measured): its time "
                    "(%.6f ms) is too short to rate, and it is no reference for other layers"
                    % (named(l), l.layer_type, rate, unit, reach, unit, l.total_ms)
                )
                break
    return out


def _slow_words(key: str, one: bool) -> str:
    """What slow layers of a kind of work do (``key``: gflops, gbytes_per_s), for one layer or several."""
    if key == "gflops":
        return (
            "compute%s far below what this machine reaches: %s implementation or shape (small or odd sizes) costs "
            "more than %s arithmetic" % ("s" if one else "", "its" if one else "their", "its" if one else "their")
        )
    return (
        "move%s %s operands far slower than this machine's memory allows: many small calls, or a layout %s must "
        "convert, cost more than the data moved"
        % ("s" if one else "", "its" if one else "their", "it" if one else "they")
    )


def slow_layer(s: Summary) -> List[Advice]:
    """Layers that matter and run far below what this machine reaches for their kind of work: a matrix product
    or convolution by FLOP/s against the machine's matrix product, an element-wise or normalisation layer by
    bytes per second against its memory bandwidth; one piece of advice for each kind of work, listing its layers.
    Without the machine's figures (older results), against the best plausible layer of the same kind of work in
    the network. A layer counts where the whole 95 % interval of its rate lies below the threshold, and of its
    share of the step above ``SLOW_LAYER_MIN_SHARE``."""
    if s.step_ms <= 0:
        return []
    rated = []
    for l in s.base_layers:
        found = _rate(l)
        if found is None or l.total_ms <= 0:
            continue
        rate, key, unit = found
        if machine.plausible(rate, s.machine_rates.get(key)):
            rated.append((l, rate, key, unit))
    slow: dict = {}
    for l, rate, key, unit in rated:
        if not evidence.past(_layer_share(s, l), SLOW_LAYER_MIN_SHARE):
            continue
        reference, against = _reference(s, l, rated, key, unit)
        if reference is None:
            continue
        relative = evidence.layer_error(l) / l.step_ms if l.step_ms > 0 else 0.0
        bounds = (rate / (1 + evidence.Z * relative), rate / max(1e-9, 1 - evidence.Z * relative))
        if not evidence.past(bounds, SLOW_LAYER_FACTOR * reference, above=False):
            continue
        slow.setdefault(key, []).append(
            "%s (%s) achieves %.3f %s %s over %.3f ms (%s of the step)%s"
            % (
                named(l),
                l.layer_type,
                rate,
                unit,
                evidence.bracket(bounds),
                l.step_ms,
                pct(l.step_ms / s.step_ms),
                _memory(l) if key == "gflops" else "",
            )
        )
        slow.setdefault(key + " layers", []).append(l.layer)
        slow[key + " against"] = against
    out = []
    for key in ("gflops", "gbytes_per_s"):
        if key not in slow:
            continue
        layers = slow[key + " layers"]
        text = _slow_words(key, len(layers) == 1)
        out.append(
            Advice(
                "slow_layer",
                "%s %s." % (_listed(layers), text),
                "%s; %s (threshold: a tenth of it)" % ("; ".join(slow[key]), slow[key + " against"]),
            )
        )
    return out


def _reference(s: Summary, l: LayerTime, rated: list, key: str, unit: str) -> Tuple[Optional[float], str]:
    """What a layer's rate is judged against: the machine's, or (older results) the best layer of its kind."""
    reach = s.machine_rates.get(key)
    if reach:
        return reach, "this machine reaches %.1f %s (measured)" % (reach, unit)
    peers = [(x, r) for x, r, k, _ in rated if k == key and x is not l]
    if not peers:
        return None, ""
    best, reference = max(peers, key=lambda p: p[1])
    return reference, "the best layer of its kind, %s, achieves %.3f %s" % (best.layer, reference, unit)


def _listed(names: List[str]) -> str:
    return names[0] if len(names) == 1 else "%s and %s" % (", ".join(names[:-1]), names[-1])


def _memory(l: LayerTime) -> str:
    """For the evidence: how memory-bound a layer is, and the bandwidth it reached."""
    if not l.bytes_moved or l.flops is None:
        return ""
    return ", %.2f FLOP/byte, %.2f GB/s moved" % (l.flops / l.bytes_moved, l.bytes_moved / (l.total_ms * 1e6))


def between_layers(s: Summary) -> List[Advice]:
    if s.coverage is None:
        return []
    forward = [e for l in s.layers for e in (l.forward,) if e is not None]
    spread = evidence.combined(evidence.entry_error(e, e.mean_ms) for e in forward)
    total = sum(e.mean_ms for e in forward)
    bounds = (
        (s.coverage * (1 - evidence.Z * spread / total), s.coverage * (1 + evidence.Z * spread / total))
        if total > 0
        else (s.coverage, s.coverage)
    )
    if not evidence.past(bounds, BETWEEN_LAYERS_COVERAGE, above=False):
        return []
    return [
        Advice(
            "between_layers",
            "Much of forward_all is spent between the layers (graph bookkeeping, memory "
            "allocation, launches): larger batches or fewer, larger layers amortise it.",
            "the forward_function entries add up to %s of forward_all (threshold %s)"
            % (pct(s.coverage), pct(BETWEEN_LAYERS_COVERAGE)),
        )
    ]


def heavy_update(s: Summary) -> List[Advice]:
    share, bounds = _kind_share(s, "update")
    if not evidence.past(bounds, UPDATE_SHARE):
        return []
    return [
        Advice(
            "heavy_update",
            "The solver update is a large part of the step: a network with many parameters "
            "and little computation; a simpler solver (SGD, Momentum) or larger batches help.",
            "update (and weight decay) take %.3f ms, %s %s of the step (threshold %s)"
            % (s.kind_ms("update"), pct(share), evidence.bracket(bounds, True), pct(UPDATE_SHARE)),
        )
    ]


def costly_evaluation(s: Summary) -> List[Advice]:
    """A graph that runs forward only (a validation pass) and costs a notable share of the step."""
    step = s.step_ms
    out = []
    for g in s.graphs:
        name = "forward (%s)" % g.name
        if (
            not g.evaluation
            or step <= 0
            or not evidence.past(
                evidence.share_interval(g.forward_ms, s.errors.get(name, 0.0), step, s.step_error), EVALUATION_SHARE
            )
        ):
            continue
        out.append(
            Advice(
                "costly_evaluation",
                "The graph '%s' runs forward only (an evaluation) and costs %s of the training step: "
                "evaluate less often, on fewer batches, or with a larger batch." % (g.name, pct(g.forward_ms / step)),
                "%.2f forward passes of '%s' per step, %.3f ms each: %.3f ms of the %.3f ms step "
                "(threshold %s)"
                % (g.forward_per_step, g.name, g.forward_pass_ms, g.forward_ms, step, pct(EVALUATION_SHARE)),
            )
        )
    return out


OWN_PYTHON_SHARE = 0.20  # the program's own Python this share of the step or more: its lines are named
# What usually helps, by what a line does (read off its text), the first that matches.
OWN_HINTS = [
    (
        re.compile(r"\b(print|logging|logger|log|monitor|writer)\w*\s*[.(]|\.add\("),
        "logging every step: log every N steps",
    ),
    (
        re.compile(r"\b(PF|F)\.\w+\(|parametric_functions|nn\.Variable\("),
        "building graphs inside the loop: build the static graph once, before the loop, and feed it new data",
    ),
    (
        re.compile(r"(float|int)\([^)]*\.d\b|\.d\.(copy|item|tolist)|\.data\.(copy|item)|\bprint\(.*\.d\b"),
        "reading `.d` every step (it copies the array to the host and waits for the device): read it every N steps",
    ),
    (
        re.compile(r"\bnp\.|numpy|astype|\.append\(|for .* in |\[.*for .* in .*\]|random"),
        "converting data in Python: vectorise it with NumPy, prepare it once outside the loop, or let a data "
        "iterator (in its own thread) do it",
    ),
]


# A line is named in the advice where its share of ``other`` is at least this, by its interval's lower end (and
# ``other`` has MIN_SHARE_SAMPLES samples).
OWN_LINE_NAMED = 0.2


def own_python(s: Summary) -> List[Advice]:
    """The program's own Python is a large share of the step: its lines, and what usually helps with each."""
    other, step = dict(s.parts).get("other", 0.0), s.step_ms
    rest = evidence.combined(e for p, e in s.errors.items() if p != "other")
    if (
        not s.own_samples
        or step <= 0
        or not evidence.past(evidence.rest_share_interval(step - other, rest, step, s.step_error), OWN_PYTHON_SHARE)
    ):
        return []
    top = [l for l in s.own_lines[:3] if l.share_low >= OWN_LINE_NAMED and s.own_samples >= MIN_SHARE_SAMPLES]
    hints = []
    for l in top:
        hint = next((h for pattern, h in OWN_HINTS if pattern.search(l.text)), None)
        if hint is not None and hint not in hints:
            hints.append(hint)
    where = (
        ", most of it at %s%s" % (top[0].where, " (`%s`)" % top[0].text if top[0].text else "")
        if top
        else " (no one line's share of it is shown by its samples)"
    )
    text = "The program's own Python between NNabla's calls takes %s of the step%s. What usually helps: %s." % (
        pct(other / step),
        where,
        "; ".join(hints)
        if hints
        else "converting data in Python, reading `.d` "
        "every step, building graphs inside the loop and logging every step are the usual causes",
    )
    top = top or s.own_lines[:3]
    shown = "other %.3f ms of the %.3f ms step (threshold %s); sampled lines: %s" % (
        other,
        step,
        pct(OWN_PYTHON_SHARE),
        ", ".join("%s %s (%.3f ms)" % (l.where, pct(l.share), l.ms) for l in top),
    )
    return [Advice("own_python", text, shown)]


RULES: List[Callable[[Summary], List[Advice]]] = [
    input_bound,
    no_half_on_gpu,
    dominant_layer,
    slow_layer,
    between_layers,
    heavy_update,
    costly_evaluation,
    own_python,
]


def advise(s: Summary) -> List[Advice]:
    """Every rule's advice for a step, in the rules' order."""
    return [a for rule in RULES for a in rule(s)]
