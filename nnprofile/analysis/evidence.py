"""How sure each figure advice stands on is: a part's and a layer's standard error, and the 95 % interval of a share.

A figure per step or per call is a mean over rounds (a project's) or kept steps (a program's); its relative
standard error comes from the spread of those rounds' means (``Entry.stats.rse``), over the samples other work did
not disturb. A share of the step combines the part's error and the step's (as if independent: wider, never
narrower, than it is). A rule of ``nnprofile.analysis.advice`` fires only where the whole interval of its evidence
lies past its threshold: a figure a slow spell or a busy neighbour moved across the threshold does not make advice,
and identical runs give identical advice.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Tuple

from ..result import Entry

Z = 1.96  # the 95 % interval of a mean's normal approximation (rounds and steps number 20 or more)


def entry_error(entry: Optional[Entry], value_ms: float) -> float:
    """The standard error of a figure ``value_ms`` taken from an entry (its mean, or its time per step): the figure
    times the entry's relative standard error; 0 where that is unknown (one round)."""
    if entry is None or not entry.samples_ns:
        return 0.0
    st = entry.stats
    return abs(value_ms) * st.rse if st.rse_known else 0.0


def combined(errors: Iterable[float]) -> float:
    """The error of a sum of figures (each its own)."""
    return math.sqrt(sum(e * e for e in errors))


def interval(value: float, error: float) -> Tuple[float, float]:
    return value - Z * error, value + Z * error


def share_interval(part_ms: float, part_error: float, whole_ms: float, whole_error: float) -> Tuple[float, float]:
    """The 95 % interval of ``part_ms / whole_ms``, within what a part of the whole can be: no less than none of it,
    no more than all of it (or than the share itself, where the parts came to more than the whole)."""
    if whole_ms <= 0:
        return 0.0, 0.0
    share = part_ms / whole_ms
    relative = math.sqrt(((part_error / part_ms) ** 2 if part_ms > 0 else 0.0) + (whole_error / whole_ms) ** 2)
    return max(0.0, share * (1 - Z * relative)), min(max(1.0, share), share * (1 + Z * relative))


def rest_share_interval(
    others_ms: float, others_error: float, whole_ms: float, whole_error: float
) -> Tuple[float, float]:
    """The 95 % interval of the share of what the other parts leave of the whole (the step's ``other``): ``1 -
    others / whole``. A pause that stretches a step (a garbage collection in the program's own code) moves that rest
    and the whole together; the share of the rest moves only as much as the other parts' share does."""
    low, high = share_interval(others_ms, others_error, whole_ms, whole_error)
    return 1 - high, 1 - low


def layer_error(layer: object) -> float:
    """The standard error of a layer's time in a step (``LayerTime.step_ms``): its forward's and backward's."""
    forward, backward = getattr(layer, "forward", None), getattr(layer, "backward", None)
    total, step = getattr(layer, "total_ms", 0.0), getattr(layer, "step_ms", 0.0)
    scale = step / total if total > 0 else 1.0
    return combined(
        [
            entry_error(forward, getattr(layer, "forward_ms", 0.0) * scale),
            entry_error(backward, getattr(layer, "backward_ms", 0.0) * scale),
        ]
    )


def past(bounds: Tuple[float, float], threshold: float, above: bool = True) -> bool:
    """Whether the whole interval lies past the threshold (above it, or below it)."""
    return bounds[0] > threshold if above else bounds[1] < threshold
