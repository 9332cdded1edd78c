"""Student's t without SciPy: the quantiles every interval stands on, against the published table."""

import pytest

from nnprofile.base.student import mean_ci, t_cdf, t_quantile

# two-sided 95% (p = 0.975) and one-sided 95% (p = 0.95) critical values, as every t table prints them
TABLE = [
    (1, 0.975, 12.706),
    (2, 0.975, 4.303),
    (5, 0.975, 2.571),
    (10, 0.975, 2.228),
    (30, 0.975, 2.042),
    (120, 0.975, 1.980),
    (7, 0.95, 1.895),
    (20, 0.95, 1.725),
]


@pytest.mark.parametrize("df, p, value", TABLE)
def test_quantiles_match_the_table(df, p, value):
    assert t_quantile(p, df) == pytest.approx(value, abs=5e-4)
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_the_quantile_is_symmetric_and_tends_to_the_normal():
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4))
    assert t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)
    assert t_quantile(0.975, 3.5) < t_quantile(0.975, 3)  # fractional degrees of freedom (Welch's) lie between


def test_mean_ci_is_students_interval():
    mean, low, high = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(4.303 * 1.0 / 3**0.5, abs=1e-3)
    assert low == pytest.approx(4.0 - high)
