"""``gridbench model fit``: a chain model from a measured job-flow run (pure but for reading).

Service time is separated from waiting by in-flight-aware estimation: in a FIFO tier with
``c`` servers a job starts when it has arrived and when ``c`` fewer jobs than had arrived
before it are still being served, i.e. at ``max(arrival_i, departure_(i-c))`` with
departures sorted. ``c`` is read from the data only where it shows (jobs that arrived at
the tier's highest occupancy waited); else the tier is left unbounded, since the most
jobs seen at once is only a lower bound: declare it in the model when known. Fitting on
low-load trials keeps waiting out of the service times in the first place. The
status-update policy is read from the gaps between consecutive T7 stamps: a sequential
poller spaces them by multiples of its per-job cost (plus its pause at a pass's end); a
batched one stamps many at one instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.errors import ResultsError
from gridbench.jobflow import api as load
from gridbench.jobflow.api import (
    FAIL_JOB,
    FAIL_SUBMIT_REJECTED,
    STAGE_FAILED,
    SUBMIT_FAILURES,
    StageChain,
)
from gridbench.model.fitdist import fit_duration
from gridbench.model.fitpause import refine_pause
from gridbench.model.spec import (
    STAGES,
    ChainModel,
    Client,
    Delay,
    Failures,
    FittedFrom,
    StatusUpdate,
    Tier,
    Tiers,
    Workers,
)

F64 = NDArray[np.float64]
#: the reference grid's staging stamps (a transfer's start and end), in chain order
STAGING = ("stage_in_start", "staged_in", "stage_out_start", "staged_out")
SIZED = ("staged_in", "staged_out")
#: gaps between T7 stamps shorter than this are "at one instant" (ms stamps)
SAME_INSTANT_S = 0.002


@dataclass(frozen=True, slots=True)
class Measured:
    """The fit's input: per-job stage times (s, from the trial start), all trials stacked;
    ``trial`` numbers each job's trial so in-flight counts never mix trials. ``chain`` is
    the run's recorded stage chain (the stages, in order, and their sources)."""

    times: dict[str, F64]
    trial: NDArray[np.int64]
    failed_submit: int
    failed_job: int
    trial_ids: list[str]
    rates: list[float]
    chain: StageChain
    refused: int = 0  # submissions refused as the queue was full (``submit_rejected``)

    @property
    def edgi(self) -> bool:
        """Whether the run has the reference grid's (EDGI's) chain."""
        return all(s in self.times for s in STAGES)


def _stages(chain: StageChain, ev: pl.DataFrame) -> tuple[str, ...]:
    """The stages to fit: the EDGI chain's, else the run's recorded chain (plus the
    client's acknowledgement when the events have it)."""
    names = chain.names()
    if all(s in names for s in STAGES if s != "submit_ack"):
        return STAGES + tuple(s for s in STAGING if s in names and (ev["stage"] == s).any())
    acked = "submit_ack" not in names and bool((ev["stage"] == "submit_ack").any())
    return (*names, *(("submit_ack",) if acked else ()))


def read_measured(run: Path, rates: Sequence[float] | None = None) -> Measured:
    """Per-job stage times of the run's trials whose offered rate is in ``rates`` (all
    when None); an error naming the run when none is left or the chain lacks a stage."""
    cols: dict[str, list[F64]] = {}
    trial_no: list[NDArray[np.int64]] = []
    ids: list[str] = []
    used: list[float] = []
    fs = fj = refused = 0
    chain = StageChain(stages=())
    stages: tuple[str, ...] = ()
    for d in load.trial_dirs(run):
        info = load.read_trial_info(d)
        rate = info.offered_rate_per_s
        if rates is not None and (rate is None or not any(abs(rate - r) < 1e-9 for r in rates)):
            continue
        ev = load.read_trial_events(d, info)
        if not stages:
            chain, stages = info.chain, _stages(info.chain, ev)
            cols = {s: [] for s in stages}
        kinds = ev.filter(pl.col("stage") == STAGE_FAILED).get_column("attrs").fill_null("")
        fs += int(kinds.str.contains_any(list(SUBMIT_FAILURES)).sum())
        fj += int(kinds.str.contains(FAIL_JOB, literal=True).sum())
        refused += int(kinds.str.contains(FAIL_SUBMIT_REJECTED, literal=True).sum())
        wide = (
            ev.filter(pl.col("stage").is_in(stages))
            .group_by("job", "stage")
            .agg(pl.col("t_ns").min())
            .pivot("stage", index="job", values="t_ns")
        )
        missing = [s for s in stages if s not in wide.columns]
        if missing or wide.height == 0:
            raise ResultsError(
                f"trial {info.trial_id} has no {', '.join(missing) or 'jobs'} stamps",
                where=str(d),
                fix="fit a run whose jobs completed, with every stage of its chain recorded",
            )
        wide = wide.drop_nulls(list(stages))
        if wide.height == 0:
            continue
        for end in (s for s in stages if s in SIZED):  # a transfer's bytes and files
            sized = ev.filter(pl.col("stage") == end).select(
                "job",
                pl.col("attrs")
                .str.json_path_match("$.bytes")
                .cast(pl.Float64)
                .alias(f"{end}:bytes"),
                pl.col("attrs")
                .str.json_path_match("$.files")
                .cast(pl.Float64)
                .alias(f"{end}:files"),
            )
            wide = wide.join(sized.unique("job"), on="job", how="left")
            for col in (f"{end}:bytes", f"{end}:files"):
                cols.setdefault(col, []).append(wide.get_column(col).fill_null(0.0).to_numpy())
        t0 = int(wide.get_column("submit").to_numpy().min())
        for s in stages:
            cols[s].append((wide.get_column(s).to_numpy() - t0) / 1e9)
        trial_no.append(np.full(wide.height, len(ids), dtype=np.int64))
        ids.append(info.trial_id)
        used.append(float(rate or 0.0))
    if not ids:
        raise ResultsError(
            "no trial of the run matches",
            where=str(run),
            fix="give rates the run measured (--rates), or a run with complete trials",
        )
    times = {s: np.concatenate(v) for s, v in cols.items()}
    return Measured(times, np.concatenate(trial_no), fs, fj, ids, used, chain, refused)


def in_flight_at_arrival(start: F64, end: F64, trial: NDArray[np.int64]) -> NDArray[np.int64]:
    """How many jobs were in the tier when each job arrived (itself included)."""
    out = np.zeros(start.size, dtype=np.int64)
    for t in np.unique(trial):
        idx = np.flatnonzero(trial == t)
        a, d = start[idx], end[idx]
        arrived = np.searchsorted(np.sort(a), a, side="right")
        left = np.searchsorted(np.sort(d), a, side="right")
        out[idx] = arrived - left
    return out


def limit_seen(start: F64, end: F64, trial: NDArray[np.int64]) -> int | None:
    """The tier's concurrency when the data shows it, else None (no limit seen).

    A limit shows as jobs that arrived with the tier at its most-ever occupancy taking
    clearly longer (they waited) than the others; without that the most seen at once is
    only a lower bound and the model leaves the tier unbounded (declare it when known).
    """
    occ = in_flight_at_arrival(start, end, trial)
    if occ.size == 0:
        return None
    c = int(occ.max())
    took = end - start
    at_max, below = took[occ >= c], took[occ < c]
    if at_max.size >= 5 and below.size >= 5 and np.median(at_max) > 1.5 * np.median(below):
        return max(c - 1, 1)
    return None


def queue_limit_seen(arrive: F64, leave: F64, trial: NDArray[np.int64], refused: int) -> int | None:
    """A tier's queue limit (jobs waiting or in service) when submissions were refused
    as full: the most jobs it held at once, the plateau the refusals kept it at. Without
    refusals no limit was reached (None: declare it when known)."""
    if refused == 0 or arrive.size == 0:
        return None
    return int(in_flight_at_arrival(arrive, leave, trial).max())


def service_times(arrive: F64, depart: F64, trial: NDArray[np.int64], c: int | None) -> F64:
    """In-flight-aware service times of a FIFO tier with ``c`` servers (see the module)."""
    if c is None:
        return np.clip(depart - arrive, 0.0, None)
    out = np.empty_like(arrive)
    for t in np.unique(trial):
        idx = np.flatnonzero(trial == t)
        a, d = arrive[idx], depart[idx]
        order = np.argsort(a, kind="stable")
        dep = np.sort(d)
        start = a[order].copy()
        if len(idx) > c:
            start[c:] = np.maximum(start[c:], dep[: len(idx) - c])
        out[idx[order]] = d[order] - start
    return np.clip(out, 0.0, None)


def status_policy(
    done: F64,
    trial: NDArray[np.int64],
    listed: F64 | None = None,
    ready: F64 | None = None,
) -> StatusUpdate:
    """The status-update policy from the T7 stamps (see the module). With the jobs' T3
    (``listed``: when each joined the CE's list) and T6 (``ready``) a sequential poller's
    pause is replayed against the stamps (:func:`gridbench.model.fitpause.refine_pause`):
    a gap across a pass's end holds more calls than the pause's own."""
    gaps = np.concatenate([np.diff(np.sort(done[trial == t])) for t in np.unique(trial)])
    if gaps.size < 3:
        return StatusUpdate(policy="batched", per_job_cost_s=0.0, interval_s=1.0, source="declared")
    same = float(np.mean(gaps < SAME_INSTANT_S))
    pos = gaps[gaps >= SAME_INSTANT_S]
    unit = float(np.quantile(pos, 0.05)) if pos.size else 1.0
    lowest = pos[pos <= unit * 1.5] if pos.size else pos
    cost = float(np.median(lowest)) if lowest.size else unit
    if same > 0.05:
        # one call for all: stamps come in bursts, one per pass of cost + interval
        return StatusUpdate(
            policy="batched", per_job_cost_s=0.0, interval_s=cost, source="inferred"
        )
    k = pos / cost
    off = pos[np.abs(k - np.round(k)) > 0.08]
    # the shortest gap spanning a pass boundary is cost + interval
    raw = float(np.quantile(off, 0.05)) - cost if off.size else cost
    interval = raw % cost if raw > cost * 4 else raw
    if listed is not None and ready is not None:  # replayed: raw less some whole calls
        interval = refine_pause(listed, ready, done, trial, cost, raw)
    return StatusUpdate(
        policy="sequential",
        per_job_cost_s=round(cost, 4),
        interval_s=round(max(interval, 1e-3), 4),
        source="inferred",
    )


def provenance(m: Measured, run_id: str, note: str) -> FittedFrom:
    """What a model was fitted on: the run, its trials and their rates."""
    return FittedFrom(run=run_id, trials=m.trial_ids, rates_per_s=sorted(set(m.rates)), note=note)


def failure_shares(m: Measured) -> Failures:
    """The shares of jobs refused at submission and failed on the workers."""
    n = len(m.trial) + m.failed_submit
    return Failures(
        submit=round(m.failed_submit / n, 6) if n else 0.0,
        job=round(m.failed_job / max(len(m.trial), 1), 6),
    )


def fit_model(
    m: Measured, run_id: str, name: str = "model", every: Measured | None = None
) -> ChainModel:
    """The chain model of the measured per-job times ``m`` (pure); the CE's queue limit
    is read from ``every`` (all the run's trials: refusals come at the high rates)."""
    t, tr = m.times, m.trial
    e = every or m
    limit = queue_limit_seen(e.times["ce_entry"], e.times["ce_submit"], e.trial, e.refused)
    c_ce = limit_seen(t["ce_entry"], t["ce_submit"], tr)
    c_br = limit_seen(t["bridge_entry"], t["bridge_submit"], tr)
    slots = limit_seen(t["bridge_submit"], t["bridge_done"], tr)
    return ChainModel(
        name=name,
        fitted_from=provenance(
            m,
            run_id,
            "concurrency or slots null: no limit was seen at the rates fitted; "
            "declare them when known",
        ),
        client=Client(
            to_ce=fit_duration(t["ce_entry"] - t["submit"]),
            ack=fit_duration(t["submit_ack"] - t["ce_entry"]),
            observe=fit_duration(t["client_done"] - t["ce_done"]),
        ),
        tiers=Tiers(
            ce=Tier(
                concurrency=c_ce,
                concurrency_source="inferred",
                queue_limit=limit,
                queue_limit_source="inferred",
                service=fit_duration(service_times(t["ce_entry"], t["ce_submit"], tr, c_ce)),
            ),
            transfer=Delay(delay=fit_duration(t["bridge_entry"] - t["ce_submit"])),
            bridge=Tier(
                concurrency=c_br,
                concurrency_source="inferred",
                service=fit_duration(
                    service_times(t["bridge_entry"], t["bridge_submit"], tr, c_br)
                ),
            ),
            workers=Workers(
                slots=slots,
                slots_source="inferred",
                runtime=fit_duration(
                    service_times(t["bridge_submit"], t["bridge_done"], tr, slots)
                ),
            ),
        ),
        status_update=status_policy(t["ce_done"], tr, t["ce_submit"], t["bridge_done"]),
        failures=failure_shares(m),
    )
