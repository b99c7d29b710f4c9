"""Two-sample tests and the multiple-comparison correction (NaN-safe, on scipy).

Each test returns ``(statistic, p_value)`` or ``None`` when it cannot be computed (too
few values, no variance); the caller reports why.

Per-job samples are *clustered* by trial: jobs of one trial share its conditions (the
phase of a polling loop, the background load), so pooling them as if independent would
call trial-to-trial noise significant. The clustered tests shrink each sample to its
effective size ``n / deff`` with Kish's design effect ``deff = 1 + (m - 1) * ICC``, where
``m`` is the (ANOVA-adjusted) mean trial size and ICC the one-way ANOVA intra-class
correlation of the values (of their ranks for Mann-Whitney), clipped to [0, 1]; and the
degrees of freedom are capped at (trials - 2), the information the trials really carry.
With one trial per side the ICC cannot be estimated: deff is 1 and the df are not capped.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.special import ndtr, stdtr

# down-sampling is shared with the families that load samples (core)
from gridbench.stats import capped as capped
from gridbench.swept import Test

F64 = NDArray[np.float64]
TestResult = tuple[float, float] | None

# the tests a family's figure can ask for (gridbench.swept.Test)
WELCH: Test = "welch-t"
MANN_WHITNEY = "mann-whitney-u"
WELCH_CLUSTERED: Test = "welch-t-clustered"
MWU_CLUSTERED: Test = "mann-whitney-u-clustered"
FISHER: Test = "fisher-exact"


def _finite(x: F64) -> F64:
    return x[np.isfinite(x)]


def _ok(stat: float, p: float) -> TestResult:
    return (float(stat), float(p)) if math.isfinite(p) else None


I64 = NDArray[np.int64]


def design_effect(x: F64, groups: I64) -> float:
    """Kish's design effect of ``x`` clustered by ``groups`` (>= 1; 1 with one group)."""
    _, g = np.unique(groups, return_inverse=True)
    k = int(g.max()) + 1 if g.size else 0
    n = int(x.size)
    if k < 2 or n <= k:
        return 1.0
    counts = np.bincount(g, minlength=k).astype(np.float64)
    means = np.bincount(g, weights=x, minlength=k) / counts
    grand = float(x.mean())
    msb = float(np.sum(counts * (means - grand) ** 2)) / (k - 1)
    msw = float(np.sum((x - means[g]) ** 2)) / (n - k)
    m0 = (n - float(np.sum(counts**2)) / n) / (k - 1)
    denom = msb + (m0 - 1.0) * msw
    if denom <= 0.0:
        return 1.0
    icc = min(1.0, max(0.0, (msb - msw) / denom))
    return 1.0 + (m0 - 1.0) * icc


def _cluster_df(ga: I64, gb: I64) -> float:
    """Degrees of freedom left by clustering: trials - 2 when both samples have 2+ trials
    (few trials cannot support a normal approximation), else unlimited."""
    ka, kb = np.unique(ga).size, np.unique(gb).size
    return float(ka + kb - 2) if ka >= 2 and kb >= 2 else math.inf


def welch_clustered(a: F64, ga: I64, b: F64, gb: I64) -> TestResult:
    """Welch's t-test of the means with each sample's size cut to n / design effect."""
    if a.size < 2 or b.size < 2:
        return None
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    if va == 0.0 and vb == 0.0:
        return (0.0, 1.0) if float(a[0]) == float(b[0]) else None
    na = max(a.size / design_effect(a, ga), 2.0)
    nb = max(b.size / design_effect(b, gb), 2.0)
    sa, sb = va / na, vb / nb
    t = (float(a.mean()) - float(b.mean())) / math.sqrt(sa + sb)
    df = min((sa + sb) ** 2 / (sa**2 / (na - 1.0) + sb**2 / (nb - 1.0)), _cluster_df(ga, gb))
    return _ok(t, float(2.0 * stdtr(df, -abs(t))))


def mann_whitney_clustered(a: F64, ga: I64, b: F64, gb: I64) -> TestResult:
    """The Mann-Whitney U test (normal approximation, tie-corrected) with its z-score
    divided by the square root of the size-weighted design effect of the ranks."""
    if a.size < 2 or b.size < 2:
        return None
    ranks = stats.rankdata(np.concatenate([a, b]))
    ra, rb = ranks[: a.size], ranks[a.size :]
    deff = (a.size * design_effect(ra, ga) + b.size * design_effect(rb, gb)) / (a.size + b.size)
    n1, n2 = float(a.size), float(b.size)
    u = float(ra.sum()) - n1 * (n1 + 1.0) / 2.0
    _, tie_counts = np.unique(ranks, return_counts=True)
    n = n1 + n2
    tie = float(np.sum(tie_counts.astype(np.float64) ** 3 - tie_counts)) / (n * (n - 1.0))
    var = n1 * n2 / 12.0 * ((n + 1.0) - tie)
    if var <= 0.0:
        return (u, 1.0)
    z = (u - n1 * n2 / 2.0) / math.sqrt(var * deff)
    df = _cluster_df(ga, gb)
    p = 2.0 * (stdtr(df, -abs(z)) if math.isfinite(df) else ndtr(-abs(z)))
    return _ok(u, float(p))


def welch(a: F64, b: F64) -> TestResult:
    """Welch's unequal-variance t-test of the means (two-sided); needs 2+ values each.

    Two constant samples give p = 1 when equal and ``None`` when not (no variance to
    judge the difference by). Computed directly (scipy's wrapper costs ~3 ms a call).
    """
    a, b = _finite(a), _finite(b)
    if a.size < 2 or b.size < 2:
        return None
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    if va == 0.0 and vb == 0.0:
        return (0.0, 1.0) if float(a[0]) == float(b[0]) else None
    t = (float(a.mean()) - float(b.mean())) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return _ok(t, float(2.0 * stdtr(df, -abs(t))))


def mann_whitney(a: F64, b: F64) -> TestResult:
    """The Mann-Whitney U test (two-sided); exact for small samples, else asymptotic."""
    a, b = _finite(a), _finite(b)
    if a.size < 2 or b.size < 2:
        return None
    res = stats.mannwhitneyu(a, b, alternative="two-sided")
    return _ok(float(res.statistic), float(res.pvalue))


def fisher(failed_a: int, total_a: int, failed_b: int, total_b: int) -> TestResult:
    """Fisher's exact test of two failure proportions (odds ratio, p); needs jobs in both."""
    if total_a <= 0 or total_b <= 0:
        return None
    if failed_a == 0 and failed_b == 0:
        return (1.0, 1.0)
    table = [[failed_a, total_a - failed_a], [failed_b, total_b - failed_b]]
    res = stats.fisher_exact(table, alternative="two-sided")
    return _ok(float(res.statistic), float(res.pvalue))


def benjamini_hochberg(p: F64) -> F64:
    """BH-adjusted p-values (false discovery rate); NaN entries stay NaN and do not count."""
    out = np.full(p.shape, np.nan, dtype=np.float64)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(np.clip(p[ok], 0.0, 1.0), method="bh")
    return out
