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
from .breakdown import Advice, LayerTime, Summary, named, pct

INPUT_BOUND_SHARE = 0.20
DOMINANT_LAYER_SHARE = 0.50
SLOW_LAYER_FACTOR = 0.10      # achieved GFLOP/s below a tenth of the network's best
SLOW_LAYER_MIN_SHARE = 0.05   # ... in a layer that matters (5% of the step or more)
BETWEEN_LAYERS_COVERAGE = 0.80
UPDATE_SHARE = 0.20
EVALUATION_SHARE = 0.10       # a forward-only graph costing this share of the step is said


def input_bound(s: Summary) -> List[Advice]:
    share = s.share("input")
    if share <= INPUT_BOUND_SHARE:
        return []
    return [Advice("input_bound",
                   "The step waits for its data: prepare batches ahead (a dataset cache on fast storage, "
                   "smaller images, fewer augmentations) or overlap loading with computing.",
                   "input (load_dataset, let_data) takes %.3f ms, %s of the %.3f ms step (threshold %s)"
                   % (s.kind_ms("input"), pct(share), s.step_ms, pct(INPUT_BOUND_SHARE)))]


def no_half_on_gpu(s: Summary) -> List[Advice]:
    if s.backend not in GPU_BACKENDS or s.half_functions > 0 or not s.functions:
        return []
    return [Advice("no_half_precision",
                   "No function ran in half precision on a GPU backend: try mixed precision "
                   "(nnprofile compare PROJECT --set type_config=float --set type_config=half) and "
                   "check the validation error with --train-epochs.",
                   "0 of %d functions ran in half precision on %s:%s" % (s.functions, s.backend, s.type_config))]


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


def dominant_layer(s: Summary) -> List[Advice]:
    step = s.step_ms
    out = []
    for l in s.base_layers:
        if step > 0 and l.step_ms / step > DOMINANT_LAYER_SHARE:
            what = DOMINANT_ADVICE.get(kinds.layer_kind(l.layer_type))
            out.append(Advice("dominant_layer",
                              "One layer dominates the step: " + (what % l.layer if what else
                                                                  "%s; the others matter little until it costs "
                                                                  "less (its shapes and arguments are in the "
                                                                  "layer table)." % l.layer),
                              "%s (%s) takes %.3f ms forward + backward, %s of the %.3f ms step (threshold %s)"
                              % (named(l), l.layer_type, l.step_ms, pct(l.step_ms / step), step,
                                 pct(DOMINANT_LAYER_SHARE))))
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
                out.append("%s (%s) reads %.1f %s, above what this machine reaches (%.1f %s measured): its time "
                           "(%.6f ms) is too short to rate, and it is no reference for other layers"
                           % (named(l), l.layer_type, rate, unit, reach, unit, l.total_ms))
                break
    return out


def slow_layer(s: Summary) -> List[Advice]:
    """A layer that matters and runs far below what this machine reaches for its kind of work: a matrix
    product or convolution by FLOP/s against the machine's BLAS, an element-wise or normalisation layer by
    bytes per second against its memory bandwidth. Without the machine's figures (older results), against the
    best plausible layer of the same kind of work in the network."""
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
    out = []
    for l, rate, key, unit in rated:
        if l.step_ms / s.step_ms < SLOW_LAYER_MIN_SHARE:
            continue
        reach = s.machine_rates.get(key)
        if reach:
            reference, against = reach, "this machine reaches %.1f %s (measured)" % (reach, unit)
        else:
            peers = [(x, r) for x, r, k, _ in rated if k == key and x is not l]
            if not peers:
                continue
            best, reference = max(peers, key=lambda p: p[1])
            against = "the best layer of its kind, %s, achieves %.3f %s" % (best.layer, reference, unit)
        if rate >= SLOW_LAYER_FACTOR * reference:
            continue
        what = ("computes far below what this machine reaches: its implementation or its shape (small or odd "
                "sizes) costs more than its arithmetic" if key == "gflops" else
                "moves its operands far slower than this machine's memory allows: many small calls, or a layout "
                "it must convert, cost more than the data it moves")
        out.append(Advice("slow_layer", "%s %s." % (l.layer, what),
                          "%s (%s) achieves %.3f %s over %.3f ms (%s of the step)%s; %s (threshold: a tenth of it)"
                          % (named(l), l.layer_type, rate, unit, l.step_ms, pct(l.step_ms / s.step_ms),
                             _memory(l) if key == "gflops" else "", against)))
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
                   % (pct(s.coverage), pct(BETWEEN_LAYERS_COVERAGE)))]


def heavy_update(s: Summary) -> List[Advice]:
    share = s.share("update")
    if share <= UPDATE_SHARE:
        return []
    return [Advice("heavy_update",
                   "The solver update is a large part of the step: a network with many parameters "
                   "and little computation; a simpler solver (SGD, Momentum) or larger batches help.",
                   "update (and weight decay) take %.3f ms, %s of the step (threshold %s)"
                   % (s.kind_ms("update"), pct(share), pct(UPDATE_SHARE)))]


def costly_evaluation(s: Summary) -> List[Advice]:
    """A graph that runs forward only (a validation pass) and costs a notable share of the step."""
    step = s.step_ms
    out = []
    for g in s.graphs:
        if not g.evaluation or step <= 0 or g.forward_ms / step < EVALUATION_SHARE:
            continue
        out.append(Advice("costly_evaluation",
                          "The graph '%s' runs forward only (an evaluation) and costs %s of the training step: "
                          "evaluate less often, on fewer batches, or with a larger batch."
                          % (g.name, pct(g.forward_ms / step)),
                          "%.2f forward passes of '%s' per step, %.3f ms each: %.3f ms of the %.3f ms step "
                          "(threshold %s)" % (g.forward_per_step, g.name, g.forward_pass_ms, g.forward_ms, step,
                                             pct(EVALUATION_SHARE))))
    return out


OWN_PYTHON_SHARE = 0.20       # the program's own Python this share of the step or more: its lines are named
# What usually helps, by what a line does (read off its text), the first that matches.
OWN_HINTS = [
    (re.compile(r"\b(print|logging|logger|log|monitor|writer)\w*\s*[.(]|\.add\("), "logging every step: log every N steps"),
    (re.compile(r"\b(PF|F)\.\w+\(|parametric_functions|nn\.Variable\("),
     "building graphs inside the loop: build the static graph once, before the loop, and feed it new data"),
    (re.compile(r"(float|int)\([^)]*\.d\b|\.d\.(copy|item|tolist)|\.data\.(copy|item)|\bprint\(.*\.d\b"),
     "reading `.d` every step (it copies the array to the host and waits for the device): read it every N steps"),
    (re.compile(r"\bnp\.|numpy|astype|\.append\(|for .* in |\[.*for .* in .*\]|random"),
     "converting data in Python: vectorise it with NumPy, prepare it once outside the loop, or let a data "
     "iterator (in its own thread) do it"),
]


def own_python(s: Summary) -> List[Advice]:
    """The program's own Python is a large share of the step: its lines, and what usually helps with each."""
    other, step = dict(s.parts).get("other", 0.0), s.step_ms
    if not s.own_lines or step <= 0 or other / step < OWN_PYTHON_SHARE:
        return []
    top = s.own_lines[:3]
    hints = []
    for l in top:
        hint = next((h for pattern, h in OWN_HINTS if pattern.search(l.text)), None)
        if hint is not None and hint not in hints:
            hints.append(hint)
    text = ("The program's own Python between NNabla's calls takes %s of the step, most of it at %s%s. What usually "
            "helps: %s." % (pct(other / step), top[0].where, " (`%s`)" % top[0].text if top[0].text else "",
                            "; ".join(hints) if hints else "converting data in Python, reading `.d` every step, building "
                            "graphs inside the loop and logging every step are the usual causes"))
    evidence = "other %.3f ms of the %.3f ms step (threshold %s); sampled lines: %s" % (
        other, step, pct(OWN_PYTHON_SHARE), ", ".join("%s %s (%.3f ms)" % (l.where, pct(l.share), l.ms) for l in top))
    return [Advice("own_python", text, evidence)]


RULES: List[Callable[[Summary], List[Advice]]] = [
    input_bound, no_half_on_gpu, dominant_layer, slow_layer, between_layers, heavy_update, costly_evaluation,
    own_python,
]


def advise(s: Summary) -> List[Advice]:
    """Every rule's advice for a step, in the rules' order."""
    return [a for rule in RULES for a in rule(s)]
