"""The System Usability Scale (Brooke 1996): scores, and what a tool's scores say.

Pure functions over arrays of item answers (one row per response, items 1..10 as given,
1-5). The interpretations, each from one published table:

- **Grade**: the Sauro-Lewis curved grading scale (Sauro & Lewis, *Quantifying the User
  Experience*, 2nd ed. 2016, Table 8.5), A+ 84.1-100 ... F 0-51.6. A mean between two
  published bands (e.g. 84.05) takes the lower grade: each band's lower bound is inclusive.
- **Percentile rank**: the share of products scoring lower, assuming SUS means are normal
  with mean 68 and SD 12.5 (Sauro's benchmark of ~500 studies, *A Practical Guide to the
  System Usability Scale*, 2011), so 68 is the 50th percentile. The real distribution is
  slightly skewed; the normal model is within a few points of Sauro's table.
- **Adjective**: Bangor, Kortum & Miller (2009), "Determining what individual SUS scores
  mean: adding an adjective rating scale", JUS 4(3) 114-123, as the score ranges usually
  drawn from their Figure 4: Worst imaginable < 25, Poor 25-39, OK 39-52, Good 52-73,
  Excellent 73-85, Best imaginable >= 85 (lower bounds inclusive).
- **Subscales** (Lewis & Sauro 2009, "The factor structure of the System Usability
  Scale"): learnability = items 4 and 10, usability = the other eight, each scaled to
  0-100 (learnability x 12.5, usability x 3.125).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats as sst

from gridbench.stats import t_halfwidth

#: (lower bound inclusive, grade), highest first.
GRADES: tuple[tuple[float, str], ...] = (
    (84.1, "A+"),
    (80.8, "A"),
    (78.9, "A-"),
    (77.2, "B+"),
    (74.1, "B"),
    (72.6, "B-"),
    (71.1, "C+"),
    (65.0, "C"),
    (62.7, "C-"),
    (51.7, "D"),
    (0.0, "F"),
)
#: (lower bound inclusive, adjective), highest first (Bangor, Kortum & Miller 2009).
ADJECTIVES: tuple[tuple[float, str], ...] = (
    (85.0, "Best imaginable"),
    (73.0, "Excellent"),
    (52.0, "Good"),
    (39.0, "OK"),
    (25.0, "Poor"),
    (0.0, "Worst imaginable"),
)
BENCHMARK_MEAN = 68.0
BENCHMARK_SD = 12.5
#: Below this many responses the BCa bootstrap interval is given beside Student's.
BCA_BELOW = 30
#: 0-based columns of the learnability items (4 and 10).
LEARNABILITY = (3, 9)
USABILITY = (0, 1, 2, 4, 5, 6, 7, 8)


def item_scores(items: NDArray[Any]) -> NDArray[np.float64]:
    """Each item's contribution, 0-4: odd items (1, 3, ...) score - 1, even items 5 - score."""
    a = np.asarray(items, dtype=np.float64).reshape(-1, 10)
    out = a - 1.0
    out[:, 1::2] = 5.0 - a[:, 1::2]
    return out


def sus_scores(items: NDArray[Any]) -> NDArray[np.float64]:
    """The SUS of each response: 2.5 x the sum of the item contributions (0-100)."""
    scores: NDArray[np.float64] = 2.5 * item_scores(items).sum(axis=1)
    return scores


def grade(score: float) -> str:
    """The Sauro-Lewis curved grade of a SUS score (A+ ... F)."""
    return next(g for lo, g in GRADES if score >= lo)


def adjective(score: float) -> str:
    """The Bangor adjective rating of a SUS score."""
    return next(a for lo, a in ADJECTIVES if score >= lo)


def percentile(score: float) -> float:
    """The percentile rank of a SUS score against the benchmark (68 is the 50th)."""
    return float(100.0 * sst.norm.cdf((score - BENCHMARK_MEAN) / BENCHMARK_SD))


def cronbach_alpha(scores: NDArray[Any]) -> float | None:
    """Cronbach's alpha of the item scores (rows = responses, columns = items):
    k / (k - 1) x (1 - sum of item variances / variance of the total), sample variances.
    None when it is undefined (fewer than 2 responses, or totals all equal)."""
    a = np.asarray(scores, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 2:
        return None
    total_var = float(np.var(a.sum(axis=1), ddof=1))
    if total_var == 0.0:
        return None
    k = a.shape[1]
    return float(k / (k - 1) * (1.0 - float(np.var(a, axis=0, ddof=1).sum()) / total_var))


def t_interval(x: NDArray[np.float64]) -> tuple[float, float] | None:
    """Student-t 95% interval of the mean (None below 2 values)."""
    h = t_halfwidth(float(np.std(x, ddof=1)), len(x)) if len(x) >= 2 else None
    if h is None:
        return None
    m = float(np.mean(x))
    return (m - h, m + h)


def bca_interval(
    x: NDArray[np.float64], resamples: int, seed: int
) -> tuple[tuple[float, float] | None, str | None]:
    """The BCa bootstrap 95% interval of the mean (scipy.stats.bootstrap, seeded), and
    why there is none when it cannot be computed (fewer than 3 values, all equal)."""
    if len(x) < 3:
        return None, f"BCa needs at least 3 scores (have {len(x)})"
    if float(np.ptp(x)) == 0.0:
        return None, "BCa undefined: every score is the same"
    with warnings.catch_warnings():
        # a degenerate resample distribution warns and gives NaN: reported as "none" below
        warnings.simplefilter("ignore")
        res = sst.bootstrap(
            (x,),
            np.mean,
            n_resamples=resamples,
            confidence_level=0.95,
            method="BCa",
            rng=np.random.default_rng(seed),
        )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None, "BCa undefined for these scores (degenerate bootstrap distribution)"
    return (lo, hi), None


def _mean(x: NDArray[np.float64]) -> float | None:
    return float(np.mean(x)) if len(x) else None


def summarize(items: NDArray[Any], resamples: int = 9999, seed: int = 0) -> dict[str, Any]:
    """One tool's SUS from its responses' item answers (n x 10): mean, sd, n, the
    Student-t 95% CI, the BCa CI when n < 30, grade, percentile and adjective of the
    mean, the learnability and usability subscales (means), Cronbach's alpha and the
    per-response scores."""
    a = np.asarray(items, dtype=np.float64).reshape(-1, 10)
    contrib = item_scores(a)
    scores = 2.5 * contrib.sum(axis=1)
    n = len(scores)
    mean = _mean(scores)
    ci = t_interval(scores)
    bca, why = bca_interval(scores, resamples, seed) if n < BCA_BELOW else (None, None)
    return {
        "mean": mean,
        "sd": float(np.std(scores, ddof=1)) if n >= 2 else None,
        "n": n,
        "ci95": list(ci) if ci else None,
        "ci95_bca": list(bca) if bca else None,
        "bca_note": why,
        "grade": grade(mean) if mean is not None else None,
        "percentile": percentile(mean) if mean is not None else None,
        "adjective": adjective(mean) if mean is not None else None,
        "usability": _mean(3.125 * contrib[:, list(USABILITY)].sum(axis=1)),
        "learnability": _mean(12.5 * contrib[:, list(LEARNABILITY)].sum(axis=1)),
        "alpha": cronbach_alpha(contrib),
        "scores": [float(s) for s in scores],
    }
