"""SUS scoring and interpretation, the paired-test statistics, the correction and the power
analysis, against the seeds' figures, hand computations and scipy/statsmodels called
directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sst
from statsmodels.stats.power import TTestPower

from gridbench.study import stats, sus

#: Ten SUS scores with the GridSpace figures (MAPPER §3.2.3.1): mean 68, SD 18, n = 10.
#: Scores are multiples of 2.5, so an SD of exactly 18 is impossible with mean 68 and n 10
#: (the sum of squared deviations would need a non-integer count of 2.5 steps); these
#: have mean 68 exactly and SD 17.98, which the seed prints as 18.
GRIDSPACE = [45.0, 50.0, 55.0, 55.0, 57.5, 67.5, 82.5, 85.0, 87.5, 95.0]


def items_for(score: float, shift: int) -> list[int]:
    """Ten SUS answers (1-5) whose SUS is ``score``: its 0-4 contributions spread over
    the items (rotated by ``shift``), then odd items answer c + 1, even items 5 - c."""
    k = round(score / 2.5)
    contrib = [4] * (k // 4) + ([k % 4] if k % 4 else [])
    contrib += [0] * (10 - len(contrib))
    contrib = contrib[shift % 10 :] + contrib[: shift % 10]
    return [c + 1 if i % 2 == 0 else 5 - c for i, c in enumerate(contrib)]


def test_scoring_rule() -> None:
    assert sus.sus_scores(np.array([[5, 1] * 5])).tolist() == [100.0]
    assert sus.sus_scores(np.array([[1, 5] * 5])).tolist() == [0.0]
    assert sus.sus_scores(np.array([[3] * 10])).tolist() == [50.0]
    # item 1 = 4 -> 3, item 2 = 2 -> 3, the rest neutral (2 each): (3 + 3 + 16) x 2.5
    assert sus.sus_scores(np.array([[4, 2, 3, 3, 3, 3, 3, 3, 3, 3]])).tolist() == [55.0]


def test_gridspace_response_set_gives_mean_68_sd_18_n_10() -> None:
    items = np.array([items_for(s, i) for i, s in enumerate(GRIDSPACE)])
    assert items.min() >= 1 and items.max() <= 5
    assert sus.sus_scores(items).tolist() == GRIDSPACE
    got = sus.summarize(items, resamples=2000, seed=1)
    assert got["n"] == 10
    assert got["mean"] == 68.0
    assert got["sd"] == pytest.approx(17.98147, abs=1e-5)
    assert round(got["sd"]) == 18
    half = sst.t.ppf(0.975, 9) * got["sd"] / math.sqrt(10)
    assert got["ci95"] == pytest.approx([68 - half, 68 + half])
    assert got["grade"] == "C" and got["adjective"] == "Good"
    assert got["percentile"] == pytest.approx(50.0)
    # BCa (n < 30): scipy directly, same seed, same interval
    ref = sst.bootstrap(
        (np.array(GRIDSPACE),),
        np.mean,
        n_resamples=2000,
        method="BCa",
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert got["ci95_bca"] == pytest.approx([ref.low, ref.high])
    assert got["ci95_bca"][0] < 68 < got["ci95_bca"][1]


def test_bca_when_it_cannot_be_computed() -> None:
    same = np.array([[3] * 10] * 5)
    got = sus.summarize(same, resamples=500)
    assert got["ci95_bca"] is None and "every score is the same" in got["bca_note"]
    assert sus.summarize(np.array([[3] * 10] * 2))["bca_note"].startswith("BCa needs at least 3")
    big = np.array([items_for(s, i) for i, s in enumerate(GRIDSPACE * 3)])
    assert sus.summarize(big, resamples=500)["ci95_bca"] is None  # n = 30: Student t suffices


@pytest.mark.parametrize(
    ("score", "grade"),
    [
        (100.0, "A+"),
        (84.1, "A+"),
        (84.0, "A"),
        (80.8, "A"),
        (80.7, "A-"),
        (78.9, "A-"),
        (78.8, "B+"),
        (77.2, "B+"),
        (77.1, "B"),
        (74.1, "B"),
        (74.0, "B-"),
        (72.6, "B-"),
        (72.5, "C+"),
        (71.1, "C+"),
        (71.0, "C"),
        (68.0, "C"),
        (65.0, "C"),
        (64.9, "C-"),
        (62.7, "C-"),
        (62.6, "D"),
        (51.7, "D"),
        (51.6, "F"),
        (0.0, "F"),
    ],
)
def test_sauro_lewis_grade_boundaries(score: float, grade: str) -> None:
    assert sus.grade(score) == grade


def test_percentile_and_adjective() -> None:
    assert sus.percentile(68.0) == pytest.approx(50.0)
    assert sus.percentile(68.0 + 12.5) == pytest.approx(84.134, abs=1e-3)  # one SD above
    assert sus.percentile(84.1) == pytest.approx(90.1, abs=0.1)  # A+ starts near the 90th
    assert [
        sus.adjective(s) for s in (0, 24.9, 25, 38.9, 39, 51.9, 52, 72.9, 73, 84.9, 85, 100)
    ] == [
        "Worst imaginable",
        "Worst imaginable",
        "Poor",
        "Poor",
        "OK",
        "OK",
        "Good",
        "Good",
        "Excellent",
        "Excellent",
        "Best imaginable",
        "Best imaginable",
    ]


def test_subscales() -> None:
    # items 4 and 10 (even: 5 - answer) at 1 -> 4 each: learnability 8 x 12.5 = 100;
    # the other eight neutral (2 each): usability 16 x 3.125 = 50
    got = sus.summarize(np.array([[3, 3, 3, 1, 3, 3, 3, 3, 3, 1]]))
    assert got["learnability"] == 100.0 and got["usability"] == 50.0
    assert got["sd"] is None and got["ci95"] is None and got["alpha"] is None


def test_cronbach_alpha_by_hand() -> None:
    m = np.array([[1, 2, 3], [2, 2, 4], [3, 4, 4], [4, 4, 5]])
    # item variances 5/3, 4/3, 2/3 (sum 11/3); totals 6, 8, 11, 13: variance 29/3
    assert sus.cronbach_alpha(m) == pytest.approx(1.5 * (1 - (11 / 3) / (29 / 3)))
    assert sus.cronbach_alpha(m) == pytest.approx(27 / 29)
    assert sus.cronbach_alpha(np.ones((4, 3))) is None


@pytest.mark.parametrize(
    ("better", "metric", "tails", "alt"),
    [
        ("a", "sus", 1, "greater"),
        ("a", "satisfaction", 1, "greater"),
        ("a", "time", 1, "less"),
        ("a", "failure", 1, "less"),
        ("a", "difficulty", 1, "less"),
        ("b", "sus", 1, "less"),
        ("b", "time", 1, "greater"),
        ("either", "sus", 1, "two-sided"),
        ("a", "sus", 2, "two-sided"),
    ],
)
def test_direction_of_the_hypothesis(better: str, metric: str, tails: int, alt: str) -> None:
    assert stats.alternative(better, metric, tails) == alt


def test_paired_test_against_scipy_and_by_hand() -> None:
    a = np.array([70.0, 65.0, 80.0, 72.5, 60.0, 77.5])
    b = np.array([55.0, 60.0, 62.5, 70.0, 52.5, 65.0])
    got = stats.paired_test(a, b, "greater")
    d = a - b  # 15, 5, 17.5, 2.5, 7.5, 12.5: mean 10, sd sqrt(187.5 / 5)
    sd = math.sqrt(sum((x - 10.0) ** 2 for x in d) / 5)
    assert got["t"] == pytest.approx(10.0 / (sd / math.sqrt(6)))
    assert got["df"] == 5 and got["n"] == 6
    assert got["p"] == pytest.approx(float(sst.ttest_rel(a, b, alternative="greater").pvalue))
    assert got["p"] == pytest.approx(float(sst.t.sf(got["t"], 5)))
    assert got["dz"] == pytest.approx(10.0 / sd)
    lo, hi = got["dz_ci95"]
    t_obs = got["t"]
    # the CI bounds are the noncentralities putting t_obs at the 97.5% and 2.5% points
    assert sst.nct.cdf(t_obs, 5, lo * math.sqrt(6)) == pytest.approx(0.975, abs=1e-6)
    assert sst.nct.cdf(t_obs, 5, hi * math.sqrt(6)) == pytest.approx(0.025, abs=1e-6)
    assert lo < got["dz"] < hi
    # the wrong direction gives the other tail
    assert stats.paired_test(a, b, "less")["p"] == pytest.approx(1 - got["p"])


def test_dz_interval_matches_the_normal_approximation_for_large_n() -> None:
    dz, n = 0.5, 2000
    lo, hi = stats.dz_interval(dz, n) or (0.0, 0.0)
    se = math.sqrt(1 / n + dz**2 / (2 * n))
    assert lo == pytest.approx(dz - 1.96 * se, abs=2e-3)
    assert hi == pytest.approx(dz + 1.96 * se, abs=2e-3)


def test_undefined_tests() -> None:
    one = stats.paired_test(np.array([1.0]), np.array([2.0]), "greater")
    assert one["t"] is None and one["p"] is None and one["df"] is None
    flat = stats.paired_test(np.array([3.0, 4.0]), np.array([2.0, 3.0]), "greater")
    assert flat["p"] is None and flat["df"] == 1  # differences all equal: no variance


def test_holm_by_hand_and_against_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    ps = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 -> max(0.06, 0.04)
    got = stats.correct(ps, "holm", 0.05)
    assert [p for p, _ in got] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [s for _, s in got] == [True, False, False, True]
    for method in ("bonferroni", "fdr_bh"):
        rej, adj, _, _ = multipletests(ps, alpha=0.05, method=method)
        got = stats.correct(ps, method, 0.05)
        assert [p for p, _ in got] == pytest.approx(list(adj))
        assert [s for _, s in got] == list(rej)
    # an untested metric takes no part: Holm over the three that have a p-value
    got = stats.correct([0.01, None, 0.03, 0.005], "holm", 0.05)
    assert got[1] == (None, None)
    assert [got[i][0] for i in (0, 2, 3)] == pytest.approx([0.02, 0.03, 0.015])
    assert stats.correct([0.04, 0.2], "none", 0.05) == [(0.04, True), (0.2, False)]


def test_power_analysis_reproduces_the_seeds_27() -> None:
    d = stats.effect_for(27)  # one-tailed, power 0.8, alpha 0.05
    assert d == pytest.approx(0.4915, abs=1e-3)
    assert stats.n_required(d, 0.05, 0.8, 1) == 27
    assert stats.n_required(0.5, 0.05, 0.8, 1) == 27
    assert stats.n_required(0.49, 0.05, 0.8, 1) == 28
    # the solver's answer is the smallest n with power >= 0.8
    power = TTestPower()
    assert power.power(effect_size=0.5, nobs=27, alpha=0.05, alternative="larger") >= 0.8
    assert power.power(effect_size=0.5, nobs=26, alpha=0.05, alternative="larger") < 0.8
    # two-tailed needs more
    assert stats.n_required(0.5, 0.05, 0.8, 2) == 34
    lo, hi = stats.effect_for(27), stats.effect_for(26)
    assert (
        stats.n_required(hi - 1e-6, 0.05, 0.8, 1) == 27
        and stats.n_required(hi + 1e-4, 0.05, 0.8, 1) == 26
    )
    assert lo < 0.5 < hi
    assert stats.n_required(0.0, 0.05, 0.8, 1) is None


def test_power_for_large_and_small_effects() -> None:
    power = TTestPower()
    for d, n, tails in ((0.5, 27, 1), (0.8, 12, 2), (1.2, 5, 1)):
        alt = "larger" if tails == 1 else "two-sided"
        want = power.power(effect_size=d, nobs=n, alpha=0.05, alternative=alt)
        assert stats.paired_power(d, n, 0.05, tails) == pytest.approx(want, rel=1e-9)
    # large effects, where statsmodels' solver does not converge: 2 or 3 pairs
    assert stats.n_required(10.0, 0.05, 0.8, 1) == 2
    assert stats.n_required(10.0, 0.05, 0.8, 2) == 3
    assert stats.paired_power(10.0, 2, 0.05, 2) < 0.8 <= stats.paired_power(10.0, 3, 0.05, 2)
    # a small effect, beyond the stepped range: statsmodels' solver, the smallest n reaching 0.8
    small = stats.n_required(0.15, 0.05, 0.8, 1)
    assert small is not None and small > stats.SEARCH_UP_TO
    assert (
        stats.paired_power(0.15, small, 0.05, 1)
        >= 0.8
        > stats.paired_power(0.15, small - 1, 0.05, 1)
    )
