"""Throughput as the scheduler field now reports it, beside the EDGI average (METHODS 1.3).

- **end to end** (Flux's ``throughput.py``): jobs completed / (last end - first submit).
  Server-side stamps when the chain has them (the first and last stage a component other
  than the client stamps), else the client's (``submit``, the end stage); a chain whose
  first server stamp is the start (the local backend) takes the client's submit.
- **submit rate**: jobs / (last submit - first submit), on the same submit stage;
  **dispatch rate**: jobs started / (last start - first start), on the stage where the
  server starts the job (a server stage named ``*_start`` or ``*_active``; in an EDGI
  chain, the last tier's ``*_submit``, the hand-off to the worker grid). Either is
  ``None`` when fewer than two jobs have the stamp or they share one instant.
- **per-second throughput** (Kubernetes scheduler_perf): completions counted in 1-s bins
  from the first submit to the last completion, every bin (empty ones too), and the
  p50/p90/p99 and mean of those counts, in jobs/s.

Pure: numpy columns from the trial's :class:`JobTimes`, no loop per job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import STAGE_SUBMIT, Source

F64 = NDArray[np.float64]

#: scheduler_perf's sampling period
BIN_S = 1.0
#: most bins kept (11.5 days at 1 s): a wild stamp must not become an unbounded allocation
MAX_BINS = 1_000_000


@dataclass(frozen=True, slots=True)
class Roles:
    """Which chain stages stand for submit, start (dispatch) and end, and whose stamps."""

    submit: str
    start: str | None
    end: str
    side: str  # "server", "client", or "mixed" (client submit, server end)


def stage_roles(chain: StageChain, jt: JobTimes, client_end: str) -> Roles:
    """The stages the rates use: server-side ones that some job reached, else the client's."""
    server = [s.name for s in chain.stages if s.source != Source.CLIENT and jt.has(s.name)]
    start = next((s for s in server if s.endswith(("_start", "_active"))), None)
    if start is None:  # an EDGI chain: the last tier hands the job to the worker grid
        start = next((s for s in reversed(server) if s.endswith("_submit")), None)
    # the server's first stamp is its submit unless it is the start (the local backend
    # stamps only start and end): then the client's submit call is the first submit
    submit = server[0] if server and server[0] != start and len(server) >= 2 else STAGE_SUBMIT
    end = server[-1] if server and server[-1] != start else client_end
    sides = {submit in server, end in server}
    side = "server" if sides == {True} else "client" if sides == {False} else "mixed"
    return Roles(submit, start, end, side)


def span_rate(times: F64) -> float | None:
    """n / (last - first) of the finite ``times`` (None below two stamps or no span)."""
    t = times[np.isfinite(times)]
    if t.size < 2:
        return None
    span = float(t.max() - t.min())
    return t.size / span if span > 0 else None


def per_second(done: F64, t0: float) -> F64:
    """Completions per 1-s bin from ``t0`` to the last completion (empty bins included)."""
    d = done[np.isfinite(done) & (done >= t0)]
    if not d.size:
        return np.empty(0)
    k = np.floor((d - t0) / BIN_S).astype(np.int64)
    n_bins = min(int(k.max()) + 1, MAX_BINS)
    return np.bincount(k[k < n_bins], minlength=n_bins).astype(np.float64) / BIN_S


def scheduler_rates(
    jt: JobTimes,
    chain: StageChain,
    failing: Mapping[str, NDArray[np.bool_]],
    client_end: str,
) -> dict[str, Any]:
    """The trial's ``rates`` object. A job completed when it has the end stamp, no
    failure, and was not reported failing at the end stage (``failing``, per stage)."""
    roles = stage_roles(chain, jt, client_end)
    submit = jt.get(roles.submit)
    sub = submit[np.isfinite(submit)]
    end_t = jt.get(roles.end)
    ok = np.isfinite(end_t) & ~jt.failed
    if roles.end in failing:
        ok &= ~failing[roles.end]
    done = end_t[ok]
    first = float(sub.min()) if sub.size else None
    e2e = None
    if first is not None and done.size:
        span = float(done.max()) - first
        e2e = done.size / span if span > 0 else None
    bins = per_second(done, first) if first is not None else np.empty(0)
    pct = np.percentile(bins, [50, 90, 99]) if bins.size else None
    return {
        "side": roles.side,
        "submit_stage": roles.submit,
        "start_stage": roles.start,
        "end_stage": roles.end,
        "completed": int(done.size),
        "end_to_end_per_s": e2e,
        "submit_per_s": span_rate(submit),
        "dispatch_per_s": span_rate(jt.get(roles.start)) if roles.start else None,
        "per_second": {
            "bins": int(bins.size),
            "mean": float(bins.mean()) if bins.size else None,
            "p50": float(pct[0]) if pct is not None else None,
            "p90": float(pct[1]) if pct is not None else None,
            "p99": float(pct[2]) if pct is not None else None,
        },
    }
