"""The statistics under ``gridbench compare``: clustered tests, BH, Fisher, capping, judging."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gridbench.compare import Settings
from gridbench.compare import significance as sig
from gridbench.compare.engine import judge
from gridbench.jobflow.compare.history import better_direction


def clustered(
    rng: np.random.Generator, trials: int, per: int, shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Jobs whose trials each have their own offset (as a polling phase or background load)."""
    g = np.repeat(np.arange(trials), per).astype(np.int64)
    x = rng.normal(1.0 + shift, 0.3, g.size) + rng.normal(0.0, 0.1, trials)[g]
    return x, g


def test_design_effect_matches_the_anova_icc() -> None:
    g = np.repeat(np.arange(4), 50).astype(np.int64)
    # no between-trial variation beyond the noise: deff close to 1
    rng = np.random.default_rng(3)
    assert sig.design_effect(rng.normal(0, 1, 200), g) < 1.5
    # each trial constant, trials different: ICC = 1, deff = trial size
    x = g.astype(np.float64)
    assert sig.design_effect(x, g) == pytest.approx(50.0)
    # one trial: cannot be estimated, no inflation
    assert sig.design_effect(x[:50], g[:50]) == 1.0


def test_clustered_tests_hold_their_false_positive_rate() -> None:
    rng = np.random.default_rng(1)
    n, naive, welch_c, mwu_c = 300, 0, 0, 0
    for _ in range(n):
        a, ga = clustered(rng, 3, 200)
        b, gb = clustered(rng, 3, 200)
        naive += sig.welch(a, b)[1] < 0.05  # type: ignore[index]
        welch_c += sig.welch_clustered(a, ga, b, gb)[1] < 0.05  # type: ignore[index]
        mwu_c += sig.mann_whitney_clustered(a, ga, b, gb)[1] < 0.05  # type: ignore[index]
    # pooling jobs as if independent calls trial noise significant most of the time
    assert naive / n > 0.5
    assert welch_c / n < 0.10 and mwu_c / n < 0.10


def test_clustered_tests_find_a_real_shift() -> None:
    rng = np.random.default_rng(2)
    a, ga = clustered(rng, 3, 200)
    b, gb = clustered(rng, 3, 200, shift=1.0)
    assert sig.welch_clustered(a, ga, b, gb)[1] < 0.01  # type: ignore[index]
    assert sig.mann_whitney_clustered(a, ga, b, gb)[1] < 0.01  # type: ignore[index]


def test_unclustered_mann_whitney_matches_scipy() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.exponential(1.0, 80), rng.exponential(1.3, 90)
    ga, gb = np.zeros(80, dtype=np.int64), np.zeros(90, dtype=np.int64)
    u, p = sig.mann_whitney_clustered(a, ga, b, gb)  # type: ignore[misc]
    ref = stats.mannwhitneyu(
        a, b, alternative="two-sided", method="asymptotic", use_continuity=False
    )
    assert u == pytest.approx(float(ref.statistic))
    assert p == pytest.approx(float(ref.pvalue), rel=1e-9)


def test_welch_edge_cases() -> None:
    assert sig.welch(np.array([1.0]), np.array([1.0, 2.0])) is None
    assert sig.welch(np.array([2.0, 2.0]), np.array([2.0, 2.0])) == (0.0, 1.0)
    assert sig.welch(np.array([2.0, 2.0]), np.array([3.0, 3.0])) is None
    res = sig.welch(np.array([1.0, 2.0, 3.0, np.nan]), np.array([4.0, 5.0, 6.0]))
    ref = stats.ttest_ind([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], equal_var=False)
    assert res is not None and res[1] == pytest.approx(float(ref.pvalue))


def test_benjamini_hochberg_against_hand_values() -> None:
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.5])
    adj = sig.benjamini_hochberg(p)
    # sorted 0.01, 0.03, 0.04, 0.5 (m = 4): 0.04, 0.0533, 0.0533, 0.5
    assert adj[0] == pytest.approx(0.04)
    assert adj[1] == pytest.approx(0.16 / 3)
    assert adj[2] == pytest.approx(0.16 / 3)
    assert np.isnan(adj[3])
    assert adj[4] == pytest.approx(0.5)


def test_fisher_on_failure_counts() -> None:
    assert sig.fisher(0, 100, 0, 100) == (1.0, 1.0)
    assert sig.fisher(0, 0, 3, 10) is None
    res = sig.fisher(1, 200, 30, 200)
    assert res is not None and res[1] < 1e-6


def test_capped_is_seeded_and_keeps_groups_aligned() -> None:
    x = np.arange(1000, dtype=np.float64)
    g = (np.arange(1000) // 100).astype(np.int64)
    a, ga = sig.capped(x, g, 50, seed=7)
    b, _ = sig.capped(x, g, 50, seed=7)
    assert a.size == 50 and np.array_equal(a, b)
    assert np.array_equal(ga, (a // 100).astype(np.int64))
    c, _ = sig.capped(np.array([1.0, np.nan, 2.0]), np.zeros(3, dtype=np.int64), 10, seed=1)
    assert c.tolist() == [1.0, 2.0]


def test_judge_needs_both_p_and_effect() -> None:
    s = Settings(alpha=0.05, min_effect=0.05)
    assert judge(0.001, 0.5, 1.5, "lower", s) == (True, "regressed")
    assert judge(0.001, -0.5, 0.5, "lower", s) == (True, "improved")
    assert judge(0.001, 1.0, 1.2, "higher", s) == (True, "improved")
    assert judge(0.001, 0.01, 1.01, "lower", s) == (False, "unchanged")  # too small
    assert judge(0.2, 0.5, 1.5, "lower", s) == (False, "unchanged")  # not significant
    assert judge(None, 0.5, 1.5, "lower", s) == (False, "unchanged")
    assert judge(0.001, 0.1, None, "lower", s) == (True, "regressed")  # baseline 0


def test_better_direction() -> None:
    assert better_direction("latency.overall.p99") == "lower"
    assert better_direction("throughput.ce_done.steady") == "higher"
    assert better_direction("summary.expected_ratio.client_done.mean") == "higher"
    assert better_direction("failures.rate") == "lower"
    assert better_direction("knee.capacity_per_s") == "higher"
    # every job rate: a fall in throughput is never called an improvement
    for rate in (
        "rates.end_to_end_per_s",
        "rates.submit_per_s",
        "rates.dispatch_per_s",
        "rates.per_second.p99",
        "model.throughput_per_s",
        "model.submit_rate_per_s",
        "by_agent.agent-1.rate_per_s",
    ):
        assert better_direction(rate) == "higher", rate
    assert better_direction("queues.ce_finish.growth_per_s") == "lower"
