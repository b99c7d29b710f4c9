"""Descriptive statistics: hand-computed values for the stats and rep objects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from gridbench.stats import describe, ols_slope, rep, t_halfwidth

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]


def test_describe_hand_values() -> None:
    s = describe(np.array(X))
    assert s["n"] == 10
    assert s["mean"] == pytest.approx(5.5)
    assert s["min"] == 1.0 and s["max"] == 10.0
    assert s["std"] == pytest.approx(math.sqrt(82.5 / 9))  # sample std, ddof=1
    # linear interpolation between order statistics: position q*(n-1)
    assert s["p50"] == pytest.approx(5.5)
    assert s["p90"] == pytest.approx(9.1)
    assert s["p99"] == pytest.approx(9.91)
    assert s["p999"] == pytest.approx(9.991)
    # Student t: t(0.975, 9) = 2.2621571628 (table value)
    assert s["ci95"] == pytest.approx(2.2621571628 * math.sqrt(82.5 / 9) / math.sqrt(10))


def test_ci95_matches_scipy_interval() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(10, 2, 37)
    lo, hi = st.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert describe(x)["ci95"] == pytest.approx((hi - lo) / 2)


def test_small_and_empty_samples_give_nulls() -> None:
    empty = describe(np.array([]))
    assert empty["n"] == 0 and empty["mean"] is None and empty["p99"] is None
    one = describe(np.array([4.0, np.nan]))  # NaN = not applicable, ignored
    assert one["n"] == 1 and one["mean"] == 4.0 and one["p50"] == 4.0
    assert one["std"] is None and one["ci95"] is None
    assert t_halfwidth(1.0, 1) is None


def test_rep_across_trials() -> None:
    r = rep([1.0, 2.0, None, 3.0, 4.0])
    assert r["n"] == 4
    assert r["mean"] == pytest.approx(2.5)
    assert r["std"] == pytest.approx(math.sqrt(5 / 3))
    assert r["min"] == 1.0 and r["max"] == 4.0
    assert r["ci95"] == pytest.approx(3.1824463053 * math.sqrt(5 / 3) / 2)  # t(0.975, 3)
    assert rep([])["mean"] is None


def test_ols_slope() -> None:
    x = np.arange(10.0)
    assert ols_slope(x, 3 * x + 1) == pytest.approx(3.0)
    assert ols_slope(np.ones(5), np.arange(5.0)) is None
