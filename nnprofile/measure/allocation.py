"""Where a section's rounds go: to the entries whose figures are not yet sure (Neyman allocation).

Sampling in rounds (``nnprofile.measure.rounds``) first runs every entry every round. From the third
round on, each per-layer entry's share of the rounds to come is planned again (as the rounds grow by
half) from the spread its round means have shown so far: an entry needs about ``n (rse / target)^2`` rounds in all
to reach the target (its round means' spread stays, their standard error falls as the square root of
their number), so an entry already sure needs no more, and one whose figure moves a lot needs many.
With the budget left, the rounds to come are as many as the entries that still need rounds can pay for;
an entry that needs fewer than there will be takes part in that share of them (spread evenly, by a
running credit), one that needs more takes part in every one. The budget so goes where the variance is,
as Neyman's allocation of a survey's samples to its strata goes where their spread is: an entry at its
target after ``min_rounds`` is final, and its rounds go to the others. How many samples each entry takes
in a round it is in is planned too (``per_round``): more where its samples vary within a round more
than its rounds do and a round of it costs more than its samples (a short entry's untimed run first),
one where its rounds vary more.

The whole-step entries (the data, the passes, the update) stay in every round: they carry the rounds'
speed (``RoundLevels``), and a round never shrinks to a few cheap entries whose noise would read as the
machine's. An entry measured in fewer rounds than its neighbours is no less fair: a short entry is run
once untimed before each round's samples (its data back in the caches), in every round it is in.

``RoundLevels`` keeps the rounds' levels (``nnprofile.base.stats.speed_levels``) and each entry's
round means up to date as rounds end, in time proportional to the entries of the round, so that the
stopping rule and the plan may read them after every round of a network of thousands of entries. Each
entry's typical round mean, which the levels divide by, is taken again only as its rounds grow by a
quarter; the figures themselves use ``speed_levels`` over every sample, once, at the end.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from ..base.stats import levels_of, percentile

Pair = Tuple[Sequence[float], Sequence[int]]  # an entry's samples and its round sizes
FIRST_PLAN = 3  # the round after which shares are first planned (three round means give a spread)
REPLAN = 1.5  # and again when the rounds have grown this much
MARGIN = 0.75  # shares are planned for this share of the target (an error read off a few rounds is
# itself unsure), and an entry is done early only there
RETAKE = 1.25  # an entry's typical round mean is taken again when its rounds have grown this much


class RoundLevels:
    """The rounds' levels and each entry's round means, kept as rounds end (see the module's text)."""

    def __init__(self) -> None:
        self.totals: List[float] = []  # per round: its entries' round means, summed
        self.expected: List[float] = []  # per round: the same entries' typical round means, summed
        self.means: Dict[int, List[Tuple[int, float]]] = {}  # entry -> (round, mean) of each round it was in
        self._typical: Dict[int, float] = {}
        self._retake: Dict[int, int] = {}
        self._sums: Dict[int, Tuple[float, float]] = {}  # entry -> (sum, sum of squares) of its means

    def add_round(self, pairs: Sequence[Pair]) -> None:
        """The round that just ended: each entry's samples of it (the last of its samples)."""
        r = len(self.totals)
        total = expected = 0.0
        for i, (samples, sizes) in enumerate(pairs):
            if len(sizes) != r + 1 or not sizes[r]:
                continue  # not in this round (final, or it sat this one out)
            n = sizes[r]
            m = sum(samples[len(samples) - n :]) / n
            means = self.means.setdefault(i, [])
            means.append((r, m))
            s, q = self._sums.get(i, (0.0, 0.0))
            self._sums[i] = (s + m, q + m * m)
            if len(means) >= self._retake.get(i, 1):
                typical = percentile(sorted(x for _, x in means), 50)
                delta = typical - self._typical.get(i, typical)
                if delta:
                    for q_round, _ in means[:-1]:
                        self.expected[q_round] += delta
                self._typical[i] = typical
                self._retake[i] = max(len(means) + 1, int(len(means) * RETAKE))
            total += m
            expected += self._typical[i]
        self.totals.append(total)
        self.expected.append(expected)

    def levels(self, reference: Sequence[float] = ()) -> List[float]:
        """Per round: its time against its entries' typical time, relative to the usual speed (as
        ``speed_levels``; a round holding little of the work by the reference workload's time)."""
        raw = [t / e if e > 0 else 1.0 for t, e in zip(self.totals, self.expected)]
        return levels_of(raw, self.expected, reference)

    def rse(self, entry: int, dropped: Sequence[int], overhead_ns: float = 0.0) -> float:
        """An entry's relative standard error from its round means, the rounds ``dropped`` left out (the
        timing's overhead taken off its mean); infinite below two rounds."""
        means = self.means.get(entry, [])
        s, q = self._sums.get(entry, (0.0, 0.0))
        n = len(means)
        if dropped:
            skip = set(dropped)
            for r, m in means:
                if r in skip:
                    s, q, n = s - m, q - m * m, n - 1
        if n < 2:
            return math.inf
        mean = s / n
        var = max(0.0, (q - n * mean * mean) / (n - 1))
        centre = mean - overhead_ns
        return math.sqrt(var / n) / centre if centre > 0 else math.inf

    def rounds_in(self, entry: int, dropped: Sequence[int]) -> int:
        skip = set(dropped)
        return sum(1 for r, _ in self.means.get(entry, []) if r not in skip)


class Need:
    """What one entry still needs: the rounds it has, its error now, what one more round of it costs, and the
    share of the rounds to come it can be in (1; a lean plan's layer entries: one round in ``layer_every``)."""

    __slots__ = ("rounds", "rse", "cost_ns", "opportunity")

    def __init__(self, rounds: int, rse: float, cost_ns: float, opportunity: float = 1.0):
        self.rounds, self.rse, self.cost_ns, self.opportunity = rounds, rse, cost_ns, opportunity

    def more(self, target: float, min_rounds: int) -> float:
        """Further rounds to reach the target: n (rse / target)^2 in all, at least ``min_rounds``."""
        if not math.isfinite(self.rse):
            return math.inf
        return max(0.0, min_rounds - self.rounds, self.rounds * (self.rse / target) ** 2 - self.rounds)


def shares(
    needs: Sequence[Need],
    target: float,
    min_rounds: int,
    remaining_ns: float,
    fixed_ns: float,
    rounds_left: int,
    passes: int = 6,
) -> Tuple[List[float], List[bool]]:
    """Each entry's share of the rounds it can be in from here (0: it needs none; 1: every one), and whether
    it can reach the target at all in the budget left.

    The rounds to come are as many as the budget left pays for (``fixed_ns`` a round for what is in
    every round, plus each entry's cost times its share), at most ``rounds_left``, and no more than the
    entry that needs the most of those that can reach the target needs; an entry's share is what it
    needs of them. One that needs more rounds than the budget can pay for is in every round and does not
    keep the others sampling (its figure is flagged, with its error). Solved by a few passes from
    everyone in every round (the rounds only grow).
    """
    more = [n.more(target, min_rounds) for n in needs]
    share = [1.0 if m > 0 else 0.0 for m in more]
    reachable = [True] * len(needs)
    for _ in range(passes):
        per_round = fixed_ns + sum(s * n.cost_ns * n.opportunity for s, n in zip(share, needs))
        paid = min(float(rounds_left), remaining_ns / per_round if per_round > 0 else float(rounds_left))
        reachable = [n.opportunity > 0 and m / n.opportunity <= paid for m, n in zip(more, needs)]
        most = max([m / n.opportunity for m, n, ok in zip(more, needs, reachable) if ok] or [0.0])
        rounds = min(paid, most)
        if rounds <= 0:
            share = [0.0 if ok else 1.0 for ok in reachable]
            break
        share = [
            1.0 if not ok else 0.0 if m <= 0 else min(1.0, m / (rounds * n.opportunity))
            for m, n, ok in zip(more, needs, reachable)
        ]
    return share, reachable


def per_round(
    samples: Sequence[float], sizes: Sequence[int], round_ns: float, sample_ns: float, cap: int
) -> Optional[int]:
    """The samples a round that minimise an entry's error for its cost (two-stage sampling): a round's mean
    varies by the round (``s_b``) and by its samples (``s_w``, over ``k`` of them); one more round costs
    ``round_ns`` (its untimed run first) besides its samples, ``sample_ns`` each. The best ``k`` is
    ``sqrt(s_w^2 / s_b^2 * round_ns / sample_ns)``, between 1 and ``cap``; None where the samples cannot
    tell (fewer than three rounds, or none with two samples)."""
    within, df, means = 0.0, 0, []
    start = 0
    for n in sizes:
        chunk = samples[start : start + n]
        start += n
        if not n:
            continue
        m = sum(chunk) / n
        means.append((m, n))
        if n > 1:
            within += sum((x - m) ** 2 for x in chunk)
            df += n - 1
    if df < 2 or len(means) < 3:
        return None
    s_w2 = within / df
    grand = sum(m for m, _ in means) / len(means)
    between = sum((m - grand) ** 2 for m, _ in means) / (len(means) - 1)
    k_bar = sum(n for _, n in means) / len(means)
    s_b2 = between - s_w2 / k_bar
    if s_b2 <= 0:
        return cap if s_w2 > 0 else 1
    best = math.sqrt(s_w2 / s_b2 * max(round_ns, 0.0) / max(sample_ns, 1.0))
    return max(1, min(cap, int(round(best))))


class Allocation:
    """The shares planned, and who is in the next round: a running credit per entry, so that an entry with
    a share of a third is in one round of three, its rounds spread out (and the entries' rounds staggered,
    so that rounds cost about alike)."""

    def __init__(self) -> None:
        self.share: Dict[int, float] = {}  # id(probe) -> its share
        self.credit: Dict[int, float] = {}
        self.planned = False

    def plan(self, keys: Sequence[int], planned: Sequence[float]) -> None:
        for k, (key, s) in enumerate(zip(keys, planned)):
            if key not in self.credit:
                self.credit[key] = (k * 0.6180339887) % 1.0  # staggered starts
            self.share[key] = s
        self.planned = True

    def takes(self, key: int) -> bool:
        """Whether the entry is in this round (asked once per round it could be in)."""
        share: Optional[float] = self.share.get(key)
        if share is None or share >= 1.0:
            return True
        credit = self.credit.get(key, 0.0) + share
        if credit >= 1.0 - 1e-9:
            self.credit[key] = credit - 1.0
            return True
        self.credit[key] = credit
        return False
