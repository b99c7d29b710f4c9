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
    if t.size <= max_points or not ok.all():  # long and all finite: no copy needed
        t, v = t[ok], v[ok]
    n = t.size
    if n <= max_points:
        return t, v, False
    buckets = max(1, max_points // 2)
    k = math.ceil(n / buckets)
    buckets = math.ceil(n / k)
    # full buckets as a view; the short last one apart (no NaN padding, no nanarg* copies)
    full = n // k
    rows = v[: full * k].reshape(full, k)
    starts = np.arange(buckets) * k
    lo = np.empty(buckets, dtype=np.intp)
    hi = np.empty(buckets, dtype=np.intp)
    lo[:full] = np.argmin(rows, axis=1)
    hi[:full] = np.argmax(rows, axis=1)
    if full < buckets:
        lo[full] = np.argmin(v[full * k :])
        hi[full] = np.argmax(v[full * k :])
    idx = np.unique(np.concatenate([lo + starts, hi + starts]))  # sorted: time order
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
