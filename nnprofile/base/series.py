"""An entry's samples as they come in, round by round: one type for a project's rounds and a program's steps.

A round is one pass over a section's entries (a project) or one kept step (a program). Each
series keeps every sample in order and how many each round took, so that an entry absent from
a round (a validation every fifth step, an entry final early) holds an empty round there and
rounds stay aligned across entries (``nnprofile.base.stats.speed_levels`` reads them so).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple


@dataclass
class RoundSeries:
    samples: List[float] = field(default_factory=list)     # ns, in the order taken
    round_sizes: List[int] = field(default_factory=list)   # samples per round
    disturbed: List[int] = field(default_factory=list)     # the samples other work interrupted (their indexes)

    def next_round(self) -> None:
        self.round_sizes.append(0)

    def add(self, value: float, disturbed: bool = False) -> None:
        if disturbed:
            self.disturbed.append(len(self.samples))
        self.samples.append(value)
        self.round_sizes[-1] += 1

    def clean(self) -> Tuple[List[float], List[int]]:
        """The samples other work did not hold up, and how many each round kept: what speeds and spreads are of."""
        if not self.disturbed:
            return self.samples, self.round_sizes
        skip = set(self.disturbed)
        samples: List[float] = []
        sizes: List[int] = []
        start = 0
        for n in self.round_sizes:
            kept = [self.samples[i] for i in range(start, start + n) if i not in skip]
            samples += kept
            sizes.append(len(kept))
            start += n
        return samples, sizes

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
