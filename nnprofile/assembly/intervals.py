"""Stretches of a recording's clock: nnprofile's own work set aside (``merged``, ``overlap``) and the time the
program's thread waited for a CPU between two readings (``waited_at``)."""

from __future__ import annotations

import bisect
from typing import Iterator, List, Sequence, Tuple

_LAST = float("inf")


def merged(intervals: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """Intervals joined where they overlap (nnprofile's own work can hold more of its own), in order."""
    out: List[Tuple[int, int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def clipped(excluded: Sequence[Tuple[int, int]], start: int, end: int) -> Iterator[Tuple[int, int]]:
    """The pieces of ``excluded`` (merged intervals, in order) inside [start, end), found by bisection, so that
    every call of a long window can ask."""
    i = max(0, bisect.bisect_right(excluded, (start, _LAST)) - 1)
    n = len(excluded)
    while i < n:
        a, b = excluded[i]
        if a >= end:
            break
        if b > start:
            yield max(a, start), min(b, end)
        i += 1


def overlap(start: int, end: int, excluded: Sequence[Tuple[int, int]]) -> int:
    """How much of [start, end) nnprofile's own work took (``excluded``: merged intervals, in order). (``clipped``'s
    walk, without its generator: asked for every call of a window.)"""
    i = max(0, bisect.bisect_right(excluded, (start, _LAST)) - 1)
    n, total = len(excluded), 0
    while i < n:
        a, b = excluded[i]
        if a >= end:
            break
        if b > start:
            total += min(b, end) - max(a, start)
        i += 1
    return total


def waited_at(waits: Sequence[Tuple[int, int, int]], at: int, field: int = 1) -> float:
    """The time waited for a CPU up to ``at`` (``field`` 2: the involuntary switches), interpolated between the
    readings around it."""
    k = bisect.bisect_right(waits, (at, _LAST, _LAST))
    if k == 0:
        return float(waits[0][field])
    if k == len(waits):
        return float(waits[-1][field])
    (t0, w0), (t1, w1) = (waits[k - 1][0], waits[k - 1][field]), (waits[k][0], waits[k][field])
    return w0 + (w1 - w0) * (at - t0) / (t1 - t0) if t1 > t0 else float(w1)


def waited_aside(
    waits: Sequence[Tuple[int, int, int]], excluded: Sequence[Tuple[int, int]], start: int, end: int
) -> float:
    """The time waited for a CPU inside nnprofile's own work within [start, end) (``excluded``: merged, in order):
    that work is left out of every call, pass and step already, with whatever held it up."""
    return float(sum(waited_at(waits, b) - waited_at(waits, a) for a, b in clipped(excluded, start, end)))
