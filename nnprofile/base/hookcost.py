"""What timing costs per function, and the arithmetic that takes it off: one place for both pipelines.

Recording a program adds time to every function: NNabla's dispatch of the global hooks and
nnprofile's clock readings for a static graph, the wrapper of the function class under
``auto_forward`` and for eager calls on NdArrays. Part of that lies inside a function's own
interval (taken off the function), all of it inside the pass and the step (taken off them).
Graph mode times a project's functions with the same kind of hooks.

Costs are estimated from paired runs, with and without the hooks, interleaved: the estimate is
the median of the pairs' differences, which a slow spell over a few runs does not move. The
measurements themselves need NNabla and live with their pipeline
(``nnprofile.recording.calibrate``, ``nnprofile.measure.graph_mode``); what is here is pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Sequence, Tuple

from .stats import median


KINDS = ("static", "dynamic", "eager")  # the calls timed: a static graph's, auto_forward's, eager on NdArrays
BACKWARD = "|backward"  # the key of a signature's backward calls in ``HookCosts.by_signature``


@dataclass(frozen=True)
class HookCosts:
    """What timing adds per function, in ns: in all (to the pass), and inside its own interval.

    ``by_signature``: where the program's own functions were measured on replicas (the same type, shapes and
    arguments), per signature: (inside, total), in a recording saved by an earlier nnprofile (the steps run
    without the hooks made them unneeded: no figure moved by 5 % + 10 us without them); the chain's figures
    stand for the rest.
    """

    static_total: float = 0.0
    static_inside: float = 0.0
    dynamic_total: float = 0.0
    dynamic_inside: float = 0.0
    # Measured in the program itself: the share of each function's own time that the hooks add
    # besides (they evict the caches; the next function reads slower by what its data costs).
    eviction: float = 0.0
    # An eager call (a function called on NdArrays): the wrapper's clock readings.
    eager_total: float = 0.0
    eager_inside: float = 0.0
    by_signature: Dict[str, Tuple[float, float]] = field(default_factory=dict, compare=False)
    # What the hooks add once per static pass (NNabla wraps them as the pass starts), outside its functions.
    pass_total: float = 0.0
    # Measured in the program itself: how much slower the hooks' own code runs there than where it was
    # measured (its caches are the program's); every figure above is scaled by it.
    scale: float = 1.0
    # The scale of backward calls, where it differs (the gaps of the backward passes bound it lower).
    backward_scale: Optional[float] = None
    # The kinds of call measured (a kind is measured only once the program makes such calls; the others read 0).
    kinds: Tuple[str, ...] = KINDS

    def _scale(self, key: Optional[str]) -> float:
        if self.backward_scale is not None and key is not None and key.endswith(BACKWARD):
            return self.backward_scale
        return self.scale

    def inside(self, kind: str, signature: Optional[str] = None) -> float:
        if kind == "static" and signature is not None and signature in self.by_signature:
            return self._scale(signature) * self.by_signature[signature][0]
        return self._scale(signature) * getattr(self, _INSIDE[kind])

    def total(self, kind: str, signature: Optional[str] = None) -> float:
        if kind == "static" and signature is not None and signature in self.by_signature:
            return self._scale(signature) * self.by_signature[signature][1]
        return self._scale(signature) * getattr(self, _TOTAL[kind])

    def between(self, kind: str, signature: Optional[str] = None) -> float:
        """What timing adds per function outside its own interval: between it and the next function."""
        return self.total(kind, signature) - self.inside(kind, signature)

    def per_pass(self) -> float:
        return self.scale * self.pass_total

    def key(self, signature: Optional[str], phase: str) -> Optional[str]:
        """A call's key in ``by_signature``: its signature, and for a backward call its backward's (where that
        was not measured, the chain's figures stand for it, at the backward scale)."""
        if signature is not None and phase == "backward":
            return signature + BACKWARD
        return signature

    def measured(self, signature: Optional[str]) -> bool:
        """Whether the program's own function of this key was measured on replicas."""
        return signature is not None and signature in self.by_signature

    def taken_off(self, interval_ns: float, kind: str, signature: Optional[str] = None) -> float:
        """What of one function's interval is the hooks': their cost inside it and, for a function no
        replica measured, the eviction's share."""
        inside = self.inside(kind, signature)
        evicted = 0.0 if kind == "static" and self.measured(signature) else self.eviction
        return inside + evicted * max(0.0, interval_ns - inside)


_INSIDE = {kind: kind + "_inside" for kind in KINDS}  # (a kind's field: asked for every call of a window)
_TOTAL = {kind: kind + "_total" for kind in KINDS}


def paired_cost(plain: Sequence[float], hooked: Sequence[float], n: int) -> float:
    """Per function: the median of the paired differences of runs of ``n`` functions."""
    return max(0.0, median([h - p for p, h in zip(plain, hooked)]) / n)


def smaller(a: HookCosts, b: HookCosts) -> HookCosts:
    """Of two measurements, the smaller figure of each (a slow spell only adds)."""
    return HookCosts(
        min(a.static_total, b.static_total),
        min(a.static_inside, b.static_inside),
        min(a.dynamic_total, b.dynamic_total),
        min(a.dynamic_inside, b.dynamic_inside),
        min(a.eviction, b.eviction),
        min(a.eager_total, b.eager_total),
        min(a.eager_inside, b.eager_inside),
        dict(a.by_signature, **b.by_signature),
        min(a.pass_total, b.pass_total),
        a.scale,
        a.backward_scale,
        a.kinds,
    )


def joined(a: HookCosts, b: HookCosts) -> HookCosts:
    """``a`` with the kinds ``b`` measured that ``a`` had not (a kind measured once the program made such calls)."""
    new = [k for k in b.kinds if k not in a.kinds]
    figures = {"%s_%s" % (k, part): getattr(b, "%s_%s" % (k, part)) for k in new for part in ("total", "inside")}
    return replace(a, kinds=a.kinds + tuple(new), **figures)


# The hooks' own code runs slower (or faster) in a program than where it was measured (the program's work
# leaves it cold caches): the scale read off the program's passes is kept within these factors.
MIN_SCALE, MAX_SCALE = 0.5, 3.0


def scaled(measured: HookCosts, forward: Optional[float], backward: Optional[float]) -> HookCosts:
    """The costs scaled to the program, per phase (``nnprofile.assembly.hookfit.gap_ratio``): each within
    ``MIN_SCALE`` and ``MAX_SCALE``; a phase without a figure takes the other's, or none."""
    forward = forward if forward is not None else backward
    backward = backward if backward is not None else forward
    if forward is None or backward is None:
        return measured
    return replace(
        measured, scale=max(MIN_SCALE, min(MAX_SCALE, forward)), backward_scale=max(MIN_SCALE, min(MAX_SCALE, backward))
    )
