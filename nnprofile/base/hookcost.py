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

import math
from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Sequence, Tuple

from .stats import median, median_error


@dataclass(frozen=True)
class HookCosts:
    """What timing adds per function, in ns: in all (to the pass), and inside its own interval.

    ``by_signature``: where the program's own functions were measured (the same type, shapes and
    arguments), per signature: (inside, total); the chain's figures stand for the rest.
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

    def inside(self, kind: str, signature: Optional[str] = None) -> float:
        if kind == "static" and signature is not None and signature in self.by_signature:
            return self.by_signature[signature][0]
        return {"static": self.static_inside, "dynamic": self.dynamic_inside, "eager": self.eager_inside}[kind]

    def total(self, kind: str, signature: Optional[str] = None) -> float:
        if kind == "static" and signature is not None and signature in self.by_signature:
            return self.by_signature[signature][1]
        return {"static": self.static_total, "dynamic": self.dynamic_total, "eager": self.eager_total}[kind]

    def taken_off(self, interval_ns: float, kind: str, signature: Optional[str] = None) -> float:
        """What of one function's interval is the hooks': their cost inside it and the eviction's share."""
        inside = self.inside(kind, signature)
        return inside + self.eviction * max(0.0, interval_ns - inside)

    def with_eviction(self, eviction: float) -> "HookCosts":
        return replace(self, eviction=eviction)


def paired_cost(plain: Sequence[float], hooked: Sequence[float], n: int) -> float:
    """Per function: the median of the paired differences of runs of ``n`` functions."""
    return max(0.0, median([h - p for p, h in zip(plain, hooked)]) / n)


def smaller(a: HookCosts, b: HookCosts) -> HookCosts:
    """Of two measurements, the smaller figure of each (a slow spell only adds)."""
    return HookCosts(min(a.static_total, b.static_total), min(a.static_inside, b.static_inside),
                     min(a.dynamic_total, b.dynamic_total), min(a.dynamic_inside, b.dynamic_inside),
                     min(a.eviction, b.eviction), min(a.eager_total, b.eager_total),
                     min(a.eager_inside, b.eager_inside), dict(a.by_signature, **b.by_signature))


def measured_in_program(chain: HookCosts, hooked: Sequence[Tuple[float, int, int, float]],
                        plain: Sequence[float]) -> Optional[Tuple[HookCosts, Dict[str, float]]]:
    """What the hooks cost in the program itself, from its steps with the hooks (duration, static and
    dynamic calls, the calls' own time) against its steps without them.

    Beyond the fixed dispatch per function, the Python the hooks run between two functions evicts
    the caches, and the next function reads slower by an amount that grows with its data (a chain
    of tiny functions measures 8 us a function where a real graph of batch 256 pays 35 us). That
    part is the ``eviction``: the share of each function's own time that is the hooks'. None with
    fewer than three steps of either kind."""
    if len(plain) < 3 or len(hooked) < 3:
        return None
    fixed = median([n_s * chain.static_total + n_d * chain.dynamic_total for _, n_s, n_d, _ in hooked])
    own = median([calls for _, _, _, calls in hooked])
    durations = [d for d, _, _, _ in hooked]
    extra = median(durations) - median(plain) - fixed
    # An extra that the steps' own spread could make is not the hooks' (a program whose step is mostly
    # waiting, for data or other ranks, has a spread far above its functions' time).
    if extra < 2 * math.hypot(median_error(durations), median_error(plain)):
        extra = 0.0
    eviction = min(0.9, max(0.0, extra / own)) if own > 0 else 0.0
    n = median([n_s + n_d for _, n_s, n_d, _ in hooked])
    return chain.with_eviction(eviction), {
        "plain_ms": median(plain) / 1e6, "hooked_ms": median(durations) / 1e6, "plain_steps": len(plain),
        "hooked_steps": len(hooked), "eviction": eviction,
        "per_function_ns": (median(durations) - median(plain)) / n if n else 0.0}
