"""An entry's samples as they come in, round by round: one type for a project's rounds and a program's steps.

A round is one pass over a section's entries (a project) or one kept step (a program). Each
series keeps every sample in order and how many each round took, so that an entry absent from
a round (a validation every fifth step, an entry final early) holds an empty round there and
rounds stay aligned across entries (``nnprofile.base.stats.speed_levels`` reads them so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple


@dataclass
class RoundSeries:
    samples: List[float] = field(default_factory=list)  # ns, in the order taken
    round_sizes: List[int] = field(default_factory=list)  # samples per round
    disturbed: List[int] = field(default_factory=list)  # the samples other work interrupted (their indexes)
    # for each of those, the time other work took of it (its wall time less the thread's CPU time), None where not
    # known (a wait: no CPU time of its own)
    taken: List[Optional[float]] = field(default_factory=list)

    def next_round(self) -> None:
        self.round_sizes.append(0)

    def add(self, value: float, disturbed: bool = False, taken: Optional[float] = None) -> None:
        if disturbed:
            self.disturbed.append(len(self.samples))
            self.taken.append(taken)
        self.samples.append(value)
        self.round_sizes[-1] += 1

    def clean(self) -> Tuple[List[float], List[int]]:
        """The samples as other work left them (a held-up sample less what it took, where known; else left out), and
        how many each round kept: what speeds and spreads are of."""
        if not self.disturbed:
            return self.samples, self.round_sizes
        fixed = corrected(self.samples, self.disturbed, self.taken)
        samples: List[float] = []
        sizes: List[int] = []
        start = 0
        for n in self.round_sizes:
            kept = [fixed[i] for i in range(start, start + n) if fixed[i] is not None]
            samples += kept  # type: ignore[arg-type]
            sizes.append(len(kept))
            start += n
        return samples, sizes

    def usable(self) -> int:
        """The samples the figures can stand on: all but those other work spoiled (held up, the time taken unknown)."""
        return len(self.samples) - sum(1 for t in self.taken if t is None)

    def rounds_with_samples(self, dropped: Sequence[int] = ()) -> int:
        skip = set(dropped)
        return sum(1 for r, n in enumerate(self.round_sizes) if n and r not in skip)


class SeriesTable:
    """Series by key, in order of first sight, every one with a round for each round so far."""

    def __init__(self) -> None:
        self.series: Dict[Any, RoundSeries] = {}
        self.rounds = 0

    def next_round(self) -> None:
        self.rounds += 1
        for s in self.series.values():
            s.next_round()

    def get(self, key: Any) -> RoundSeries:
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = RoundSeries([], [0] * self.rounds)
        return s


def corrected(
    samples: Sequence[float], disturbed: Sequence[int], taken: Sequence[Optional[float]]
) -> List[Optional[float]]:
    """Each sample as other work left it: a held-up one less the time other work took of it (never below zero), None
    where that is not known (left out)."""
    out: List[Optional[float]] = list(samples)
    for k, i in enumerate(disturbed):
        t = taken[k] if k < len(taken) else None
        out[i] = None if t is None else max(0.0, samples[i] - t)
    return out
