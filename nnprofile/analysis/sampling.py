"""How precise a section's figures are, and what its time budget allowed.

Pure functions over a measured section: the relative standard error reached
by the whole passes and by the step (the sum of its parts, their variances
added: the parts are measured apart), by the layers that make up most of the
step, the samples each entry got, and the entries with too few samples for a
relative error at all. The log's ``Sampling:`` line is made from these (``nnprofile.render.sampling``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..result import Entry, Section
from ..result.details import Sampling as SectionSampling
from ..base.choices import PART_OF_PHASE
from .breakdown import LayerTime, base_layers, base_name

# The layers whose error is reported: those that make up this share of the step, slowest first.
MAIN_LAYERS_SHARE = 0.80


@dataclass(frozen=True)
class Precision:
    rounds: int
    seconds: Optional[float]
    budget_seconds: Optional[float]
    plan: SectionSampling  # how the entries were sampled (its lean rounds, shares, partial rounds: said by render)
    stopped: str
    samples: Tuple[int, int, int]  # per entry: fewest, median, most
    # (forward_all / backward_all / the step, rse; None with too few samples for one)
    whole: List[Tuple[str, Optional[float]]] = field(default_factory=list)
    main_layers: int = 0  # how many layers make up MAIN_LAYERS_SHARE of the step
    main_layers_rse: Optional[Tuple[str, float]] = None  # the worst of them: (label, rse)
    thin: List[Entry] = field(default_factory=list)  # fewer than two rounds with samples: no relative error


def rounds_with_samples(e: Entry) -> int:
    """Rounds in which the entry took samples, slow rounds left out (as its mean leaves them out)."""
    if not e.round_sizes:
        return 1 if e.samples_ns else 0
    dropped = set(e.dropped_rounds)
    kept = sum(1 for r, n in enumerate(e.round_sizes) if n and r not in dropped)
    return kept or sum(1 for n in e.round_sizes if n)


def is_thin(e: Entry) -> bool:
    """Too few samples for a relative standard error: one sample, or all of them in one round."""
    return not e.stats.rse_known


def step_rse(section: Section) -> Optional[float]:
    """The step's relative standard error: measured whole (a program), or from its parts (None
    where one of them has too few samples for an error)."""
    measured = section.entries_of("step")
    if measured:
        return measured[0].stats.rse if not is_thin(measured[0]) else None
    parts = [e for e in section.entries if e.phase in PART_OF_PHASE]
    total = sum(e.stats.mean for e in parts)
    if not parts or total <= 0 or any(is_thin(e) for e in parts if e.stats.mean > 0.01 * total):
        return None
    return math.sqrt(sum((e.stats.rse * e.stats.mean) ** 2 for e in parts)) / total


def main_layers(layers: List[LayerTime], step_ms: float) -> List[LayerTime]:
    """The slowest layers that together make up MAIN_LAYERS_SHARE of the step (all, if they never do)."""
    out: List[LayerTime] = []
    total = 0.0
    for l in sorted(layers, key=lambda l: -l.total_ms):
        if step_ms > 0 and total >= MAIN_LAYERS_SHARE * step_ms:
            break
        out.append(l)
        total += l.total_ms
    return out


def layer_rse(entries: List[Entry]) -> Optional[float]:
    """A (base) layer's relative standard error from its entries (forward and backward of each of
    its copies), their variances added; None if one of them has too few samples for an error."""
    if not entries or any(is_thin(e) for e in entries):
        return None
    total = sum(e.stats.mean for e in entries)
    return math.sqrt(sum((e.stats.rse * e.stats.mean) ** 2 for e in entries)) / total if total > 0 else None


def precision(
    section: Section, layers: List[LayerTime], step_ms: Optional[float], bases: Optional[List[LayerTime]] = None
) -> Precision:
    counts = sorted(rounds_with_samples(e) for e in section.entries) or [0]
    whole: List[Tuple[str, Optional[float]]] = [
        (e.phase, e.stats.rse if not is_thin(e) else None)
        for e in section.entries
        if e.phase in ("forward_all", "backward_all")
    ]
    if step_ms is not None:
        whole.append(("the step", step_rse(section)))
    worst: Optional[Tuple[str, float]] = None
    bases = base_layers(layers) if bases is None else bases
    chosen = main_layers(bases, step_ms or sum(l.total_ms for l in bases))
    by_base: Dict[str, List[Entry]] = {}
    for l in layers:
        by_base.setdefault(base_name(l.layer), []).extend(e for e in (l.forward, l.backward) if e is not None)
    for l in chosen:
        rse = layer_rse(by_base.get(l.layer, []))
        if rse is not None and (worst is None or rse > worst[1]):
            worst = (l.layer, rse)
    sampling = section.sampling
    return Precision(
        rounds=sampling.rounds or max(len(e.round_sizes) for e in section.entries or [Entry("", "", [])]),
        seconds=sampling.seconds,
        budget_seconds=sampling.budget_seconds,
        plan=sampling,
        stopped=sampling.stopped or "",
        samples=(counts[0], counts[len(counts) // 2], counts[-1]),
        whole=whole,
        main_layers=len(chosen),
        main_layers_rse=worst,
        thin=[e for e in section.entries if is_thin(e)],
    )
