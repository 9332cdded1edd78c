"""The machine's drift, measured over a section's rounds and applied to its entries: the one place.

A round's level is its samples' time against their entries' typical round means, relative to
the machine's usual speed (``nnprofile.base.stats.speed_levels``); rounds slower than
``1 + threshold`` are left out of every entry's mean (``Entry.dropped_rounds``), alike in every
section measured together. A project's rounds, a program's steps, and pooled runs or ranks all
come through here.
"""

from __future__ import annotations

import math
from typing import Iterable, List, Sequence, Tuple

from ..base.stats import Drift, speed_levels
from .model import Entry, Section

Pair = Tuple[Sequence[float], Sequence[int]]  # an entry's samples and round sizes


def measure_drift(
    pairs: Iterable[Pair], rounds: int, threshold: float, robust: bool = False, reference: Sequence[float] = ()
) -> Drift:
    return Drift(tuple(speed_levels([p for p in pairs if p[0]], rounds, robust, reference)), threshold)


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


def emptied(sections: Sequence[Section], drift: Drift) -> List[str]:
    """The entries that would lose every call to the rounds left out (a validation that ran only in steps
    the machine ran slow in): their titles."""
    dropped = set(drift.dropped)
    out = []
    for s in sections:
        for e in s.entries:
            sizes = e.round_sizes or []
            if sizes and sum(sizes) and not any(n for r, n in enumerate(sizes) if r not in dropped):
                out.append(e.label if s.kind != "graph" else "%s (%s)" % (e.label, s.name))
    return out


def drift_over(sections: Sequence[Section], rounds: int, threshold: float, keep_rare: bool = False) -> Drift:
    """Measured over every entry of the sections (a program's whole step aside: it holds the others)
    and applied to all of them alike. With ``keep_rare`` (a recorded program's steps) no round is left out
    (each section's info says so): a program's steps vary on their own (an input that falls behind now and
    then, a validation every epoch, what runs after them on cold caches), which no level can tell from the
    machine's slow spells, and leaving slow steps out would hide the very slowdowns a user looks for; a
    round's level is that of most of its work (``speed_levels``' robust level), and the drift line says
    which steps ran slow. Where leaving the slow
    rounds out would leave an entry without a call (``emptied``), no round is left out: every part of a
    step keeps its share, from the same rounds (the caller says so)."""
    drift = measure_drift(
        ((e.samples_ns, e.round_sizes) for s in sections for e in s.entries if e.phase != "step"),
        rounds,
        threshold,
        robust=keep_rare,
    )
    if keep_rare:  # a recording keeps every step it ran: none is left out, what ran slow is said
        drift = Drift(drift.levels, threshold, tuple(range(len(drift.levels))))
        for s in sections:
            if drift.exempt:
                s.info.drift_exempt = list(drift.exempt)
    if drift.dropped and emptied(sections, drift):
        drift = Drift(drift.levels, math.inf, drift.exempt)
    apply_drift(sections, drift)
    return drift
