"""Fitting durations to distributions (goodness of fit by Kolmogorov-Smirnov) and drawing
from them in blocks (one numpy call per 4,096 draws, not one per job)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from gridbench.model.spec import Duration, Fit

F64 = NDArray[np.float64]
Draw = Callable[[], float]
_BLOCK = 4096
#: below this cv a duration is called fixed (timer and stamp jitter, not variation)
FIXED_CV = 0.02


def _frozen(dist: str, mean: float, cv: float) -> stats.rv_continuous | None:
    if dist == "exponential":
        return stats.expon(scale=mean)
    if dist == "lognormal" and cv > 0:
        s2 = math.log1p(cv * cv)
        return stats.lognorm(s=math.sqrt(s2), scale=math.exp(math.log(mean) - s2 / 2))
    if dist == "gamma" and cv > 0:
        k = 1.0 / (cv * cv)
        return stats.gamma(a=k, scale=mean / k)
    return None


def fit_duration(samples: F64) -> Duration:
    """The best of fixed, exponential, lognormal and gamma (moments) by KS distance."""
    x = samples[np.isfinite(samples)]
    x = np.clip(x, 0.0, None)
    n = int(x.size)
    if n == 0:
        return Duration(dist="fixed", mean=0.0, fit=Fit(n=0))
    mean = float(x.mean())
    cv = float(x.std() / mean) if mean > 0 else 0.0
    if n < 5 or mean <= 0 or cv < FIXED_CV:
        return Duration(dist="fixed", mean=mean, fit=Fit(n=n))
    tried: dict[str, float] = {}
    best: tuple[float, str, float] = (2.0, "fixed", 1.0)
    for dist in ("exponential", "lognormal", "gamma"):
        frozen = _frozen(dist, mean, cv)
        assert frozen is not None
        res = stats.kstest(np.maximum(x, 1e-9), frozen.cdf)
        tried[dist] = round(float(res.statistic), 4)
        if res.statistic < best[0]:
            best = (float(res.statistic), dist, float(res.pvalue))
    d, dist, p = best
    return Duration(
        dist=dist,  # type: ignore[arg-type]
        mean=mean,
        cv=1.0 if dist == "exponential" else round(cv, 4),
        fit=Fit(n=n, ks_d=round(d, 4), ks_p=round(p, 4), tried=tried),
    )


def _block(d: Duration, rng: np.random.Generator) -> F64:
    if d.dist == "fixed" or d.mean == 0.0 or (d.dist != "exponential" and d.cv == 0.0):
        return np.full(_BLOCK, d.mean)
    if d.dist == "exponential":
        return rng.exponential(d.mean, _BLOCK)
    if d.dist == "lognormal":
        s2 = math.log1p(d.cv * d.cv)
        return rng.lognormal(math.log(d.mean) - s2 / 2, math.sqrt(s2), _BLOCK)
    k = 1.0 / (d.cv * d.cv)
    return rng.gamma(k, d.mean / k, _BLOCK)


def sampler(d: Duration, rng: np.random.Generator) -> Draw:
    """A zero-argument draw of ``d``; a fixed duration costs no random numbers."""
    if d.dist == "fixed" or d.mean == 0.0:
        value = d.mean
        return lambda: value
    buf: list[float] = []

    def draw() -> float:
        if not buf:
            buf.extend(_block(d, rng).tolist())
        return buf.pop()

    return draw


def perturbed(d: Duration, rng: np.random.Generator) -> Duration:
    """``d`` with its mean and cv drawn from their sampling distributions (the fit's
    uncertainty): the standard error of a mean of ``n`` samples is ``mean·cv/√n``, that of
    a cv about ``cv·√((1 + 2·cv²) / 2n)``. An exponential keeps cv 1 (its shape)."""
    n = d.fit.n if d.fit is not None else 0
    if n < 2 or d.mean == 0.0:
        return d
    se = d.cv / math.sqrt(n)
    update = {"mean": d.mean * float(np.exp(rng.normal(0.0, se)))}
    if d.dist in ("lognormal", "gamma") and d.cv > 0:
        rel = math.sqrt((1.0 + 2.0 * d.cv * d.cv) / (2.0 * n))
        update["cv"] = min(d.cv * float(np.exp(rng.normal(0.0, rel))), 20.0)
    return d.model_copy(update=update)
