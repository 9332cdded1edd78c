"""Student's t distribution without SciPy: its CDF and quantile, from the regularised incomplete beta function,
and the confidence intervals that stand on them (a mean's, a ratio of two means')."""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

from .stats import summarize


# -- Student's t, without SciPy -------------------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(x: float, df: float) -> float:
    """Student's t distribution function with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + x * x))
    return 1.0 - tail if x >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on ``t_cdf``: exact to 1e-10)."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError("t_quantile needs 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return 0.5 * (low + high)


# -- confidence intervals ----------------------------------------------------------------------------------------


def ratio_ci(
    baseline: Sequence[float], other: Sequence[float], confidence: float = 0.95
) -> Tuple[float, Optional[float], Optional[float]]:
    """Ratio of means other/baseline, with a confidence interval.

    The interval comes from the delta method on the log of the ratio, with
    Welch-Satterthwaite degrees of freedom: var(log m) ~ s^2 / (n m^2) for
    each mean. It needs at least two values on each side; otherwise the
    bounds are None.
    """
    a, b = summarize(baseline), summarize(other)
    if a.mean <= 0 or b.mean <= 0:
        raise ValueError("ratios need positive means")
    ratio = b.mean / a.mean
    if a.n < 2 or b.n < 2:
        return ratio, None, None
    va = a.std**2 / (a.n * a.mean**2)
    vb = b.std**2 / (b.n * b.mean**2)
    if va + vb == 0:
        return ratio, ratio, ratio
    df = (va + vb) ** 2 / ((va**2 / (a.n - 1) if va else 0) + (vb**2 / (b.n - 1) if vb else 0))
    half_width = t_quantile(0.5 + confidence / 2, df) * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half_width), ratio * math.exp(half_width)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Tuple[float, Optional[float], Optional[float]]:
    """The mean of ``values`` with Student's t interval; the bounds are None with fewer than two values."""
    s = summarize(values)
    if s.n < 2:
        return s.mean, None, None
    half_width = t_quantile(0.5 + confidence / 2, s.n - 1) * s.std / math.sqrt(s.n)
    return s.mean, s.mean - half_width, s.mean + half_width
