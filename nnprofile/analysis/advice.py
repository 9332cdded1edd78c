"""What to try first: recommendations over a step's breakdown, each with the measured evidence that triggered it.

Every rule is a small function in ``RULES`` from a ``Summary`` (``nnprofile.analysis.breakdown``)
to the advice it triggers (its facts: ``nnprofile.analysis.facts``), so that its trigger can be
tested on hand-made figures. The words are ``nnprofile.render.advice``'s: advice about a layer
fits what the layer does (``nnprofile.base.kinds``).
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

from ..base import kinds, machine
from ..base.choices import GPU_BACKENDS
from ..base.places import COLLECTION
from . import evidence, facts
from .breakdown import MIN_SHARE_SAMPLES, Advice, LayerTime, Summary

INPUT_BOUND_SHARE = 0.20
DOMINANT_LAYER_SHARE = 0.50
SLOW_LAYER_FACTOR = 0.10  # achieved GFLOP/s below a tenth of the network's best
SLOW_LAYER_MIN_SHARE = 0.05  # ... in a layer that matters (5% of the step or more)
BETWEEN_LAYERS_COVERAGE = 0.80
UPDATE_SHARE = 0.20
CHECKPOINT_SHARE = 0.10  # saving (or loading) the solvers' state this share of the step
EVALUATION_SHARE = 0.10  # a forward-only graph costing this share of the step is said


def _kind_share(s: Summary, kind: str) -> Tuple[float, Tuple[float, float]]:
    """A kind of part's share of the step, and its 95 % interval."""
    return s.share(kind), evidence.share_interval(s.kind_ms(kind), s.kind_error(kind), s.step_ms, s.step_error)


def _share(s: Summary, kind: str, threshold: float) -> Optional[facts.Share]:
    """A kind of part's share of the step, where its whole interval lies above the threshold."""
    share, bounds = _kind_share(s, kind)
    if not evidence.past(bounds, threshold):
        return None
    return facts.Share(s.kind_ms(kind), share, bounds, s.step_ms, threshold)


def input_bound(s: Summary) -> List[Advice]:
    if any(isinstance(n, facts.InputHeldUp) for n in s.notes):  # its figure uncertain: no advice stands on it
        return []
    found = _share(s, "input", INPUT_BOUND_SHARE)
    return [Advice("input_bound", facts.InputBound(found))] if found else []


def no_half_on_gpu(s: Summary) -> List[Advice]:
    if s.backend not in GPU_BACKENDS or s.half_functions > 0 or not s.functions:
        return []
    return [Advice("no_half_precision", facts.NoHalf(s.functions, s.backend, s.type_config))]


def _layer_share(s: Summary, l: LayerTime) -> Tuple[float, float]:
    return evidence.share_interval(l.step_ms, evidence.layer_error(l), s.step_ms, s.step_error)


def _name(l: LayerTime) -> facts.LayerName:
    return facts.LayerName(l.layer, l.copies, l.layer_type)


def dominant_layer(s: Summary) -> List[Advice]:
    step = s.step_ms
    out = []
    for l in s.base_layers:
        bounds = _layer_share(s, l)
        if step > 0 and evidence.past(bounds, DOMINANT_LAYER_SHARE):
            time = facts.Share(l.step_ms, l.step_ms / step, bounds, step, DOMINANT_LAYER_SHARE)
            out.append(Advice("dominant_layer", facts.DominantLayer(_name(l), kinds.layer_kind(l.layer_type), time)))
    return out


# How a layer's rate is judged, by what it does: arithmetic against the machine's matrix product (FLOP/s),
# or moving its operands against the machine's memory bandwidth (bytes/s); other kinds are not judged.
COMPUTE_KINDS = (kinds.CONVOLUTION, kinds.AFFINE, kinds.RECURRENT)
MEMORY_KINDS = (kinds.ELEMENTWISE, kinds.NORMALIZATION, kinds.POOLING, kinds.REDUCTION, kinds.DATA)


UNITS = {"gflops": "GFLOP/s", "gbytes_per_s": "GB/s"}


def _rate(l: LayerTime) -> Optional[Tuple[float, str]]:
    """(the layer's rate, the machine's reach it is judged by: a key of ``UNITS``), by what the layer does."""
    kind = kinds.layer_kind(l.layer_type)
    if kind in COMPUTE_KINDS and l.gflops_per_s is not None:
        return l.gflops_per_s, "gflops"
    if kind in MEMORY_KINDS and l.gbytes_per_s is not None:
        return l.gbytes_per_s, "gbytes_per_s"
    return None


def implausible(s: Summary) -> List[facts.RateAboveMachine]:
    """Notes for layers whose rate is above what this machine reaches: their time is too short to rate."""
    out = []
    for l in s.base_layers:
        for rate, key in [(l.gflops_per_s, "gflops"), (l.gbytes_per_s, "gbytes_per_s")]:
            reach = s.machine_rates.get(key)
            if rate is not None and reach and not machine.plausible(rate, reach):
                out.append(facts.RateAboveMachine(_name(l), rate, UNITS[key], reach, l.total_ms))
                break
    return out


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
        if found is not None and l.total_ms > 0 and machine.plausible(found[0], s.machine_rates.get(found[1])):
            rated.append((l,) + found)
    slow: Dict[str, List[facts.SlowLayer]] = {}
    against: Dict[str, Tuple[float, Optional[str]]] = {}
    for l, rate, key in rated:
        if not evidence.past(_layer_share(s, l), SLOW_LAYER_MIN_SHARE):
            continue
        reference = _reference(s, l, rated, key)
        if reference is None:
            continue
        relative = evidence.layer_error(l) / l.step_ms if l.step_ms > 0 else 0.0
        bounds = (rate / (1 + evidence.Z * relative), rate / max(1e-9, 1 - evidence.Z * relative))
        if not evidence.past(bounds, SLOW_LAYER_FACTOR * reference[0], above=False):
            continue
        memory = _memory(l) if key == "gflops" else None
        slow.setdefault(key, []).append(
            facts.SlowLayer(_name(l), rate, bounds, l.step_ms, l.step_ms / s.step_ms, memory)
        )
        against[key] = reference
    return [
        Advice("slow_layer", facts.SlowLayers(key, UNITS[key], tuple(slow[key]), *against[key]))
        for key in ("gflops", "gbytes_per_s")
        if key in slow
    ]


def _reference(s: Summary, l: LayerTime, rated: list, key: str) -> Optional[Tuple[float, Optional[str]]]:
    """What a layer's rate is judged against: the machine's (no layer named), or (older results) the best layer of
    its kind, named."""
    reach = s.machine_rates.get(key)
    if reach:
        return reach, None
    peers = [(x, r) for x, r, k in rated if k == key and x is not l]
    if not peers:
        return None
    best, reference = max(peers, key=lambda p: p[1])
    return reference, best.layer


def _memory(l: LayerTime) -> Optional[Tuple[float, float]]:
    """How memory-bound a layer is (FLOP per byte), and the bandwidth it reached (GB/s)."""
    if not l.bytes_moved or l.flops is None:
        return None
    return l.flops / l.bytes_moved, l.bytes_moved / (l.total_ms * 1e6)


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
    return [Advice("between_layers", facts.BetweenLayers(s.coverage, BETWEEN_LAYERS_COVERAGE))]


def heavy_update(s: Summary) -> List[Advice]:
    found = _share(s, "update", UPDATE_SHARE)
    return [Advice("heavy_update", facts.HeavyUpdate(found))] if found else []


def costly_checkpoint(s: Summary) -> List[Advice]:
    found = _share(s, "checkpoint", CHECKPOINT_SHARE)
    return [Advice("costly_checkpoint", facts.CostlyCheckpoint(found))] if found else []


def costly_evaluation(s: Summary) -> List[Advice]:
    """A graph that runs forward only (a validation pass) and costs a notable share of the step."""
    step = s.step_ms
    out = []
    for g in s.graphs:
        if not g.evaluation or step <= 0:
            continue
        bounds = evidence.share_interval(g.forward_ms, s.errors.get("forward (%s)" % g.name, 0.0), step, s.step_error)
        if evidence.past(bounds, EVALUATION_SHARE):
            time = facts.Share(g.forward_ms, g.forward_ms / step, bounds, step, EVALUATION_SHARE)
            out.append(
                Advice("costly_evaluation", facts.CostlyEvaluation(g.name, g.forward_per_step, g.forward_pass_ms, time))
            )
    return out


OWN_PYTHON_SHARE = 0.20  # the program's own Python this share of the step or more: its lines are named
# What a line does, read off its text, the first that matches (what usually helps with each:
# ``nnprofile.render.advice.OWN_HINTS``); a full garbage collection's is "collection".
OWN_HINTS = [
    ("logging", re.compile(r"\b(print|logging|logger|log|monitor|writer)\w*\s*[.(]|\.add\(")),
    ("graphs_in_loop", re.compile(r"\b(PF|F)\.\w+\(|parametric_functions|nn\.Variable\(")),
    ("reading_d", re.compile(r"(float|int)\([^)]*\.d\b|\.d\.(copy|item|tolist)|\.data\.(copy|item)|\bprint\(.*\.d\b")),
    ("python_data", re.compile(r"\bnp\.|numpy|astype|\.append\(|for .* in |\[.*for .* in .*\]|random")),
]


# A line is named in the advice where its share of ``other`` is at least this, by its interval's lower end (and
# ``other`` has MIN_SHARE_SAMPLES samples).
OWN_LINE_NAMED = 0.2


def own_python(s: Summary) -> List[Advice]:
    """The program's own Python is a large share of the step: its lines, and what usually helps with each."""
    other, step = dict(s.parts).get("other", 0.0), s.step_ms
    rest = evidence.combined(e for p, e in s.errors.items() if p != "other")
    if not s.own_samples or step <= 0:
        return []
    bounds = evidence.rest_share_interval(step - other, rest, step, s.step_error)
    if not evidence.past(bounds, OWN_PYTHON_SHARE):
        return []
    top = [
        l
        for l in s.own_lines[:3]
        if l.share_low >= OWN_LINE_NAMED and (s.own_samples >= MIN_SHARE_SAMPLES or l.waited_ms > 0)
    ]
    hints: List[str] = []
    for l in top:
        hint = "collection" if l.where == COLLECTION else next((h for h, p in OWN_HINTS if p.search(l.text)), None)
        hint = (
            "waiting" if l.waited_ms >= 0.5 * l.ms > 0 else hint
        )  # (most of its time blocked: a wait, whatever it reads)
        if hint is not None and hint not in hints:
            hints.append(hint)
    lines = tuple(facts.LineShare(l.where, l.text, l.share, l.ms) for l in top or s.own_lines[:3])
    found = facts.OwnPython(
        facts.Share(other, other / step, bounds, step, OWN_PYTHON_SHARE),
        lines[0] if top else None,
        tuple(hints),
        lines,
    )
    return [Advice("own_python", found)]


RULES: List[Callable[[Summary], List[Advice]]] = [
    input_bound,
    no_half_on_gpu,
    dominant_layer,
    slow_layer,
    between_layers,
    heavy_update,
    costly_checkpoint,
    costly_evaluation,
    own_python,
]


# Rules about training: a program that trains nothing (an inference loop) is not advised by them.
TRAINING_RULES = (input_bound, heavy_update, costly_checkpoint, costly_evaluation)


def advise(s: Summary) -> List[Advice]:
    """Every rule's advice for a step (a step that trains nothing: none about training), the most at stake first: the
    share of the step it is about (the rules' order among equals). The first advice is what to try first."""
    found = [a for rule in RULES if s.training or rule not in TRAINING_RULES for a in rule(s)]
    return sorted(found, key=lambda a: -stake(s, a))


def stake(s: Summary, a: Advice) -> float:
    """The share of the step an advice is about: its part's or layers' time; the time between a pass's layers; for
    half precision, the passes it would speed up."""
    f = a.facts
    step = s.step_ms
    if isinstance(f, facts.SlowLayers):
        return sum(layer.share for layer in f.layers)
    if isinstance(f, facts.BetweenLayers):
        return (1 - f.coverage) * s.kind_ms("forward") / step if step > 0 else 0.0
    if isinstance(f, facts.NoHalf):
        return (s.kind_ms("forward") + s.kind_ms("backward")) / step if step > 0 else 0.0
    for name in ("input", "time", "update", "checkpoint", "other"):
        share = getattr(f, name, None)
        if isinstance(share, facts.Share):
            return share.share
    return 0.0
