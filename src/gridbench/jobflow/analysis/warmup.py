"""Warm-up trimming: which leading part of a trial is left out of the averages.

Two rules:

- ``fraction`` (default, the seed's rule): drop the first ``fraction`` (0.15) of the jobs.
- ``steady_state``: cut the trial's last-stage passages (job completions) into windows;
  the warm-up ends at the first window whose completion rate is within 10% of the median
  window rate. The jobs that completed before it give the fraction, which is then used
  exactly like the ``fraction`` rule (capped at 50%; when no window qualifies the default
  fraction is used and a note says so).

Either way the result is a fraction, so the EDGI average keeps its exact definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

DEFAULT_FRACTION = 0.15
STEADY_TOLERANCE = 0.10
MAX_STEADY_FRACTION = 0.5


@dataclass(frozen=True, slots=True)
class Warmup:
    """The warm-up applied to one trial."""

    method: str
    fraction: float
    trimmed_jobs: int  # scheduled jobs in the warm-up
    start_s: float | None  # schedule time where the steady part starts (s since origin)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "method": self.method,
            "fraction": self.fraction,
            "trimmed_jobs": self.trimmed_jobs,
        }
        if self.note:
            d["note"] = self.note
        return d


def trimmed_count(n: int, fraction: float) -> int:
    """floor(fraction * n): the seed's number of warm-up jobs."""
    return min(n, math.floor(fraction * n + 1e-9))


def _warmup(method: str, fraction: float, sched: NDArray[np.float64], note: str | None) -> Warmup:
    k = trimmed_count(sched.size, fraction)
    start = float(sched[min(k, sched.size - 1)]) if sched.size else None
    return Warmup(method, fraction, k, start, note)


def fraction_warmup(sched_sorted: NDArray[np.float64], fraction: float) -> Warmup:
    """Drop the first ``fraction`` of the scheduled jobs."""
    return _warmup("fraction", fraction, sched_sorted, None)


def steady_state_fraction(done_sorted: NDArray[np.float64], window_s: float) -> float | None:
    """Fraction of completions before the completion rate first reaches its median +-10%."""
    n = done_sorted.size
    if n < 10 or window_s <= 0:
        return None
    lo, hi = float(done_sorted[0]), float(done_sorted[-1])
    nbins = max(1, math.ceil((hi - lo) / window_s))
    if nbins < 3:
        return None
    counts, edges = np.histogram(done_sorted, bins=nbins, range=(lo, lo + nbins * window_s))
    rates = counts / window_s
    med = float(np.median(rates))
    if med <= 0:
        return None
    ok = np.flatnonzero(np.abs(rates - med) <= STEADY_TOLERANCE * med)
    if ok.size == 0:
        return None
    before = int(np.searchsorted(done_sorted, edges[ok[0]], side="left"))
    return before / n


def steady_state_warmup(
    sched_sorted: NDArray[np.float64],
    done_sorted: NDArray[np.float64],
    window_s: float,
    default_fraction: float = DEFAULT_FRACTION,
) -> Warmup:
    """The ``steady_state`` rule (see the module docstring)."""
    f = steady_state_fraction(done_sorted, window_s)
    if f is None:
        fallback = (
            f"no steady completion rate found; used the default fraction {default_fraction:g}"
        )
        return _warmup("steady_state", default_fraction, sched_sorted, fallback)
    if f > MAX_STEADY_FRACTION:
        capped = f"steady state reached only after {f:.0%} of the jobs; capped at 50%"
        return _warmup("steady_state", MAX_STEADY_FRACTION, sched_sorted, capped)
    return _warmup("steady_state", f, sched_sorted, None)
