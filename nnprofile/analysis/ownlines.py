"""The program's own lines in a step's ``other``: each its share of the samples taken between NNabla's calls, with
its interval (Wilson's: sound for few samples), and so its share of ``other``'s time; and how the samples were taken."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Tuple

from ..result.details import SampledLine, SectionInfo


@dataclass(frozen=True)
class OwnLine:
    """One of the program's own lines in the step's ``other``: its share of the samples, and of ``other``'s time."""

    where: str  # train.py:57
    function: str
    text: str  # the line, as the program has it
    samples: int
    share: float  # of other's time: its waits, then its share of the samples
    ms: float  # per step: other's time times the share
    share_low: float = 0.0  # the share's 95% interval (Wilson's, over the samples in other)
    share_high: float = 1.0
    waited_ms: float = 0.0  # of ``ms``, the time it was found blocked (a sleep, a read, a lock): measured


# The samples of ``other`` below which no line's share is given (one sample is no share of 100%): the lines are
# listed with their counts, and no advice names one.
MIN_SHARE_SAMPLES = 5


def wilson(k: int, n: int, z: float = 1.959964) -> Tuple[float, float]:
    """The 95% interval of a share of ``k`` in ``n`` (Wilson's score interval: sound for few samples and for 0 or n)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def own_clock(info: SectionInfo) -> Tuple[str, float]:
    """What a program's own lines were sampled by, as its section's info says (("", 0.0) where it does not)."""
    return info.own_clock or ("", 0.0)


def own_lines(info: SectionInfo, other_ms: float) -> List[OwnLine]:
    """The program's own lines, each its time a step in ``other``: what it waited (found blocked there, measured),
    then its share of the samples (with its interval) of what the waits leave of ``other``. The most first."""
    total = info.own_samples or 0
    rows = info.own_lines or []
    waited = sum(r.waited_ms for r in rows)
    if not total and not waited:
        return []
    other = round(other_ms, 6)  # as the step's part reads; each line's time rounded down, so that they never
    # add up to more than it
    scale = min(1.0, other / waited) if waited > 0 else 1.0  # (waits found beyond other: shared out to fit it)
    ran = max(0.0, other - waited * scale)  # what the samples share

    def line(r: SampledLine) -> OwnLine:
        low, high = wilson(r.samples, total) if total else (0.0, 0.0)
        share = r.samples / total if total else 0.0
        own = r.waited_ms * scale
        ms = math.floor((own + ran * share) * 1e6) / 1e6
        of = (lambda x: (own + ran * x) / other) if other > 0 else (lambda x: 0.0)
        return OwnLine(r.where, r.function, r.text, r.samples, of(share), ms, of(low), of(high), own)

    return sorted(map(line, rows), key=lambda o: -o.ms)
