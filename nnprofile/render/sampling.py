"""How precise a section's figures are and what its budget allowed, in words: the log's ``Sampling:``, ``Input:``
and ``Layers:`` lines (also the report's), and a list of entries that names the worst where there are many;
from the analysis (``nnprofile.analysis.sampling``)."""

from __future__ import annotations

from typing import Callable, List, Optional

from ..analysis.sampling import MAIN_LAYERS_SHARE, Precision
from ..result import Entry, Section
from ..result.details import Sampling as SectionSampling
from .words import plural

# A "Missed the target" line names the entries one by one up to this many, else the worst few.
LIST_AT_MOST = 8


STOPPED = {
    "target": "every entry reached its target",
    "budget": "the time budget was spent",
    "entry budget": "one entry had its share of the budget",
    "max rounds": "the most rounds allowed",
    "runs": "the runs asked for",
    "interrupted": "interrupted",
}


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, "%dth" % n)


def plan_words(s: SectionSampling) -> str:
    """How a section's entries were sampled: every round, or lean rounds; the layer entries' shares planned from a
    round on; partial layer rounds at the end (an earlier version's result: its words)."""
    if s.plan or s.lean is None:
        return s.plan or ""
    if not s.lean:
        words = "every entry every round"
    elif s.layer_every == 1:
        words = "lean rounds: one sample of each layer entry a round"
    else:
        words = (
            "lean rounds: one sample of each layer entry in every %s round; the whole-step entries "
            "every round" % _ordinal(s.layer_every or 1)
        )
    if s.shared_from:
        words += (
            "; from round %d on, the layer entries' shares of the rounds by the spread each had "
            "shown, those at the target done" % s.shared_from
        )
    if s.partial_rounds:
        words += (
            "; then %d partial layer %s: the layer entries short of %d rounds, the "
            "heaviest first, as many as the rest of the budget allowed"
            % (s.partial_rounds, plural(s.partial_rounds, "round"), s.partial_short_of or 0)
        )
    return words


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
    plan = plan_words(p.plan)
    if plan:
        how.append(plan)
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
