"""Statistics of samples: summaries, running moments, and ratios with confidence intervals.

Pure functions over numbers, used by the measurement (stopping rules), the
result model (per-entry figures) and the comparisons alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple


NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Stats:
    """Summary of per-call times, in nanoseconds."""

    n: int
    mean: float
    median: float
    std: float
    min: float
    max: float
    p90: float
    rounds: int = 1
    # From the spread of the round means, when samples were taken in rounds.
    round_rse: Optional[float] = None
    # Whether there were enough samples for a relative standard error at all (two or more, in
    # two or more rounds when taken in rounds): where not, ``rse`` reads 0 and renderers leave it empty.
    rse_known: bool = True
    # Samples other work interrupted (``nnprofile.base.interference``), left out of every figure above; and
    # whether the undisturbed ones were enough for the figures to stand on them (else they are over every sample).
    disturbed: int = 0
    undisturbed_enough: bool = True

    @property
    def rse(self) -> float:
        """Relative standard error of the mean (0 when undefined)."""
        if self.round_rse is not None:
            return self.round_rse
        if self.n < 2 or self.mean <= 0:
            return 0.0
        return self.std / math.sqrt(self.n) / self.mean

    @property
    def known_rse(self) -> Optional[float]:
        """The relative standard error where enough samples give one; None (an empty cell) where they do not."""
        return self.rse if self.rse_known else None


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of no values")
    return percentile(sorted(values), 50)


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; 0 for no values (a part that never ran)."""
    return sum(values) / len(values) if values else 0.0


def median_error(values: Sequence[float]) -> float:
    """The standard error of a median, from the median absolute deviation (1.2533 sigma / sqrt(n) for
    normal spread, sigma = 1.4826 MAD)."""
    m = median(values)
    mad = median([abs(v - m) for v in values])
    return 1.2533 * 1.4826 * mad / math.sqrt(len(values))


def summarize(samples: Sequence[float]) -> Stats:
    if not samples:
        raise ValueError("no samples to summarize")
    values = sorted(samples)
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return Stats(
        n=n,
        mean=mean,
        median=percentile(values, 50),
        std=math.sqrt(var),
        min=values[0],
        max=values[-1],
        p90=percentile(values, 90),
        rse_known=n >= 2,
    )


def round_means(samples: Sequence[float], round_sizes: Sequence[int]) -> List[Optional[float]]:
    """The mean of each round's samples, None for a round with none."""
    means: List[Optional[float]] = []
    start = 0
    for size in round_sizes:
        chunk = samples[start : start + size]
        means.append(sum(chunk) / len(chunk) if chunk else None)
        start += size
    return means


def summarize_rounds(samples: Sequence[float], round_sizes: Sequence[int], dropped: Sequence[int] = ()) -> Stats:
    """Statistics of samples taken in rounds, robust to rounds the machine slowed down.

    The mean reported is the mean of the round means over the rounds kept:
    rounds in ``dropped`` (those a drift signal marked as slow, see
    ``trim_rounds``) do not count, so a slow spell of the machine does not carry
    it. Its relative standard error comes from the spread of the kept round
    means, which is what moves from run to run. Median, spread, extremes and
    p90 are over all samples. With one round (or none recorded), it is
    ``summarize``.
    """
    base = summarize(samples)
    if len(round_sizes) < 2 or sum(round_sizes) != len(samples):
        return base
    means = round_means(samples, round_sizes)
    skip = set(dropped)
    kept = [m for r, m in enumerate(means) if m is not None and r not in skip]
    if not kept:  # every round marked: better all of them than none
        kept = [m for m in means if m is not None]
    center = sum(kept) / len(kept)
    rse = None
    if len(kept) >= 2 and center > 0:
        spread = math.sqrt(sum((m - center) ** 2 for m in kept) / (len(kept) - 1))
        rse = spread / math.sqrt(len(kept)) / center
    return Stats(
        n=base.n,
        mean=center,
        median=base.median,
        std=base.std,
        min=base.min,
        max=base.max,
        p90=base.p90,
        rounds=len(kept),
        round_rse=rse if rse is not None else 0.0,
        rse_known=rse is not None,
    )


def weighted_percentile(pairs: Sequence[Tuple[float, float]], q: float) -> float:
    """The value at ``q`` percent of the total weight of (value, weight) pairs, interpolated between the midpoints
    of the values' weights (with equal weights: ``percentile``)."""
    ordered = sorted(pairs)
    total = sum(w for _, w in ordered)
    if len(ordered) == 1 or total <= 0:
        return ordered[0][0] if ordered else 0.0
    points, seen = [], 0.0
    for value, weight in ordered:
        points.append(
            ((seen + weight / 2 - ordered[0][1] / 2) / (total - ordered[0][1] / 2 - ordered[-1][1] / 2), value)
        )
        seen += weight
    target = q / 100.0
    for (p0, v0), (p1, v1) in zip(points, points[1:]):
        if target <= p1:
            return v0 if p1 <= p0 else v0 + (v1 - v0) * (target - p0) / (p1 - p0)
    return points[-1][1]


def summarize_undisturbed(
    samples: Sequence[float],
    round_sizes: Sequence[int],
    dropped: Sequence[int],
    disturbed: Sequence[int],
    per_ns: float,
    taken: Sequence[Optional[float]] = (),
) -> Stats:
    """Statistics of samples some of which other work held up (``disturbed``: their indexes). A held-up sample whose
    ``taken`` is known (the time other work took of it: its wall time less the thread's CPU time) counts less that
    time: what the work itself took. One whose time taken is not known (a wait) is left out, and the rest are each
    weighted by the inverse of their chance not to be left out, at the share of ``per_ns`` interruptions per ns that
    leave a sample out (``nnprofile.base.interference.weights``), so that leaving the longer ones out does not favour
    the short: the mean of the rounds' weighted means (rounds in ``dropped`` left out, as ``summarize_rounds``), a
    weighted median and p90, the spread of the samples kept. Where too few samples remain (``interference.enough``),
    the figures still stand on those and say so (``undisturbed_enough`` False); only where none do are they over
    every sample (and say so too)."""
    from .interference import enough, weights
    from .series import corrected

    if not disturbed:  # nothing held up: nothing to weigh against
        return summarize_rounds(samples, round_sizes, dropped)
    fixed = corrected(samples, disturbed, taken)
    skip = {i for i, v in enumerate(fixed) if v is None}
    if not skip:  # every held-up sample corrected: the samples as other work left them
        base = summarize_rounds([float(v) for v in fixed if v is not None], round_sizes, dropped)
        return _with(base, disturbed=len(disturbed))
    samples = [float(v) if v is not None else float(samples[i]) for i, v in enumerate(fixed)]
    kept_at = [i for i in range(len(samples)) if i not in skip]
    if not kept_at:
        base = summarize_rounds(samples, round_sizes, dropped)
        return _with(base, disturbed=len(disturbed), undisturbed_enough=False)
    values = [samples[i] for i in kept_at]
    w = weights(values, per_ns * len(skip) / len(disturbed))
    base = _weighted(values, w, len(disturbed), enough(len(kept_at), len(samples)))
    if len(round_sizes) < 2 or sum(round_sizes) != len(samples):
        return base
    means: List[Optional[float]] = []
    start = 0
    weight_of = dict(zip(kept_at, w))
    for size in round_sizes:
        inside = [(samples[i], weight_of[i]) for i in range(start, start + size) if i in weight_of]
        means.append(sum(v * x for v, x in inside) / sum(x for _, x in inside) if inside else None)
        start += size
    drop = set(dropped)
    kept = [m for r, m in enumerate(means) if m is not None and r not in drop] or [m for m in means if m is not None]
    mean_of_rounds = sum(kept) / len(kept)
    rse = None
    if len(kept) >= 2 and mean_of_rounds > 0:
        spread = math.sqrt(sum((m - mean_of_rounds) ** 2 for m in kept) / (len(kept) - 1))
        rse = spread / math.sqrt(len(kept)) / mean_of_rounds
    return _with(
        base,
        mean=mean_of_rounds,
        rounds=len(kept),
        round_rse=rse if rse is not None else 0.0,
        rse_known=rse is not None,
    )


def _weighted(values: Sequence[float], w: Sequence[float], disturbed: int, stood: bool) -> Stats:
    """The statistics of samples each of its weight: a weighted mean, median and p90, the spread of the samples."""
    pairs = list(zip(values, w))
    total = sum(w)
    center = sum(v * x for v, x in pairs) / total
    var = sum(x * (v - center) ** 2 for v, x in pairs) / total * len(values) / max(1, len(values) - 1)
    return Stats(
        n=len(values),
        mean=center,
        median=weighted_percentile(pairs, 50),
        std=math.sqrt(var),
        min=min(values),
        max=max(values),
        p90=weighted_percentile(pairs, 90),
        rse_known=len(values) >= 2,
        disturbed=disturbed,
        undisturbed_enough=stood,
    )


def _with(stats: Stats, **changes: object) -> Stats:
    from dataclasses import replace

    return replace(stats, **changes)  # type: ignore[arg-type]


# The machine's usual speed: a low quantile of the rounds' levels (slow spells only add time).
REFERENCE_QUANTILE = 25
# A round holding less than this share of the fullest round's work is judged by the reference workload.
SPARSE = 0.25


@dataclass(frozen=True)
class Drift:
    """How the machine's speed moved from round to round during a section.

    ``levels`` holds one figure per round: the time that round's samples took,
    relative to the machine's usual speed in this section (the rounds' lower
    quartile): 1.3 means that round ran 30% slower. Rounds slower than
    ``1 + threshold`` are left out of every entry's mean (``dropped``). When
    half the rounds or more are dropped, or some ran well faster than the
    usual speed, the usual speed itself is in doubt: the section's figures are
    uncertain (``flagged``).
    """

    levels: Tuple[float, ...]
    threshold: float
    # Rounds never left out: a recorded program's steps that hold work most steps do not (a validation);
    # leaving them out because that work made them slower would leave out its share.
    exempt: Tuple[int, ...] = ()

    @property
    def dropped(self) -> List[int]:
        return [r for r, level in enumerate(self.levels) if level > 1 + self.threshold and r not in self.exempt]

    @property
    def faster(self) -> List[int]:
        """Rounds well faster than the usual speed: the usual speed was itself taken in a slow spell."""
        return [r for r, level in enumerate(self.levels) if level < 1 - self.threshold]

    @property
    def flagged(self) -> bool:
        return len(self.levels) >= 2 and (2 * len(self.dropped) >= len(self.levels) or bool(self.faster))

    @property
    def high(self) -> float:
        return max(self.levels) if self.levels else 1.0


def speed_levels(
    series: Sequence[Tuple[Sequence[float], Sequence[int]]],
    rounds: int,
    robust: bool = False,
    reference: Sequence[float] = (),
) -> List[float]:
    """Per round: its samples' time against their entries' typical round means, relative to the usual speed.

    ``series`` holds each entry's (samples, round_sizes); an entry missing
    from a round (final early) simply does not count in it. Entries weigh by
    their time, so the rounds' levels follow the work that matters. ``robust``
    (a recorded program's steps): a round's level is the weighted median of its
    entries' ratios, so that one part slower in some steps (an input that falls
    behind) is the program's own time, and only a slowdown of most of the work
    (the machine's) reads as one. ``reference``: a fixed workload's time in each
    round (``nnprofile.measure.machine_watch.Reference``); a round that holds little of
    the work (less than ``SPARSE`` of the fullest round's: its entries' shares of
    the rounds were planned small) takes its level from it, not from its few
    entries' own spread (see ``levels_of``).
    """
    totals = [0.0] * rounds
    expected = [0.0] * rounds
    ratios: List[List[Tuple[float, float]]] = [[] for _ in range(rounds)]
    for samples, sizes in series:
        means = round_means(samples, sizes)
        present = sorted(m for m in means if m is not None)
        if not present:
            continue
        typical = percentile(present, 50)
        for r, m in enumerate(means[:rounds]):
            if m is not None:
                totals[r] += m
                expected[r] += typical
                if typical > 0:
                    ratios[r].append((m / typical, typical))
    raw = [t / e if e > 0 else 1.0 for t, e in zip(totals, expected)]
    if robust:
        raw = [_weighted_median(pairs) if pairs else level for pairs, level in zip(ratios, raw)]
    return levels_of(raw, expected, reference)


def levels_of(raw: Sequence[float], expected: Sequence[float], reference: Sequence[float] = ()) -> List[float]:
    """Rounds' levels from their raw ratios (time against their entries' typical time), relative to the usual:
    the rounds' lower quartile (a round's own level, not an interpolation between a fast and a slow round).
    A round whose entries' typical time (``expected``) is under ``SPARSE`` of the fullest round's takes the
    reference workload's level where one was timed that round, else 1 (not judged)."""
    if not raw:
        return []
    full = max(expected) if expected else 0.0
    sparse = [full > 0 and e < SPARSE * full for e in expected]
    judged = [level for level, thin in zip(raw, sparse) if not thin] or list(raw)
    usual = sorted(judged)[(len(judged) - 1) * REFERENCE_QUANTILE // 100]
    out = [level / usual if usual > 0 else level for level in raw]
    if any(sparse):
        ref = [x for x in reference if x and x > 0]
        ref_usual = sorted(ref)[(len(ref) - 1) * REFERENCE_QUANTILE // 100] if ref else 0.0
        for r, thin in enumerate(sparse):
            if thin:
                out[r] = reference[r] / ref_usual if ref_usual and r < len(reference) and reference[r] else 1.0
    return out


def _weighted_median(pairs: Sequence[Tuple[float, float]]) -> float:
    """The value at half of the total weight of (value, weight) pairs."""
    ordered = sorted(pairs)
    half, seen = sum(w for _, w in ordered) / 2, 0.0
    for value, weight in ordered:
        seen += weight
        if seen >= half:
            return value
    return ordered[-1][0]


class RunningStats:
    """Welford's running mean and variance: the stopping rule costs O(1) per run."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (x - self.mean)

    @property
    def rse(self) -> float:
        if self.n < 2:
            return math.inf
        if self.mean <= 0:
            return 0.0
        return math.sqrt(self._m2 / (self.n - 1)) / math.sqrt(self.n) / self.mean
