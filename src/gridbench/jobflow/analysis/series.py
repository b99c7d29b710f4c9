"""Chart series for one trial (series.json), each at most ``max_points`` points.

Long series are reduced by min/max bucketing: the points are cut into max_points/2
equal buckets and each bucket keeps its lowest and its highest point, in time order, so
peaks and dips survive. Every series object carries ``"downsampled": true|false``.
Times are seconds since the trial start.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
MAX_POINTS = 500
HIST_BINS = 50


def minmax_downsample(t: F64, v: F64, max_points: int = MAX_POINTS) -> tuple[F64, F64, bool]:
    """At most ``max_points`` points keeping each bucket's min and max (NaN values dropped)."""
    ok = np.isfinite(t) & np.isfinite(v)
    t, v = t[ok], v[ok]
    n = t.size
    if n <= max_points:
        return t, v, False
    buckets = max(1, max_points // 2)
    k = math.ceil(n / buckets)
    buckets = math.ceil(n / k)
    pad = buckets * k - n
    grid = np.concatenate([v, np.full(pad, np.nan)]).reshape(buckets, k)
    lo = np.nanargmin(grid, axis=1) + np.arange(buckets) * k
    hi = np.nanargmax(grid, axis=1) + np.arange(buckets) * k
    idx = np.unique(np.concatenate([lo, hi]))  # sorted: time order within and across buckets
    return t[idx], v[idx], True


def series(t: F64, v: F64, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """A ``{"t", "v", "downsampled"}`` series object."""
    ts, vs, down = minmax_downsample(np.asarray(t, float), np.asarray(v, float), max_points)
    return {"t": ts.tolist(), "v": vs.tolist(), "downsampled": down}


def histogram(d: F64, bins: int = HIST_BINS) -> dict[str, Any]:
    """Equal-width histogram of the finite values: ``{"edges", "counts", "downsampled"}``."""
    a = d[np.isfinite(d)]
    if a.size == 0:
        return {"edges": [], "counts": [], "downsampled": False}
    lo, hi = float(a.min()), float(a.max())
    hi = lo + max(hi - lo, 1e-6 * max(1.0, abs(lo)))  # (near-)constant data: one-µs-wide bins
    counts, edges = np.histogram(a, bins=bins, range=(lo, hi))
    return {"edges": edges.tolist(), "counts": counts.tolist(), "downsampled": False}


def time_grid(lo: float, hi: float, max_points: int = MAX_POINTS) -> F64:
    """A uniform grid of at most ``max_points`` times over [lo, hi]."""
    if not hi > lo:
        return np.array([lo], dtype=np.float64)
    return np.linspace(lo, hi, max_points)
