"""Chart series: bounded size, min/max preserved, flags."""

from __future__ import annotations

import numpy as np

from gridbench.jobflow.analysis.series import histogram, minmax_downsample, series


def test_minmax_downsample_keeps_extremes_in_time_order() -> None:
    t = np.arange(10_000, dtype=float)
    v = np.sin(t / 300)
    v[4321] = 7.0  # a spike
    v[777] = -5.0  # a dip
    ts, vs, down = minmax_downsample(t, v, 500)
    assert down and ts.size <= 500
    assert vs.max() == 7.0 and vs.min() == -5.0
    assert np.all(np.diff(ts) > 0)
    assert 4321.0 in ts and 777.0 in ts


def test_short_series_unchanged_and_nan_dropped() -> None:
    s = series(np.array([0.0, 1.0, 2.0]), np.array([1.0, np.nan, 3.0]))
    assert s == {"t": [0.0, 2.0], "v": [1.0, 3.0], "downsampled": False}


def test_histogram_counts_everything() -> None:
    d = np.concatenate([np.linspace(0, 10, 1000), [np.nan]])
    h = histogram(d, bins=10)
    assert sum(h["counts"]) == 1000 and len(h["edges"]) == 11
    assert h["edges"][0] == 0.0 and h["edges"][-1] == 10.0
    flat = histogram(np.full(20, 5.0))
    assert sum(flat["counts"]) == 20
    assert histogram(np.array([]))["counts"] == []
