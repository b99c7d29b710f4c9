"""The knee: highest sustained rate, first failing rate, capacity and its interval."""

from __future__ import annotations

import numpy as np
import pytest

from gridbench.jobflow.analysis.knee import PointVerdict, bootstrap_capacity, fit_capacity, knee


def test_fit_capacity_exact() -> None:
    x = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    y = np.array([1.0, 1.0, 2.0, 2.0, 2.5, 2.5])
    assert fit_capacity(x, y) == pytest.approx(2.5)


def test_fit_capacity_least_squares_across_points() -> None:
    # saturated at 3 and 4 with y 2.4/2.6 -> C = mean = 2.5 (in [2, 3])
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 2.0, 2.4, 2.6])
    assert fit_capacity(x, y) == pytest.approx(2.5)
    # every point saturated: C = mean(y)
    assert fit_capacity(np.array([2.0, 2.0, 4.0, 4.0]), np.array([1.0, 1.2, 1.1, 0.9])) == (
        pytest.approx(1.05)
    )
    # nothing saturated: the fit is flat above the highest rate; the smallest C is returned
    assert fit_capacity(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == pytest.approx(2.0)
    assert fit_capacity(np.array([]), np.array([])) is None


def test_bootstrap_interval_is_seeded_and_covers_the_fit() -> None:
    rng = np.random.default_rng(0)
    x = np.repeat([1.0, 2.0, 3.0, 4.0], 5)
    y = np.minimum(x, 2.5) + rng.normal(0, 0.05, x.size)
    c = fit_capacity(x, y)
    ci = bootstrap_capacity(x, y, 500, seed=1)
    assert ci is not None and ci[0] <= c <= ci[1]  # type: ignore[operator]
    assert ci[1] - ci[0] < 0.2
    assert ci == bootstrap_capacity(x, y, 500, seed=1)
    assert bootstrap_capacity(np.array([1.0, 2.0]), np.array([1.0, 1.5])) is None  # 1 trial/rate


def _v(rate: float, ok: bool | None, b: str | None = None) -> PointVerdict:
    return PointVerdict(rate, ok, b)


def test_knee_sustained_then_failing() -> None:
    x = np.repeat([1.0, 2.0, 3.0], 3)
    y = np.minimum(x, 2.5) + np.tile([-0.01, 0.0, 0.01], 3)
    k = knee([_v(1, True), _v(2, True), _v(3, False, "ce_done")], x, y, resamples=200)
    assert k["highest_sustained_rate_per_s"] == 2 and k["first_failing_rate_per_s"] == 3
    assert k["limited_by"] == "ce_done"
    assert k["capacity_per_s"] == pytest.approx(2.5, abs=0.01)
    lo, hi = k["capacity_ci95"]
    assert lo <= k["capacity_per_s"] <= hi
    assert k["statement"].startswith("Sustains up to 2/s (120/min); breaks at 3/s (180/min)")
    assert "in ce_done" in k["statement"] and "capacity ≈ 2.5/s" in k["statement"]


def test_knee_non_monotone_sweep_uses_first_failure() -> None:
    k = knee([_v(1, True), _v(2, False), _v(3, True)], np.array([]), np.array([]))
    assert k["highest_sustained_rate_per_s"] == 1 and k["first_failing_rate_per_s"] == 2


def test_knee_no_failing_point() -> None:
    x = np.array([1.0, 2.0])
    k = knee([_v(1, True), _v(2, True)], x, x)
    assert k["highest_sustained_rate_per_s"] == 2 and k["first_failing_rate_per_s"] is None
    assert k["capacity_per_s"] is None and k["capacity_ci95"] is None
    assert "Sustains every rate tried, up to 2/s" in k["statement"]


def test_knee_all_failing_and_single_point() -> None:
    x = np.array([2.0, 2.0, 4.0, 4.0])
    y = np.array([1.0, 1.2, 1.1, 0.9])
    k = knee([_v(2, False, "b"), _v(4, False, "b")], x, y)
    assert k["highest_sustained_rate_per_s"] is None and k["first_failing_rate_per_s"] == 2
    assert k["capacity_per_s"] == pytest.approx(1.05)
    assert k["statement"].startswith("Breaks already at the lowest rate tried, 2/s")
    single = knee([_v(5, False, "b")], np.array([5.0]), np.array([3.0]))
    assert single["capacity_per_s"] == pytest.approx(3.0) and single["capacity_ci95"] is None
    none = knee([_v(5, None)], np.array([]), np.array([]))
    assert none["first_failing_rate_per_s"] is None and none["statement"].startswith(
        "No valid trial"
    )
