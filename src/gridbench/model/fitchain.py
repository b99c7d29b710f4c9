"""``gridbench model fit`` for any recorded chain (a Slurm run's, a PSI/J run's, ...): the
model's steps are the run's own stages, in order.

Each stage is reached from the one before by a delay, but for the step where the job
runs: the longest stage-to-stage time. That step is a FIFO tier: its servers (slots)
are taken at the stage before it (``slurm_start``, when the chain records one, becomes
its ``start_stage``) and its jobs arrive at the stage before that. Its service time is
start -> end, so no waiting is in it. Read from all the run's trials:

* **slots**: the most jobs seen running at once, when the run shows that jobs waited for
  one (else "no limit seen": declare it);
* **dispatch**: a scheduler that starts jobs only at periodic passes (Slurm's main
  scheduler) shows as start instants spaced by multiples of one interval, with several
  jobs started at one instant.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gridbench.model.fit import F64, Measured, failure_shares, provenance, queue_limit_seen
from gridbench.model.fitdist import fit_duration
from gridbench.model.spec import ChainModel, Dispatch, Step

#: starts closer than this are one scheduler pass
SAME_PASS_S = 0.02
#: a start this soon after a job's end was set off by it
TRIGGER_S = 0.1


def job_stage(m: Measured) -> int:
    """The index in the chain of the stage that ends the job's run: the end of the
    longest median stage-to-stage time (the polled stages are the client's waits)."""
    names = m.chain.names()
    polled = {s.name for s in m.chain.stages if s.polled}
    best, where = -1.0, len(names) - 1
    for i in range(1, len(names)):
        if names[i] in polled:
            continue
        med = float(np.median(m.times[names[i]] - m.times[names[i - 1]]))
        if med > best:
            best, where = med, i
    return where


def running_at_start(start: F64, end: F64, trial: NDArray[np.int64]) -> NDArray[np.int64]:
    """How many jobs were running when each job started (itself included)."""
    out = np.zeros(start.size, dtype=np.int64)
    for t in np.unique(trial):
        idx = np.flatnonzero(trial == t)
        s, e = start[idx], end[idx]
        out[idx] = np.searchsorted(np.sort(s), s, side="right") - np.searchsorted(
            np.sort(e), s, side="right"
        )
    return out


def slots_seen(arrive: F64, start: F64, end: F64, trial: NDArray[np.int64]) -> int | None:
    """The most jobs running at once, when jobs waited for a slot (a wait longer than a
    service time beyond the usual wait); else None (only a lower bound was seen)."""
    if start.size < 5:
        return None
    wait, took = start - arrive, end - start
    usual = float(np.quantile(wait, 0.5))
    if int(np.sum(wait > usual + float(np.median(took)))) < 5:
        return None
    return _limit(int(running_at_start(start, end, trial).max()))


def _limit(seen: int | None) -> int | None:
    """A limit the data showed, or None when it showed none: jobs that end the instant
    they start (a noop run) are never running at once, and a limit of 0 is no limit a
    model can hold (it ended ``model fit`` in an internal error)."""
    return seen if seen is not None and seen >= 1 else None


def _after_end(inst: F64, ends: F64, within: float) -> NDArray[np.bool_]:
    """Which start instants come at most ``within`` after a job's end (a pass it set off)."""
    k = np.searchsorted(ends, inst, side="right") - 1
    prev = ends[np.maximum(k, 0)]
    return (k >= 0) & (inst - prev <= within)


def dispatch_seen(start: F64, end: F64, trial: NDArray[np.int64]) -> float | None:
    """The scheduler's pass interval when jobs start only at periodic passes (or right
    after a job's end, which sets a pass off too), else None.

    Start instants that follow an end within ``TRIGGER_S`` are set off by it; the
    interval is the usual gap between the others (gaps under a quarter of their median
    left out). It is a dispatch interval when at least 90 % of the start instants are
    on that grid or set off by an end, and at least 10 % of the jobs share their instant
    with another (evenly spaced arrivals started at once never do)."""
    gaps: list[F64] = []
    where: list[tuple[F64, NDArray[np.bool_]]] = []
    burst = jobs = 0
    for t in np.unique(trial):
        s = np.sort(start[trial == t])
        if s.size < 3:
            continue
        new = np.concatenate([[True], np.diff(s) > SAME_PASS_S])
        burst += int(np.sum(~new))
        jobs += int(s.size)
        inst = s[new]
        set_off = _after_end(inst, np.sort(end[trial == t]), TRIGGER_S)
        gaps.append(np.diff(inst[~set_off]))
        where.append((inst - inst[0], set_off))
    g = np.concatenate(gaps) if gaps else np.empty(0)
    if g.size < 5 or burst < 0.1 * jobs:
        return None
    h = g[g >= 0.25 * float(np.median(g))]
    unit = float(np.median(h[h <= 1.5 * float(h.min())]))
    if unit < 5 * SAME_PASS_S:
        return None
    explained = [
        (np.abs((rel + unit / 2) % unit - unit / 2) <= 0.08 * unit) | set_off
        for rel, set_off in where
    ]
    return round(unit, 4) if float(np.mean(np.concatenate(explained))) >= 0.9 else None


def end_triggered(
    arrive: F64, start: F64, end: F64, trial: NDArray[np.int64], unit: float
) -> tuple[float, float]:
    """The share of the instants jobs end at (with jobs waiting) that start a waiting job
    at once (within a tenth of the interval, less the chance of a periodic pass there),
    and that delay's median."""
    quick: list[float] = []
    seen = 0
    for t in np.unique(trial):
        i = trial == t
        a, s = np.sort(arrive[i]), np.sort(start[i])
        e = np.sort(end[i])
        inst = e[np.concatenate([[True], np.diff(e) > SAME_PASS_S])]
        waiting = np.searchsorted(a, inst, side="right") - np.searchsorted(s, inst, side="right")
        nxt = np.searchsorted(s, inst, side="right")
        ok = (waiting > 0) & (nxt < s.size)
        gap = s[np.minimum(nxt, s.size - 1)] - inst
        seen += int(ok.sum())
        quick += gap[ok & (gap <= min(TRIGGER_S, 0.1 * unit))].tolist()
    if seen < 5:
        return 0.0, 0.0
    share = max((len(quick) / seen - 0.1) / 0.9, 0.0)
    return round(share, 3), round(float(np.median(quick)) if quick else 0.0, 4)


def fit_chain(
    low: Measured,
    every: Measured,
    run_id: str,
    name: str = "model",
    runtime_s: float | None = None,
) -> ChainModel:
    """The generic chain model of a run: service times from ``low`` (the low-load trials),
    slots and dispatch from ``every`` (all trials, the high rates show the limits);
    ``runtime_s``, the run's declared job runtime, gives the job step's overhead."""
    t, names = low.times, low.chain.names()
    stage = {s.name: s for s in low.chain.stages}
    end = job_stage(low)
    has_start = end >= 3  # submit, arrival, start, end: the start is its own stage
    start_at = end - 1 if has_start else end
    arrive_at = start_at - 1
    chain: list[Step] = []
    if "submit_ack" in t and "submit_ack" not in names:
        chain.append(Step(stage="submit_ack", kind="side", source="client",
                          service=fit_duration(t["submit_ack"] - t["submit"])))  # fmt: skip
    for i in range(1, len(names)):
        if has_start and i == start_at:
            continue
        st = stage[names[i]]
        common = {"stage": st.name, "source": st.source, "precision_ns": st.precision_ns}
        if i != end:
            delay = fit_duration(t[names[i]] - t[names[i - 1]])
            chain.append(Step(**common, polled=st.polled, service=delay))  # type: ignore[arg-type]
            continue
        e, s, a = (every.times[names[j]] for j in (end, start_at, arrive_at))
        interval = dispatch_seen(s, e, every.trial) if has_start else None
        service = fit_duration(t[names[end]] - t[names[start_at]])
        over = max(service.mean - runtime_s, 0.0) if runtime_s is not None else 0.0
        dispatch = None
        if interval is not None:
            share, after = end_triggered(a, s, e, every.trial, interval)
            dispatch = Dispatch(
                interval_s=interval, on_end_share=share, on_end_delay_s=after, source="inferred"
            )
        chain.append(
            Step(
                **common,  # type: ignore[arg-type]
                kind="tier",
                job=True,
                start_stage=names[start_at] if has_start else None,
                service=service,
                overhead_s=round(over, 4),
                concurrency=slots_seen(a, s, e, every.trial),
                concurrency_source="inferred",
                queue_limit=_limit(queue_limit_seen(a, e, every.trial, every.refused)),
                queue_limit_source="inferred",
                dispatch=dispatch,
            )
        )
    return ChainModel(
        name=name,
        fitted_from=provenance(
            low,
            run_id,
            "service times from these trials; slots and dispatch from all the run's "
            "trials (concurrency null: no limit was seen; declare it when known)",
        ),
        chain=chain,
        failures=failure_shares(low),
    )
