"""Throughput of each stage: the seed's punctual and average throughput, steady and windowed.

EDGI (METHODS 1.3), exactly: for a stage with sorted passage times t_1 <= ... <= t_N and
t0 = the earliest time any job of the trial reached the upstream stage,

- punctual throughput  P_n = n / (t_n - t0)   (undefined where t_n <= t0);
- average throughput   = mean of P_n for n = floor(f*N)+1 .. N, f the warm-up fraction.

Only jobs that **completed** a stage pass it: a job reported failing there (an EDGI
``job_status`` of ``error``, the client seeing it failed) is counted under ``failures``,
beside the throughput, and not in P_n (the seed's "completed / (T6 - min T5)").

The upstream of a chain stage is the previous chain stage (of the first one, ``intended``).
``overall`` is the last chain stage measured from the first chain stage (the seed's
completed / (T8 - min(T1))).

The EDGI average mixes rate with latency (a stage that only delays jobs by L loses about
L/(duration+L)). ``steady`` removes that: it is the least-squares slope of the cumulative
passage count against time over the steady window [t_w + lag, t_end + lag], where t_w is
the end of the warm-up on the submission schedule, t_end the last intended submission and
lag the stage's median delay after the intended time. A stage that only delays keeps
steady = offered rate; a stage that cannot keep up passes jobs at its capacity all through
that window, so steady < offered.

Windowed throughput (ClusterLoader2-style): passages in the sliding window (tau - w, tau]
divided by w, default w = max(1 s, trial duration / 30).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.analysis.warmup import Warmup, trimmed_count
from gridbench.stats import ols_slope

F64 = NDArray[np.float64]


def sorted_finite(t: F64) -> F64:
    """The finite values of ``t``, sorted."""
    a = t[np.isfinite(t)]  # a fresh copy: sorted in place (np.sort would copy it again)
    a.sort()
    return a


def punctual(times_sorted: F64, t0: float) -> F64:
    """P_n = n / (t_n - t0) for n = 1..N (NaN where t_n <= t0)."""
    dt = times_sorted - t0
    p = np.arange(1, times_sorted.size + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(p, dt, out=p)  # in place: one array per job and stage, not three
    p[~(dt > 0)] = np.nan
    return p


def edgi_average(p: F64, fraction: float) -> float | None:
    """Mean of P_n for n = floor(fraction*N)+1 .. N (the seed's average throughput)."""
    k = trimmed_count(p.size, fraction)
    tail = p[k:]
    ok = np.isfinite(tail)
    if not ok.all():  # copy only when something must be dropped (same values, same sum)
        tail = tail[ok]
    return float(tail.mean()) if tail.size else None


def steady_rate(times_sorted: F64, lo: float, hi: float) -> float | None:
    """Slope of the cumulative passage count against time over [lo, hi] (jobs/s)."""
    if not hi > lo:
        return None
    a = int(np.searchsorted(times_sorted, lo, side="left"))
    b = int(np.searchsorted(times_sorted, hi, side="right"))
    if b - a < 3:
        return None
    x = times_sorted[a:b]
    y = np.arange(a + 1, b + 1, dtype=np.float64)
    return ols_slope(x, y)


def windowed_rate(times_sorted: F64, grid: F64, window_s: float) -> F64:
    """Passages in (tau - w, tau] / w at every grid time tau."""
    hi = np.searchsorted(times_sorted, grid, side="right")
    lo = np.searchsorted(times_sorted, grid - window_s, side="right")
    return np.asarray((hi - lo) / window_s, dtype=np.float64)


def default_window(duration_s: float) -> float:
    """max(1 s, duration / 30)."""
    return max(1.0, duration_s / 30.0)


@dataclass(frozen=True)
class StageFlow:
    """The sorted passages of one stage and what its throughput is measured against."""

    stage: str
    times: F64  # sorted times of the jobs that completed the stage (s since origin)
    upstream: str | None
    t0: float | None  # earliest upstream time
    lag: float | None  # median delay after the intended time (s)
    failures: int = 0  # jobs reported failing at this stage: not passages

    def punctual(self) -> F64 | None:
        """P_n of this stage (``None`` without an upstream time): computed on each call,
        not kept (one array per job and stage; 10 M jobs: 80 MB a stage, ~10 ms)."""
        return punctual(self.times, self.t0) if self.t0 is not None else None


def stage_throughput(
    flow: StageFlow,
    warm: Warmup,
    sub_end: float | None,
    offered: float | None,
    punct: F64 | None = None,
) -> dict[str, Any]:
    """The per-stage throughput object of metrics.json (``punct``: the flow's P_n when the
    caller already has it, so it is not computed twice)."""
    n = int(flow.times.size)
    p = punct if punct is not None else flow.punctual()
    average = edgi_average(p, warm.fraction) if p is not None and n else None
    steady = None
    if flow.lag is not None and warm.start_s is not None and sub_end is not None:
        steady = steady_rate(flow.times, warm.start_s + flow.lag, sub_end + flow.lag)
    return {
        "average": average,
        "steady": steady,
        "expected_ratio": ratio(steady, offered),
        "edgi_ratio": ratio(average, offered),
        "count": n,
        "failures": flow.failures,
    }


def ratio(actual: float | None, offered: float | None) -> float | None:
    """actual / offered, ``None`` when either is unknown."""
    if actual is None or offered is None or offered <= 0:
        return None
    return actual / offered
