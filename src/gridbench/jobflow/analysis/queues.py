"""Jobs waiting in each segment over time, derived from the stamps (seed Figure 24).

A job is *in* a segment from the moment it reached the segment's start stage until it
reached its end stage (jobs that never reach the end stay in it). For each segment:
``max`` (largest number in it at once), ``final`` (still in it at the end of the trial)
and ``growth_per_s``: the least-squares slope of the count, sampled on a uniform grid, over
the submission window *as the segment sees it*: shifted by the start stage's median lag
after the intended time, and begun after the warm-up and after the queue had one median
segment latency to fill up (a segment holding jobs for W seconds at rate r holds r*W jobs
without any backlog, Little's law; that fill-up is not growth). A stage that only delays
jobs shows growth ~ 0; a stage that cannot keep up shows growth ~ offered - capacity.

Queues are kept for every declared segment, every adjacent pair of chain stages not
declared as a segment (named ``a->b``) and ``overall`` (first to last chain stage).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.events.chain import StageChain
from gridbench.stats import ols_slope

F64 = NDArray[np.float64]
GROWTH_GRID = 200
_BLOCK = 8192  # starts per block in queue_max (8192 ends: 64 KiB, within L2)


def queue_segments(chain: StageChain) -> list[tuple[str, str, str]]:
    """(name, start stage, end stage) of every queue analysis keeps."""
    out = [(g.name, g.start, g.end) for g in chain.all_segments()]
    pairs = {(s, e) for _, s, e in out}
    names = chain.names()
    for a, b in itertools.pairwise(names):
        if (a, b) not in pairs:
            out.append((f"{a}->{b}", a, b))
    if len(names) >= 2 and (names[0], names[-1]) not in pairs:
        out.append(("overall", names[0], names[-1]))
    return out


def in_queue(starts_sorted: F64, ends_sorted: F64, tau: F64) -> NDArray[np.int64]:
    """Jobs in the queue at each time tau: started by tau minus ended by tau."""
    s = np.searchsorted(starts_sorted, tau, side="right")
    e = np.searchsorted(ends_sorted, tau, side="right")
    return np.asarray(s - e, dtype=np.int64)


def queue_max(starts_sorted: F64, ends_sorted: F64) -> int:
    """The largest queue length: it peaks just after a start, the i-th start (1-based)
    leaving i - #(ends <= it) in the queue."""
    n = starts_sorted.size
    if n == 0:
        return 0
    # By blocks of starts, each searched only in the slice of ends its first and last
    # start bound: a slice that stays in cache, ~1.6x faster than one search over all.
    first = np.arange(0, n, _BLOCK)
    last = np.minimum(first + _BLOCK, n) - 1
    lo_e = np.searchsorted(ends_sorted, starts_sorted[first], side="right").tolist()
    hi_e = np.searchsorted(ends_sorted, starts_sorted[last], side="right").tolist()
    best = 0
    for i, j, a, b in zip(first.tolist(), last.tolist(), lo_e, hi_e, strict=True):
        ended = a + np.searchsorted(ends_sorted[a:b], starts_sorted[i : j + 1], side="right")
        best = max(best, int((np.arange(i + 1, j + 2) - ended).max()))
    return best


def growth_window(
    sub_start: float | None,
    sub_end: float | None,
    warm_start: float | None,
    start_lag: float | None,
    median_latency: float | None,
) -> tuple[float | None, float | None]:
    """[max(warm-up end, sub_start + median latency), sub_end] shifted by the start lag."""
    if sub_start is None or sub_end is None or start_lag is None:
        return None, None
    lo = max(warm_start if warm_start is not None else sub_start, sub_start + (median_latency or 0))
    return lo + start_lag, sub_end + start_lag


def queue_growth(
    starts_sorted: F64, ends_sorted: F64, lo: float | None, hi: float | None
) -> float | None:
    """Slope (jobs/s) of the queue length over [lo, hi] (see :func:`growth_window`)."""
    if lo is None or hi is None or not hi > lo:
        return None
    grid = np.linspace(lo, hi, GROWTH_GRID)
    return ols_slope(grid, in_queue(starts_sorted, ends_sorted, grid).astype(np.float64))


def queue_metrics(
    starts_sorted: F64, ends_sorted: F64, lo: float | None, hi: float | None
) -> dict[str, Any]:
    """The per-segment queue object of metrics.json; growth is measured over [lo, hi]."""
    return {
        "max": queue_max(starts_sorted, ends_sorted),
        "final": int(starts_sorted.size - ends_sorted.size),
        "growth_per_s": queue_growth(starts_sorted, ends_sorted, lo, hi),
    }


def queue_series(starts_sorted: F64, ends_sorted: F64, max_points: int) -> tuple[F64, F64, bool]:
    """The queue length for a chart: exact steps when short, else sampled on a uniform grid
    of ``max_points`` times (the exact maximum is in :func:`queue_metrics`).

    Returns (times, lengths, downsampled).
    """
    size = starts_sorted.size + ends_sorted.size
    if size <= max_points:
        t = np.sort(np.concatenate([starts_sorted, ends_sorted]))
        if size == 0:
            return t, t, False
        return t, in_queue(starts_sorted, ends_sorted, t).astype(np.float64), False
    # both sorted: the ends of the span are their first and last values (no 2n-long copy)
    parts = [a for a in (starts_sorted, ends_sorted) if a.size]
    lo, hi = min(float(a[0]) for a in parts), max(float(a[-1]) for a in parts)
    grid = np.linspace(lo, hi, max_points)
    return grid, in_queue(starts_sorted, ends_sorted, grid).astype(np.float64), True
