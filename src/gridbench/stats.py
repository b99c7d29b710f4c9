"""Descriptive statistics shared by every family (latency, repetition and comparison summaries).

A *stats* object describes one sample of durations (seconds): n, mean, min, max, sample
standard deviation (ddof=1), percentiles p50/p90/p99/p999 (linear interpolation, numpy's
default) and ci95, the Student-t half-width of the 95% confidence interval of the mean.
A *rep* object describes a metric across the trials of one point: n, mean, std, min, max,
ci95. Undefined values (std and ci95 when n < 2, everything when n == 0) are ``None``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gridbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:  # imported on first use: loading a spec (gridbench validate) does not pay for it
    np = lazy_module("numpy")

Stats = dict[str, Any]

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p999", 99.9),
)


def t_halfwidth(std: float, n: int, confidence: float = 0.95) -> float | None:
    """Student-t half-width of the confidence interval of a mean: t(1-a/2, n-1) * s / sqrt(n)."""
    if n < 2 or not math.isfinite(std):
        return None
    from scipy.special import stdtrit  # the t quantile (scipy.stats.t.ppf), cheaper import

    q = float(stdtrit(n - 1, 0.5 + confidence / 2.0))
    return q * std / math.sqrt(n)


def _finite(x: NDArray[np.float64] | list[float]) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    return a[np.isfinite(a)]


def _moments(a: NDArray[np.float64], out: Stats) -> None:
    """Fill ``out``'s mean, min, max and (n >= 2) std and ci95 from a non-empty finite
    sample (the keys are there already: their order is the object's)."""
    out["mean"] = float(a.mean())
    out["min"] = float(a.min())
    out["max"] = float(a.max())
    if a.size >= 2:
        std = float(a.std(ddof=1))
        out["std"] = std
        out["ci95"] = t_halfwidth(std, int(a.size))


def describe(x: NDArray[np.float64] | list[float]) -> Stats:
    """The stats object of a sample (non-finite values are ignored)."""
    a = _finite(x)
    n = int(a.size)
    out: Stats = {"n": n, "mean": None, "min": None, "max": None, "std": None}
    out.update({name: None for name, _ in PERCENTILES})
    out["ci95"] = None
    if n == 0:
        return out
    _moments(a, out)
    # last: ``a`` is our own copy, partitioned in place (the sums above keep their order)
    qs = np.percentile(a, [q for _, q in PERCENTILES], overwrite_input=True)
    for (name, _), v in zip(PERCENTILES, qs, strict=True):
        out[name] = float(v)
    return out


def rep(values: list[float | None] | NDArray[np.float64]) -> Stats:
    """The rep object of one metric across trials (``None`` values are skipped)."""
    a = _finite([np.nan if v is None else float(v) for v in values])
    n = int(a.size)
    out: Stats = {"n": n, "mean": None, "std": None, "min": None, "max": None, "ci95": None}
    if n == 0:
        return out
    _moments(a, out)
    return out


def ols_slope(x: NDArray[np.float64], y: NDArray[np.float64]) -> float | None:
    """Least-squares slope of y on x (``None`` with fewer than 2 distinct x)."""
    if x.size < 2:
        return None
    xm = x - x.mean()
    sxx = float(np.dot(xm, xm))
    if sxx <= 0.0:
        return None
    return float(np.dot(xm, y - y.mean()) / sxx)


def capped(
    x: NDArray[np.float64], groups: NDArray[np.int64], cap: int | None, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """At most ``cap`` of the finite values of ``x`` (and their groups): a seeded uniform
    sample without replacement."""
    ok = np.isfinite(x)
    x, groups = x[ok], groups[ok]
    if cap is None or x.size <= cap:
        return x, groups
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(x.size, size=cap, replace=False))
    return x[idx], groups[idx]
