"""The fast numeric paths of a trial's analysis give exactly what the plain numpy
formulas give (the values of metrics.json and series.json must not move)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from gridbench.jobflow.analysis.latency import median
from gridbench.jobflow.analysis.passages import Passages, schedule_sorted
from gridbench.jobflow.analysis.queues import in_queue, queue_max, queue_series
from gridbench.jobflow.analysis.series import minmax_downsample
from gridbench.jobflow.analysis.throughput import edgi_average, punctual, sorted_finite
from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.analysis.workers import pmap
from gridbench.jobflow.events.model import STAGE_INTENDED
from gridbench.stats import PERCENTILES, describe

F64 = NDArray[np.float64]
SEEDS = range(6)


def _sample(rng: np.random.Generator, n: int, nan_share: float = 0.1) -> F64:
    """Coarse values (many ties) with NaN and inf sprinkled in."""
    a = np.round(rng.exponential(3.0, n), 1)
    a[rng.random(n) < nan_share] = np.nan
    if n:
        a[rng.integers(0, n)] = np.inf
    return a


def _queue_max_ref(s: F64, e: F64) -> int:
    if s.size == 0:
        return 0
    return max(0, int((np.arange(1, s.size + 1) - np.searchsorted(e, s, side="right")).max()))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 7, 8191, 8192, 8193, 30_000])
def test_queue_max_matches_one_search_over_all_ends(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    s = np.sort(np.round(rng.uniform(0, 100, n), 1))  # ties within and across the arrays
    e = np.sort(np.round(s + rng.exponential(5.0 if seed % 2 else 0.01, n), 1))[: n - n // 7]
    if seed == 5:
        e = np.sort(np.round(rng.uniform(-50, 50, n), 1))  # ends before starts too
    assert queue_max(s, e) == _queue_max_ref(s, e)
    assert queue_max(s, np.empty(0)) == s.size


def test_queue_series_spans_both_arrays() -> None:
    s = np.arange(0.0, 2000.0)
    e = np.arange(-5.0, 2100.0)[:1500]
    t, v, down = queue_series(s, e, 500)
    both = np.concatenate([s, e])
    assert down and t.tolist() == np.linspace(both.min(), both.max(), 500).tolist()
    assert v.tolist() == in_queue(s, e, t).astype(np.float64).tolist()
    assert queue_series(s, np.empty(0), 100)[0].tolist() == np.linspace(0, 1999, 100).tolist()
    empty = queue_series(np.empty(0), np.empty(0), 100)
    assert empty[0].size == 0 and empty[1].size == 0 and empty[2] is False


def _downsample_ref(t: F64, v: F64, max_points: int) -> tuple[F64, F64, bool]:
    """The padded version minmax_downsample had before (every bucket through nanarg*)."""
    ok = np.isfinite(t) & np.isfinite(v)
    t, v = t[ok], v[ok]
    n = t.size
    if n <= max_points:
        return t, v, False
    buckets = max(1, max_points // 2)
    k = math.ceil(n / buckets)
    buckets = math.ceil(n / k)
    grid = np.concatenate([v, np.full(buckets * k - n, np.nan)]).reshape(buckets, k)
    lo = np.nanargmin(grid, axis=1) + np.arange(buckets) * k
    hi = np.nanargmax(grid, axis=1) + np.arange(buckets) * k
    idx = np.unique(np.concatenate([lo, hi]))
    return t[idx], v[idx], True


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 10, 500, 501, 1000, 1001, 9999, 20_000])
def test_minmax_downsample_matches_the_padded_buckets(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 100, n))
    v = np.round(rng.normal(0, 1, n), 1)  # ties: the first of equal extremes is kept
    if seed % 2:
        v[rng.random(n) < 0.05] = np.nan
    for mp in (500, 7, 2):
        got, ref = minmax_downsample(t, v, mp), _downsample_ref(t, v, mp)
        assert got[2] == ref[2]
        assert got[0].tolist() == ref[0].tolist() and got[1].tolist() == ref[1].tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_punctual_and_edgi_average_match_the_formulas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 50, 5000))
    t0 = float(t[100])  # the first 101 passages are not after t0: NaN
    n = np.arange(1, t.size + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.where(t - t0 > 0, n / (t - t0), np.nan)
    p = punctual(t, t0)
    np.testing.assert_array_equal(p, ref)
    for f in (0.0, 0.01, 0.15, 0.5):
        tail = ref[math.floor(f * ref.size + 1e-9) :]
        assert edgi_average(p, f) == float(tail[np.isfinite(tail)].mean())
    clean = punctual(t, -1.0)  # all finite: the tail is averaged without a copy
    assert edgi_average(clean, 0.15) == float(clean[750:].mean())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 100_001])
def test_describe_and_median_match_numpy(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = _sample(rng, n)
    before = x.copy()
    a = x[np.isfinite(x)]
    d, m = describe(x), median(x)
    np.testing.assert_array_equal(x, before)  # the caller's array is not partitioned
    if a.size == 0:
        assert d["n"] == 0 and d["p50"] is None and m is None
        return
    qs = np.percentile(a, [q for _, q in PERCENTILES])
    assert [d[name] for name, _ in PERCENTILES] == qs.tolist()
    assert m == float(np.median(a)) == d["p50"]
    assert (d["n"], d["mean"], d["min"], d["max"]) == (a.size, a.mean(), a.min(), a.max())
    assert d["std"] == (float(a.std(ddof=1)) if a.size >= 2 else None)


def test_sorted_finite_leaves_its_input() -> None:
    x = _sample(np.random.default_rng(1), 1000)
    before = x.copy()
    assert sorted_finite(x).tolist() == np.sort(x[np.isfinite(x)]).tolist()
    np.testing.assert_array_equal(x, before)


def _jt(intended: F64, first: F64) -> JobTimes:
    return JobTimes(0, {STAGE_INTENDED: intended, "submit": first},
                    np.full(intended.size, -1, dtype=np.int16), (), {})  # fmt: skip


def test_schedule_sorted_shares_the_intended_sort_only_when_equal() -> None:
    rng = np.random.default_rng(2)
    intended = rng.uniform(0, 10, 100)
    first = intended + 0.5
    first[3] = np.nan
    ps = Passages(_jt(intended, first))
    sched = np.where(np.isfinite(intended), intended, first)
    assert schedule_sorted(ps, sched, ["submit"]) is ps(STAGE_INTENDED)
    missing = intended.copy()
    missing[[5, 7]] = np.nan  # these jobs fall back to their first chain stage
    ps = Passages(_jt(missing, first))
    sched = np.where(np.isfinite(missing), missing, first)
    got = schedule_sorted(ps, sched, ["submit"])
    assert got.tolist() == np.sort(sched[np.isfinite(sched)]).tolist() and got.size == 100


def test_pmap_keeps_item_order_and_raises() -> None:
    def square(i: int) -> int:
        return i * i

    assert pmap(square, range(50)) == [i * i for i in range(50)]
    assert pmap(square, []) == [] and pmap(square, [3]) == [9]

    def boom(i: int) -> int:
        if i == 3:
            raise ValueError("item 3")
        return i

    with pytest.raises(ValueError, match="item 3"):
        pmap(boom, range(6))
