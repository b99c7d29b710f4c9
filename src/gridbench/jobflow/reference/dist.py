"""Samplers for :class:`~gridbench.jobflow.reference.config.Dist` durations (numpy Generator)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gridbench.jobflow.reference.config import Dist

Sampler = Callable[[], float]


def make_sampler(dist: Dist, rng: np.random.Generator) -> Sampler:
    """Return a zero-argument function drawing one duration (seconds, >= 0) from ``dist``."""
    lo = dist.min if dist.min is not None else 0.0
    hi = dist.max if dist.max is not None else math.inf

    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    mean = dist.mean
    if dist.dist == "fixed" or (mean == 0.0 and dist.dist != "uniform"):
        value = clip(mean)
        return lambda: value
    if dist.dist == "exponential":
        return lambda: clip(float(rng.exponential(mean)))
    if dist.dist == "lognormal":
        if dist.cv == 0.0:
            value = clip(mean)
            return lambda: value
        # Parameters of the underlying normal so that the lognormal has this mean and cv.
        sigma2 = math.log1p(dist.cv * dist.cv)
        mu = math.log(mean) - sigma2 / 2.0
        sigma = math.sqrt(sigma2)
        return lambda: clip(float(rng.lognormal(mu, sigma)))
    # uniform
    if dist.min is not None and dist.max is not None:
        a, b = dist.min, dist.max
    else:
        half = mean * dist.cv * math.sqrt(3.0)
        a, b = max(mean - half, 0.0), mean + half
    return lambda: clip(float(rng.uniform(a, b)))
