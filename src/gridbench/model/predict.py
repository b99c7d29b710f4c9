"""``gridbench model predict``: the model run over a sweep, written as a job-flow run
marked predicted, so analysis, reports, compare and the dashboard treat it as a run.

Each point runs ``reps`` repetitions with different seeds; with ``fit_uncertainty`` each
repetition also draws the fitted means and cvs from their sampling distributions (the bootstrap
over the fit), so the spread across trials carries both kinds of uncertainty.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.errors import SpecError
from gridbench.jobflow.api import (
    ARROW_FILE,
    EVENT_COLUMNS,
    EVENT_SCHEMA,
    FAIL_JOB,
    FAIL_LOST,
    FAIL_SUBMIT_REJECTED,
    ArrowEventLog,
    JobFlowRun,
    Stage,
    StageChain,
    edgi_chain,
    with_staging,
)
from gridbench.model.chain import HIDDEN, steps
from gridbench.model.engine import F64, FAILED, LOST, REFUSED, Layout, draw_model, layout, simulate
from gridbench.model.spec import ChainModel
from gridbench.model.steps.base import step_kind
from gridbench.model.sweep import Point
from gridbench.store.layout import write_json

KIND = "jobflow"  # a prediction is a job-flow run: the same analysis, report and pages
_MS, _US = 1_000_000, 1_000
#: the trials' clock origin: a fixed instant, so a prediction is reproducible byte for byte
EPOCH_NS = 1_700_000_000_000_000_000


#: the most simulated jobs and scheduler passes a prediction runs unless told otherwise
#: (``--max-jobs``): a few minutes of simulation (an hour at 1,000 jobs/s, 3.6 M jobs,
#: took 262 s: README, bench/bench_model.py)
MAX_SIMULATED = 10_000_000


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a prediction will simulate, counted before it starts: jobs, and scheduler
    passes and status updates (each an event of the engine, whether a job waits or not)."""

    jobs: int
    passes: int

    @property
    def total(self) -> int:
        return self.jobs + self.passes

    def said(self) -> str:
        passes = f" and {self.passes:,} scheduler pass(es)" if self.passes else ""
        return f"about {self.jobs:,} job(s){passes}"


def estimate(pts: Sequence[Point], reps: int) -> Estimate:
    """The jobs and passes ``reps`` repetitions of ``pts`` simulate (an upper bound for
    passes: a sequential status update visits each job it tracks)."""
    jobs = passes = 0
    for p in pts:
        o = p.offer
        n = math.ceil(o.rate_per_s * o.duration_s)
        jobs += n * reps
        for st in steps(p.model):
            if st.dispatch is not None:
                passes += math.ceil(o.horizon_s / st.dispatch.interval_s) * reps
            su = st.poll
            if su is not None:
                rounds = math.ceil(o.horizon_s / su.interval_s)
                if su.policy == "sequential":
                    visits = rounds * n
                    if su.per_job_cost_s > 0:
                        visits = min(visits, math.ceil(o.horizon_s / su.per_job_cost_s))
                    rounds += visits
                passes += rounds * reps
    return Estimate(jobs, passes)


def check_size(pts: Sequence[Point], reps: int, limit: int = MAX_SIMULATED) -> Estimate:
    """The prediction's :class:`Estimate`, or a SpecError when it is over ``limit``: a
    mistyped rate or interval must not start a simulation that never ends."""
    est = estimate(pts, reps)
    if est.total > limit:
        raise SpecError(
            f"the prediction would simulate {est.said()}: more than the {limit:,} allowed",
            where="model predict",
            fix="lower --rate, --duration, --drain or --reps, lengthen the model's intervals, "
            f"or give --max-jobs {est.total} to run it anyway",
        )
    return est


@dataclass(frozen=True, slots=True)
class Repeat:
    """How each point is repeated: ``reps`` seeds from ``seed``, and whether each
    repetition draws its parameters from the fit's uncertainty."""

    reps: int = 3
    seed: int = 1
    fit_uncertainty: bool = True


@dataclass(frozen=True, slots=True)
class Marking:
    """What experiment.json says of a prediction: the model, and on which runs it was
    checked and how far off it was."""

    model_path: str
    model: ChainModel
    checking: str | None = None  # the measured run a `model check` predicts


def chain_dict(model: ChainModel) -> dict[str, Any]:
    """The model's stage chain as the trial.json of a measured run has it: the reference
    chain T1..T8 for the EDGI form, else the chain's steps (side stamps are not stages)."""
    chain_steps = steps(model)
    if model.chain is None:
        server = ("ce_entry", "ce_submit", "bridge_entry", "bridge_submit", "bridge_done")
        chain = edgi_chain(precision_ns=dict.fromkeys((*server, "ce_done"), _MS))
        tiers = model.tiers
        if tiers is not None and (tiers.stage_in or tiers.stage_out):
            chain = with_staging(chain)
    else:
        stages = [Stage("submit", "client", "client submit call", _US)]
        for st in chain_steps:
            if not step_kind(st.kind).holds_job:  # a side stamp: not in the run's chain
                continue
            if st.stage.startswith(HIDDEN):
                continue
            if st.start_stage is not None:
                stages.append(Stage(st.start_stage, st.source, "", st.precision_ns))
            stages.append(Stage(st.stage, st.source, "", st.precision_ns))
        chain = StageChain(tuple(stages))
    for st in chain_steps:
        if st.polled and st.service is not None:  # a poll of twice the mean wait
            chain = chain.polled(st.stage, max(int(st.service.mean * 2e9), _MS))
    return chain.to_dict()


def events_frame(rows: F64, trial_id: str, chain: dict[str, Any], lay: Layout) -> pl.DataFrame:
    """The simulated rows as an event log (columnar: one frame per stage)."""
    prec = {s["name"]: int(s["precision_ns"]) for s in chain["stages"]}
    sources = {s["name"]: str(s["source"]) for s in chain["stages"]}
    numbers = pl.Series(rows[:, lay.idx].astype(np.int64)).cast(pl.String).str.zfill(6)
    ids = (f"{trial_id}-" + numbers).to_numpy()
    frames: list[pl.DataFrame] = []

    def add(stage: str, t: F64, mask: np.ndarray[Any, Any], attrs: str = "") -> None:
        if not mask.any():
            return
        src = sources.get(stage, "client")
        frames.append(
            pl.DataFrame(
                {
                    "job": ids[mask],
                    "t_ns": (EPOCH_NS + np.round(t[mask] * 1e9)).astype(np.int64),
                }
            ).with_columns(
                stage=pl.lit(stage),
                source=pl.lit(src),
                precision_ns=pl.lit(prec.get(stage, _US), dtype=pl.Int64),
                agent=pl.lit("model"),
                clock_offset_ns=pl.lit(0, dtype=pl.Int64),
                attrs=pl.lit(attrs or None, dtype=pl.String),  # none: null, as read from CSV
            )
        )

    for k, stage in enumerate(lay.columns[:-1]):
        if not stage.startswith(HIDDEN):
            add(stage, rows[:, k], np.isfinite(rows[:, k]))
    out = rows[:, lay.out]
    last = np.nanmax(rows[:, : lay.out], axis=1)
    for code, kind in ((REFUSED, FAIL_SUBMIT_REJECTED), (FAILED, FAIL_JOB), (LOST, FAIL_LOST)):
        add("failed", last, out == code, json.dumps({"kind": kind}))
    if not frames:
        return pl.DataFrame(schema=EVENT_SCHEMA)
    return pl.concat(frames).select(EVENT_COLUMNS).sort("t_ns")


def _trial(run: JobFlowRun, point: Point, pi: int, ti: int, seed: int, rep: Repeat) -> int:
    rng = np.random.default_rng([seed, pi, ti])
    model = draw_model(point.model, rng) if rep.fit_uncertainty and ti > 0 else point.model
    rows, stats = simulate(model, point.offer, int(rng.integers(1 << 62)))
    tid = f"p{pi:02d}-t{ti:02d}"
    d = run.trial_dir(tid)
    d.mkdir(parents=True, exist_ok=True)
    chain = chain_dict(point.model)
    lay = layout(point.model)
    with ArrowEventLog(d / ARROW_FILE) as log:  # the format of a run's own trials
        log.write_frame(events_frame(rows, tid, chain, lay))
    ends = rows[:, : lay.out]
    last = float(np.nanmax(ends)) if np.isfinite(ends).any() else point.offer.duration_s
    info = {
        "trial_id": tid,
        "point_index": pi,
        "trial_index": ti,
        "point": point.values,
        "load_model": "open",
        "offered_rate_per_s": point.offer.rate_per_s,
        "planned_jobs": stats.jobs,
        "started_ns": EPOCH_NS,
        "submit_end_ns": EPOCH_NS + int(point.offer.duration_s * 1e9),
        "ended_ns": EPOCH_NS + int(last * 1e9),
        "status": "complete",
        "chain": chain,
        "predicted": {"seed": seed, "events": stats.events, "fit_uncertainty": ti > 0},
    }
    write_json(d / "trial.json", info)
    return stats.events


def predict(
    pts: Sequence[Point],
    root: Path,
    spec: dict[str, Any],
    mark: Marking,
    rep: Repeat = Repeat(),
    progress: Callable[[int, int], None] = lambda done, total: None,
    max_simulated: int = MAX_SIMULATED,
) -> tuple[Path, dict[str, Any]]:
    """Simulate every point ``rep.reps`` times into a new run under ``root``; return it and
    what experiment.json records of the prediction (events, wall time). Refused before
    anything is written when it would simulate more than ``max_simulated`` jobs and
    passes (:func:`check_size`)."""
    check_size(pts, rep.reps, max_simulated)
    run = JobFlowRun.create(root, str(spec.get("name") or mark.model.name))
    predicted: dict[str, Any] = {
        "model": mark.model_path,
        "model_name": mark.model.name,
        "fitted_from": mark.model.fitted_from.model_dump() if mark.model.fitted_from else None,
        "checks": [c.model_dump() for c in mark.model.checks],
        "checking": mark.checking,
        "engine": "simpy",
    }
    run.begin(
        KIND, str(spec.get("name") or mark.model.name), spec, status="running",
        backend="model", load_model="open", predicted=predicted,
        trials_planned=len(pts) * rep.reps,
    )  # fmt: skip
    t0, events, total = time.perf_counter(), 0, len(pts) * rep.reps
    for pi, point in enumerate(pts):
        for ti in range(rep.reps):
            events += _trial(run, point, pi, ti, rep.seed, rep)
            progress(pi * rep.reps + ti + 1, total)
    wall = time.perf_counter() - t0
    predicted |= {"events": events, "wall_s": round(wall, 3)}
    run.update_experiment(status="complete", trials_done=total, predicted=predicted)
    return run.path, predicted
