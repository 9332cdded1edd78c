"""A merged view's ranks in words: the log's Ranks block (also the report's and the notebook's lines) and the
rows summary.csv gives them, from the analysis (``nnprofile.analysis.ranks``)."""

from __future__ import annotations

from typing import Dict, List, Sequence

from .notes import text
from ..analysis.ranks import LAYER_SPREAD_FLOOR_MS, LISTED_RANKS, PARTS, STRAGGLER_FACTOR, RanksAnalysis, Straggler
from .advice import ratio_interval, straggler_evidence, words
from ..base.stats import median


def _rank_lines(a: RanksAnalysis) -> List[str]:
    """A line per rank (the busiest LISTED_RANKS where there are more): its step by part, busy and waiting."""
    lines = []
    shown = a.ranks
    if len(shown) > LISTED_RANKS:
        shown = sorted(shown, key=lambda r: -r.busy_ms)[:LISTED_RANKS]
        lines.append("Rank lines: the %d busiest of %d (every rank in ranks.csv)" % (LISTED_RANKS, len(a.ranks)))
    used = [p for p in PARTS if any(r.parts[p] > 0 for r in a.ranks)]  # a part no rank has is left out
    for r in shown:
        lines.append(
            "Rank %d (%s): step %.3f ms = %s; busy %.3f ms, waiting %.3f ms%s"
            % (
                r.rank,
                r.host or "?",
                r.step_ms,
                " + ".join("%s %.3f ms" % (p, r.parts[p]) for p in used),
                r.busy_ms,
                r.wait_ms,
                "" if r.complete else " (incomplete: %s)" % (r.failure or "stopped"),
            )
        )
    return lines


def _straggler_lines(a: RanksAnalysis) -> List[str]:
    """The straggler, named where it is one with 95 % confidence, and the other ranks' waiting in collectives."""
    lines: List[str] = []
    g = a.straggler
    if g is None:
        return lines
    if g.named:
        lines.append(
            "Straggler: rank %d, busy %.2fx the other ranks' median (%s)%s"
            % (g.rank, g.ratio, _interval(g), "; evidence: " + _evidence(g) if _evidence(g) else "")
        )
    else:
        lines.append(
            "Straggler: none (the busiest, rank %d, is %.2fx the other ranks' median, %s; a straggler "
            "is over %.2fx with 95%% confidence)" % (g.rank, g.ratio, _interval(g), 1 + STRAGGLER_FACTOR)
        )
    waiting = [r for r in a.ranks if r.rank != g.rank]
    if waiting:
        lines.append(
            "Waiting inside collectives: %s; %.3f ms a step over all ranks"
            % (
                ", ".join(
                    "rank %d %.3f ms" % (r.rank, r.wait_ms)
                    for r in sorted(waiting, key=lambda r: -r.wait_ms)[:LISTED_RANKS]
                ),
                a.wait_ms,
            )
        )
    return lines


def summary_lines(a: RanksAnalysis) -> List[str]:
    """The log's Ranks block."""
    merged = [r.rank for r in a.ranks]
    lines = [
        "Ranks: %d of %d merged (%s)%s; clocks: %s"
        % (
            len(merged),
            a.size,
            a.launcher or "launcher unknown",
            "; no result from rank%s %s" % ("s" if len(a.missing) > 1 else "", _ranks(a.missing)) if a.missing else "",
            text(a.clock),
        )
    ]
    if a.stale:
        lines.append(
            "Ranks left out: rank-%s hold%s the result of another launch"
            % (", rank-".join(str(k) for k in a.stale), "s" if len(a.stale) == 1 else "")
        )
    lines += _rank_lines(a)
    if a.steps and len(a.ranks) > 1:
        counts: Dict[int, int] = {}
        for s in a.steps:
            counts[s.slowest] = counts.get(s.slowest, 0) + 1
        most = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
        spreads = sorted(s.busy_spread_ms for s in a.steps)
        worst = max(a.steps, key=lambda s: s.busy_spread_ms)
        lines.append(
            "Per step (%d steps every rank recorded): the slowest rank is rank %d in %d of them; busy time "
            "spread across ranks (most minus least) median %.3f ms, %.3f ms at most (step %d)"
            % (len(a.steps), most[0], most[1], median(spreads), worst.busy_spread_ms, worst.step)
        )
    lines += _straggler_lines(a)
    if a.layer_spread is not None:
        ls = a.layer_spread
        lines.append(
            "Layers across ranks: coefficient of variation of the %d layer means over %g ms: %.3f (median), "
            "%.3f at most (%s in %s)"
            % (ls.layers, LAYER_SPREAD_FLOOR_MS, ls.median_cv, ls.worst_cv, ls.worst, ls.worst_section)
        )
    for x in map(words, a.advice):
        lines.append("Advice: %s Evidence: %s." % (x.text, x.evidence))
    return lines


def _interval(s: Straggler) -> str:
    return ratio_interval(s.low, s.high, s.steps)


def _evidence(s: Straggler) -> str:
    return straggler_evidence(s.part, s.part_ms, s.others_part_ms, (s.last_in, s.last_in_steps))


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(k) for k in ranks)


def advice_rows(a: RanksAnalysis) -> List[List[object]]:
    """Rows of summary.csv: section, item, name, ms, percent, detail."""
    rows: List[List[object]] = []
    s = a.straggler
    if s is not None and s.named:
        rows.append(
            [
                "ranks",
                "straggler",
                "rank %d" % s.rank,
                round(a.rank(s.rank).busy_ms, 6),
                round(100 * (s.ratio - 1), 2),
                "%s; %s" % (_interval(s), _evidence(s)),
            ]
        )
    for r in a.ranks:
        rows.append(
            [
                "ranks",
                "rank_wait",
                "rank %d" % r.rank,
                round(r.wait_ms, 6),
                round(100 * r.wait_ms / r.step_ms, 2) if r.step_ms > 0 else 0.0,
                "waiting inside collectives",
            ]
        )
    for x in map(words, a.advice):
        rows.append(["ranks", "advice", x.rule, "", "", "%s Evidence: %s." % (x.text, x.evidence)])
    return rows
