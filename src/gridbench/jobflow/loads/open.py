"""The open load model: jobs arrive on an intended schedule (a rate, steps or a ramp),
whatever the system does (METHODS 1.5).

Intended times come from the schedule alone, never from when the previous call finished,
so a slow backend cannot slow the offered load down (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field, model_validator

from gridbench.jobflow.loads.base import BaseLoadModel, LoadBase, PlanEstimate, Strict, narrow
from gridbench.jobflow.run.open_loop import OpenLoop, Submitter, run_open_loop, split_for_agents
from gridbench.jobflow.specbase.units import Rate
from gridbench.lazy import lazy_module
from gridbench.units import Duration

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from gridbench.jobflow.loads.base import TrialContext
    from gridbench.jobflow.specbase.model import ExperimentBase, TrialSpec
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    np = lazy_module("numpy")

NS = 1_000_000_000
START_LEAD_S = 0.2  # lets every submitter reach its first sleep before the schedule starts


# --- spec ---------------------------------------------------------------------------------


class RateStep(Strict):
    """One step of a stepped schedule."""

    rate: Rate
    duration: Duration


class RampSpec(Strict):
    """A linear rate ramp."""

    start: Rate = Field(alias="from")
    end: Rate = Field(alias="to")
    duration: Duration
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class OpenLoad(LoadBase):
    """``load:`` of the open model: one of rate, schedule or ramp."""

    model: Literal["open"] = "open"
    arrival: Literal["uniform", "poisson"] = "uniform"
    rate: Rate | None = None
    schedule: list[RateStep] | None = None
    ramp: RampSpec | None = None
    pool: int = Field(default=64, ge=1, le=100_000, description="concurrent submitters")
    max_lateness: Duration = Field(default=5.0, description="later than this: dropped")

    @model_validator(mode="after")
    def _one_source(self) -> OpenLoad:
        given = [x for x in (self.rate, self.schedule, self.ramp) if x is not None]
        if len(given) != 1:
            raise ValueError(
                "the open model needs exactly one of rate, schedule or ramp "
                "(e.g. rate: 60 for 60 jobs/min)"
            )
        return self


# --- plan ---------------------------------------------------------------------------------


def submission_window(load: OpenLoad, trial: TrialSpec) -> float:
    """Seconds during which an open-loop trial submits."""
    if load.schedule:
        return sum(s.duration for s in load.schedule)
    if load.ramp:
        return load.ramp.duration
    if trial.duration is not None:
        return trial.duration
    rate = load.rate or 0.0
    return (trial.jobs or 0) / rate if rate > 0 else 0.0


def planned_jobs(load: OpenLoad, trial: TrialSpec) -> int:
    """Jobs of one trial, as the plan counts them."""
    if load.schedule:
        return sum(math.floor(s.rate * s.duration) for s in load.schedule)
    if load.ramp:
        return math.floor((load.ramp.start + load.ramp.end) / 2 * load.ramp.duration)
    if trial.jobs is not None:
        return trial.jobs
    return math.floor((load.rate or 0.0) * (trial.duration or 0.0))


def peak_rate(load: OpenLoad) -> float | None:
    """The highest rate the schedule offers (jobs/s), checked against safety.max_rate."""
    if load.schedule:
        return max(s.rate for s in load.schedule)
    if load.ramp:
        return max(load.ramp.start, load.ramp.end)
    return load.rate


# --- schedule (pure): intended submit offsets in ns from the trial start -------------------


def _arrivals(
    rate: float,
    duration: float,
    n: int | None,
    arrival: str,
    rng: np.random.Generator,
    start: float = 0.0,
) -> npt.NDArray[np.float64]:
    if rate <= 0:
        return np.empty(0)
    count = n if n is not None else math.floor(rate * duration + 1e-9)
    if arrival == "poisson":
        if n is not None:
            gaps = rng.exponential(1.0 / rate, size=count)
            return start + (np.cumsum(gaps) - gaps[0] if count else np.empty(0))
        # a Poisson process over the window: the count itself is random (mean rate × T);
        # draw generously, then keep the arrivals that fall inside the window
        draw = int(rate * duration + 6 * math.sqrt(rate * duration) + 16)
        t = np.cumsum(rng.exponential(1.0 / rate, size=draw))
        while t[-1] < duration:  # rare: extend until past the window
            t = np.concatenate([t, t[-1] + np.cumsum(rng.exponential(1.0 / rate, size=draw))])
        return start + t[t < duration]
    return start + np.arange(count, dtype=np.float64) / rate


def _ramp(start_rate: float, end_rate: float, duration: float) -> npt.NDArray[np.float64]:
    """Arrivals of a linear rate ramp: the k-th job comes when the integral of rate reaches k."""
    total = (start_rate + end_rate) / 2 * duration
    k = np.arange(math.floor(total + 1e-9), dtype=np.float64)
    a = (end_rate - start_rate) / duration if duration > 0 else 0.0
    if abs(a) < 1e-12:
        return k / start_rate if start_rate > 0 else np.empty(0)
    # solve start*t + a/2 t^2 = k for t >= 0
    return (-start_rate + np.sqrt(start_rate**2 + 2 * a * k)) / a


def intended_offsets(load: OpenLoad, trial: TrialSpec, seed: int = 1) -> npt.NDArray[np.int64]:
    """Sorted intended submit offsets (ns since trial start) for the open model."""
    rng = np.random.default_rng(seed)
    if load.schedule:
        parts, t = [], 0.0
        for step in load.schedule:
            parts.append(_arrivals(step.rate, step.duration, None, load.arrival, rng, t))
            t += step.duration
        sec = np.concatenate(parts) if parts else np.empty(0)
    elif load.ramp:
        sec = _ramp(load.ramp.start, load.ramp.end, load.ramp.duration)
    else:
        rate = load.rate or 0.0
        duration = trial.duration if trial.duration is not None else math.inf
        n = trial.jobs if trial.duration is None else None
        sec = _arrivals(rate, duration, n, load.arrival, rng)
        if trial.jobs is not None and trial.duration is not None:
            sec = sec[: trial.jobs]
    return np.round(np.sort(sec) * NS).astype(np.int64)


def offered_rate_per_s(offsets: npt.NDArray[np.int64], window_s: float) -> float:
    """Jobs per second a schedule offers over its window."""
    return float(len(offsets)) / window_s if window_s > 0 else 0.0


# --- the model ----------------------------------------------------------------------------


async def run_open(ctx: TrialContext) -> None:
    """Every agent keeps its share of the intended schedule with a pool of submitters."""
    spec = ctx.spec
    load = narrow(spec.load, OpenLoad)
    offsets = intended_offsets(load, spec.trial, ctx.seed)
    window = submission_window(load, spec.trial)
    ctx.info["offered_rate_per_s"] = len(offsets) / window if window > 0 else None
    ctx.info["planned_jobs"] = ctx.progress.planned = len(offsets)
    ctx.info["submission_window_s"] = window
    ctx.write_info()
    loop = OpenLoop(load.pool, load.max_lateness, load.late_threshold)
    if load.remote_agents is not None:
        from gridbench.jobflow.run.agents import run_remote_open  # Dask loads only when asked

        await run_remote_open(ctx, load.remote_agents, offsets, loop)
        return
    make = ctx.requests(len(offsets))
    start = time.perf_counter_ns() + int(START_LEAD_S * 1e9)
    idx_parts = split_for_agents(np.arange(len(offsets), dtype=np.int64), load.agent_count)
    async with asyncio.TaskGroup() as tg:
        for k, part in enumerate(split_for_agents(offsets, load.agent_count)):
            tg.create_task(
                run_open_loop(
                    Submitter(
                        ctx.backend,
                        ctx.recorders[k],
                        ctx.tracker,
                        ctx.progress,
                        ctx.submit_timeout_s,
                    ),
                    part,
                    idx_parts[k],
                    make,
                    loop,
                    start_mono_ns=start,
                    stop=ctx.stop,
                )
            )


class Open(BaseLoadModel):
    """The open model (see the module docstring)."""

    name = "open"
    spec = OpenLoad
    rate_based = True
    growth = ("latency.overall.mean", "overall latency", "s")
    # no sections of its own: its results are the generic job-flow sections (latency,
    # throughput, queues, knee, bottleneck)
    run = staticmethod(run_open)

    def check_spec(self, spec: ExperimentBase) -> None:
        """A plain rate needs a window or a job count; steps and ramps carry their own."""
        load = narrow(spec.load, OpenLoad)
        plain = load.schedule is None and load.ramp is None
        if plain and spec.trial.duration is None and spec.trial.jobs is None:
            raise ValueError("trial needs a duration or a job count (e.g. trial: {duration: 60s})")

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """The schedule's jobs over its window, plus the drain."""
        load = narrow(spec.load, OpenLoad)
        return PlanEstimate(
            planned_jobs(load, spec.trial),
            submission_window(load, spec.trial) + drain_s,
            peak_rate(load),
        )


MODEL = Open()
