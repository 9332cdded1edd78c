"""Statistics for comparisons: summaries of repeated runs and ratios with confidence intervals."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from .timing import summarize


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    std: float
    p90: float
    min: float
    max: float


def describe(values: Sequence[float]) -> Summary:
    s = summarize(values)
    return Summary(n=s.n, mean=s.mean, median=s.median, std=s.std, p90=s.p90, min=s.min, max=s.max)


def ratio_ci(baseline: Sequence[float], other: Sequence[float],
             confidence: float = 0.95) -> Tuple[float, Optional[float], Optional[float]]:
    """Ratio of means other/baseline, with a confidence interval.

    The interval comes from the delta method on the log of the ratio, with
    Welch-Satterthwaite degrees of freedom: var(log m) ~ s^2 / (n m^2) for
    each mean. It needs at least two values on each side; otherwise the
    bounds are None.
    """
    a, b = describe(baseline), describe(other)
    if a.mean <= 0 or b.mean <= 0:
        raise ValueError("ratios need positive means")
    ratio = b.mean / a.mean
    if a.n < 2 or b.n < 2:
        return ratio, None, None
    va = a.std ** 2 / (a.n * a.mean ** 2)
    vb = b.std ** 2 / (b.n * b.mean ** 2)
    if va + vb == 0:
        return ratio, ratio, ratio
    df = (va + vb) ** 2 / ((va ** 2 / (a.n - 1) if va else 0) + (vb ** 2 / (b.n - 1) if vb else 0))
    from scipy.stats import t
    half_width = t.ppf(0.5 + confidence / 2, df) * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half_width), ratio * math.exp(half_width)
