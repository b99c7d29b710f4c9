"""Chart series for one trial (series.json), each at most ``max_points`` points.

Long series are reduced by min/max bucketing: the points are cut into max_points/2
equal buckets and each bucket keeps its lowest and its highest point, in time order, so
peaks and dips survive. Every series object carries ``"downsampled": true|false``.
Times are seconds since the trial start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the down-sampler is core (the dashboard caps any family's lines with it); named here too
from gridbench.plotting import F64 as F64
from gridbench.plotting import MAX_POINTS as MAX_POINTS
from gridbench.plotting import minmax_downsample as minmax_downsample

HIST_BINS = 50


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
