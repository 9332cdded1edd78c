"""How precise a section's figures are, and what its time budget allowed.

Pure functions over a measured section: the relative standard error reached
by the whole passes and by the step (the sum of its parts, their variances
added: the parts are measured apart), by the layers that make up most of the
step, the samples each entry got, and the entries with too few samples for a
relative error at all. The log's ``Sampling:`` line is made from these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from ..result import Entry, Section
from ..base.choices import PART_OF_PHASE
from .breakdown import LayerTime, base_layers, base_name

# The layers whose error is reported: those that make up this share of the step, slowest first.
MAIN_LAYERS_SHARE = 0.80
# A "Missed the target" line names the entries one by one up to this many, else the worst few.
LIST_AT_MOST = 8


@dataclass(frozen=True)
class Precision:
    rounds: int
    seconds: Optional[float]
    budget_seconds: Optional[float]
    plan: str
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
        plan=sampling.plan or "",
        stopped=sampling.stopped or "",
        samples=(counts[0], counts[len(counts) // 2], counts[-1]),
        whole=whole,
        main_layers=len(chosen),
        main_layers_rse=worst,
        thin=[e for e in section.entries if is_thin(e)],
    )


STOPPED = {
    "target": "every entry reached its target",
    "budget": "the time budget was spent",
    "entry budget": "one entry had its share of the budget",
    "max rounds": "the most rounds allowed",
    "runs": "the runs asked for",
    "interrupted": "interrupted",
}


def sampling_line(p: Precision) -> str:
    """What the budget allowed: rounds, samples per entry, the relative error reached."""
    how = []
    if p.seconds is not None:
        budget = ""
        if p.budget_seconds:
            over = p.rounds == 1 and p.seconds > 1.2 * p.budget_seconds
            budget = " (budget %g s%s)" % (
                p.budget_seconds,
                ", less than one round takes: one round ran, whatever the budget" if over else "",
            )
        how.append("%d round%s in %.2f s%s" % (p.rounds, "" if p.rounds == 1 else "s", p.seconds, budget))
    else:
        how.append("%d round%s" % (p.rounds, "" if p.rounds == 1 else "s"))
    if p.plan:
        how.append(p.plan)
    if p.stopped in STOPPED:
        how.append("stopped: %s" % STOPPED[p.stopped])
    fewest, median, most = p.samples
    text = "Sampling: %s; rounds with samples per entry: %s" % (
        "; ".join(how),
        "%d" % fewest if fewest == most else "%d to %d (median %d)" % (fewest, most, median),
    )
    if p.whole:
        text += "; relative standard error: %s" % ", ".join(
            "%s %s" % (what, "%.1f%%" % (100 * rse) if rse is not None else "unknown (too few rounds)")
            for what, rse in p.whole
        )
    if p.main_layers_rse is not None:
        text += "; the %d layer%s that make up %d%% of the step (unrolled copies summed): at most %.1f%% (%s)" % (
            p.main_layers,
            "" if p.main_layers == 1 else "s",
            MAIN_LAYERS_SHARE * 100,
            100 * p.main_layers_rse[1],
            p.main_layers_rse[0],
        )
    return text


def listed(entries: List[Entry], figure: Callable[[Entry], str], total: int, worst_first: bool = True) -> str:
    """Entries named one by one, or (many of them) how many and the worst (or first) few."""
    if len(entries) <= LIST_AT_MOST:
        return ", ".join(figure(e) for e in entries)
    if worst_first:
        few = sorted(entries, key=lambda e: -e.stats.rse)[:3]
        return "%d of %d entries; the worst: %s (each entry's error is in profile_detail.csv, column rse)" % (
            len(entries),
            total,
            ", ".join(figure(e) for e in few),
        )
    return "%d of %d entries, the first: %s" % (len(entries), total, ", ".join(figure(e) for e in entries[:3]))


def load_line(section: Section) -> Optional[str]:
    """load_dataset two ways, each with its definition: nnprofile's entry (a read as training makes it) and a
    burst of reads in a row (as nnabla_cli profile times it); None where no burst was timed."""
    burst = section.info.load_dataset_burst
    entry = next((e for e in section.entries if e.phase == "load_dataset"), None)
    if not burst or entry is None:
        return None
    after = (
        " after %d to pass through the dataset once (its memory cache then holds it)" % burst.after
        if burst.after
        else ""
    )
    return (
        "load_dataset two ways: %.6f ms a read with the rest of the step between reads (the entry above: a "
        "read as a training's first reads make it, each waiting for the batch the iterator loads next); %.6f ms "
        "a read in %d reads in a row%s (nnabla_cli profile's way: it reads for a second, nothing between "
        "reads)" % (entry.mean_ms, burst.mean_ms, burst.reads, after)
    )


def passes_line(section: Section) -> Optional[str]:
    """How a section whose passes are long timed its layers (``nnprofile.measure.economy``); None: each alone."""
    why = section.info.layers_in_passes
    if not why:
        return None
    return (
        "Layers: timed inside the section's whole passes, not each alone (between NNabla's function hooks, their "
        "measured cost taken off; those passes are the samples of forward_all and backward_all too), since %s" % why
    )
