"""The machine's drift, measured over a section's rounds and applied to its entries: the one place.

A round's level is its samples' time against their entries' typical round means, relative to
the machine's usual speed (``nnprofile.base.stats.speed_levels``); rounds slower than
``1 + threshold`` are left out of every entry's mean (``Entry.dropped_rounds``), alike in every
section measured together. A project's rounds, a program's steps, and pooled runs or ranks all
come through here.
"""
from __future__ import annotations

from typing import Iterable, Sequence, Tuple

from ..base.stats import Drift, speed_levels
from .model import Entry, Section

Pair = Tuple[Sequence[float], Sequence[int]]  # an entry's samples and round sizes


def measure_drift(pairs: Iterable[Pair], rounds: int, threshold: float) -> Drift:
    return Drift(tuple(speed_levels([p for p in pairs if p[0]], rounds)), threshold)


def drop(entry: Entry, drift: Drift) -> None:
    """The rounds an entry leaves out of its mean: the slow ones it has."""
    entry.dropped_rounds = [r for r in drift.dropped if not entry.round_sizes or r < len(entry.round_sizes)]


def apply_drift(sections: Iterable[Section], drift: Drift) -> None:
    """Each section's levels, and every entry's rounds left out."""
    levels = [round(level, 4) for level in drift.levels]
    for s in sections:
        s.speed_levels = list(levels)
        for e in s.entries:
            drop(e, drift)


def drift_over(sections: Sequence[Section], rounds: int, threshold: float) -> Drift:
    """Measured over every entry of the sections (a program's whole step aside: it holds the others)
    and applied to all of them alike."""
    drift = measure_drift(((e.samples_ns, e.round_sizes) for s in sections for e in s.entries if e.phase != "step"),
                          rounds, threshold)
    apply_drift(sections, drift)
    return drift
