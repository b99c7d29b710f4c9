"""Expanding a spec into points × trials, with job counts, duration estimates and safety checks."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from gridbench.errors import SpecError
from gridbench.spec.load import set_path, sweep_path, validate_data
from gridbench.spec.model import ExperimentSpec, LoadSpec, TrialSpec


@dataclass(frozen=True)
class PlannedTrial:
    trial_id: str
    point_index: int
    trial_index: int


@dataclass(frozen=True)
class PlannedPoint:
    index: int
    values: dict[str, Any]  # the sweep values as written
    spec: ExperimentSpec  # the spec with this point's values applied
    jobs_per_trial: int | None  # None: open-ended (closed loop)
    seconds_per_trial: float
    peak_rate_per_s: float | None


@dataclass(frozen=True)
class Plan:
    spec: ExperimentSpec
    points: list[PlannedPoint]
    trials: list[PlannedTrial] = field(default_factory=list)

    @property
    def total_jobs(self) -> int | None:
        if any(p.jobs_per_trial is None for p in self.points):
            return None
        return sum(p.jobs_per_trial or 0 for p in self.points) * self.spec.trials

    @property
    def estimated_seconds(self) -> float:
        # collectors settle once, at the end of the experiment
        settle = self.spec.timeouts.settle if self.spec.collectors else 0.0
        return sum(p.seconds_per_trial for p in self.points) * self.spec.trials + settle

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.spec.name,
            "load_model": self.spec.load.model,
            "points": [
                {
                    "index": p.index,
                    "values": p.values,
                    "jobs_per_trial": p.jobs_per_trial,
                    "seconds_per_trial": round(p.seconds_per_trial, 3),
                    "peak_rate_per_s": p.peak_rate_per_s,
                }
                for p in self.points
            ],
            "trials_per_point": self.spec.trials,
            "trials": [t.trial_id for t in self.trials],
            "total_jobs": self.total_jobs,
            "estimated_seconds": round(self.estimated_seconds, 1),
        }


def trial_id(point: int, trial: int) -> str:
    return f"p{point:02d}-t{trial:02d}"


def submission_window(load: LoadSpec, trial: TrialSpec) -> float:
    """Seconds during which an open-loop trial submits."""
    if load.schedule:
        return sum(s.duration for s in load.schedule)
    if load.ramp:
        return load.ramp.duration
    if trial.duration is not None:
        return trial.duration
    rate = load.rate or 0.0
    return (trial.jobs or 0) / rate if rate > 0 else 0.0


def _open_jobs(load: LoadSpec, trial: TrialSpec) -> int:
    if load.schedule:
        return sum(math.floor(s.rate * s.duration) for s in load.schedule)
    if load.ramp:
        return math.floor((load.ramp.start + load.ramp.end) / 2 * load.ramp.duration)
    if trial.jobs is not None:
        return trial.jobs
    return math.floor((load.rate or 0.0) * (trial.duration or 0.0))


def _peak_rate(load: LoadSpec) -> float | None:
    if load.model != "open":
        return None
    if load.schedule:
        return max(s.rate for s in load.schedule)
    if load.ramp:
        return max(load.ramp.start, load.ramp.end)
    return load.rate


def _estimate(spec: ExperimentSpec) -> tuple[int | None, float]:
    load, trial, runtime = spec.load, spec.trial, spec.job.runtime or 0.0
    drain = runtime + 2 * spec.timeouts.status_interval + 1.0
    if load.model == "open":
        return _open_jobs(load, trial), submission_window(load, trial) + drain
    if load.model == "sustain":
        return None, (trial.duration or 0.0) + drain
    if load.model == "batch":
        n = load.jobs or trial.jobs or 0
        return n, drain + n * 0.01
    # probe: count spaced by gap, plus bursts
    n = load.count + (load.burst.requests * len(load.burst.threads) if load.burst else 0)
    return n, load.count * load.gap + drain


def make_plan(spec: ExperimentSpec, data: dict[str, Any], origin: str = "<spec>") -> Plan:
    """Expand the sweep (cartesian product, in the order written) and check safety caps."""
    keys = list(spec.sweep)
    combos = list(itertools.product(*(spec.sweep[k] for k in keys))) if keys else [()]
    points: list[PlannedPoint] = []
    for i, combo in enumerate(combos):
        values = dict(zip(keys, combo, strict=True))
        pdata = {k: v for k, v in data.items() if k != "sweep"}
        pdata = _deepcopy(pdata)
        for k, v in values.items():
            set_path(pdata, sweep_path(k), v)
        try:
            pspec = validate_data(pdata, None, f"{origin} (sweep point {values})")
        except SpecError as exc:
            raise SpecError(str(exc), fix="check the sweep values against the field") from None
        jobs, seconds = _estimate(pspec)
        points.append(PlannedPoint(i, values, pspec, jobs, seconds, _peak_rate(pspec.load)))
    trials = [
        PlannedTrial(trial_id(p.index, t), p.index, t) for p in points for t in range(spec.trials)
    ]
    plan = Plan(spec, points, trials)
    check_safety(plan)
    return plan


def _deepcopy(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _deepcopy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deepcopy(v) for v in d]
    return d


def check_safety(plan: Plan) -> None:
    """Refuse plans above the spec's caps before anything is submitted."""
    cap = plan.spec.safety
    for p in plan.points:
        if p.peak_rate_per_s is not None and p.peak_rate_per_s > cap.max_rate + 1e-12:
            raise SpecError(
                f"point {p.values or p.index} offers {p.peak_rate_per_s:g} jobs/s, above "
                f"safety.max_rate ({cap.max_rate:g} jobs/s)",
                where="safety.max_rate",
                fix="lower the rate, or raise safety.max_rate if the system can take it",
            )
    total = plan.total_jobs
    if total is not None and total > cap.max_jobs:
        raise SpecError(
            f"the plan submits {total} jobs, above safety.max_jobs ({cap.max_jobs})",
            where="safety.max_jobs",
            fix="reduce trials, duration or rates, or raise safety.max_jobs",
        )


def needs_confirmation(plan: Plan) -> bool:
    total = plan.total_jobs
    return total is not None and total > plan.spec.safety.confirm_above
