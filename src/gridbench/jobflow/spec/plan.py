"""Expanding a spec into points × trials, with job counts, duration estimates and safety checks."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow import loads as load_models
from gridbench.jobflow.spec.load import sweep_path, validate_data
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.specload import set_path

#: The run's own work around its trials: the command's start, the backend's, the analysis
#: and the reports (4.3 and 4.4 s measured on the quick variants of local-sleep-ramp.yaml
#: and sustain-reference.yaml, 2 shared cores).
RUN_FIXED_S = 4.0


@dataclass(frozen=True)
class PlannedTrial:
    trial_id: str
    point_index: int
    trial_index: int
    not_before_s: float = 0.0  # earliest start after the first trial's (schedule.window)


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
        starts = self.estimated_starts()
        if not starts:
            return RUN_FIXED_S + settle
        last = self.points[self.trials[-1].point_index].seconds_per_trial
        return RUN_FIXED_S + starts[-1] + last + settle

    def estimated_starts(self) -> list[float]:
        """Each trial's estimated start, seconds after the first's: the previous end plus
        ``schedule.pause``, or its window slot if later."""
        sched = self.spec.schedule
        pause = sched.pause if sched else 0.0
        out: list[float] = []
        end = 0.0
        for k, t in enumerate(self.trials):
            start = max(end + pause, t.not_before_s) if k else 0.0
            out.append(start)
            end = start + self.points[t.point_index].seconds_per_trial
        return out

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
            "schedule": self.schedule_dict(),
            "total_jobs": self.total_jobs,
            "estimated_seconds": round(self.estimated_seconds, 1),
        }

    def schedule_dict(self) -> dict[str, Any] | None:
        """The spec's schedule and each trial's estimated start (None without one)."""
        sched = self.spec.schedule
        if sched is None:
            return None
        return {
            "interleave": sched.interleave,
            "pause_s": sched.pause,
            "window_s": sched.window,
            "order": [
                {"trial": t.trial_id, "not_before_s": t.not_before_s, "estimated_start_s": s}
                for t, s in zip(self.trials, self.estimated_starts(), strict=True)
            ],
        }


#: Most points a sweep may expand to (a plan validates a spec per point: ~1 ms each).
MAX_SWEEP_POINTS = 1_000


def trial_id(point: int, trial: int) -> str:
    return f"p{point:02d}-t{trial:02d}"


def _estimate(spec: ExperimentSpec) -> tuple[int | None, float, float | None]:
    """Jobs, seconds and peak rate of one trial, as the spec's load model estimates them."""
    # every model waits about this long after its last submission for the jobs to end
    drain = (spec.job.runtime or 0.0) + 2 * spec.timeouts.status_interval + 1.0
    est = load_models.get(spec.load.model).plan(spec, drain)
    return est.jobs_per_trial, est.seconds_per_trial, est.peak_rate_per_s


def make_plan(spec: ExperimentSpec, data: dict[str, Any], origin: str = "<spec>") -> Plan:
    """Expand the sweep (cartesian product, in the order written) and check safety caps."""
    keys = list(spec.sweep)
    sizes = [len(spec.sweep[k]) for k in keys]
    if math.prod(sizes) > MAX_SWEEP_POINTS:  # before a point is built: each costs a spec
        raise SpecError(
            f"the sweep has {math.prod(sizes):,} points ({' × '.join(map(str, sizes))}: "
            f"the product of its lists), more than the {MAX_SWEEP_POINTS:,} a plan may hold",
            where=f"{origin}: sweep",
            fix="sweep fewer values, or split the experiment into several specs",
        )
    combos = list(itertools.product(*(spec.sweep[k] for k in keys))) if keys else [()]
    points: list[PlannedPoint] = []
    for i, combo in enumerate(combos):
        values = dict(zip(keys, combo, strict=True))
        pdata = {k: v for k, v in data.items() if k != "sweep"}
        pdata = _deepcopy(pdata)
        for k, v in values.items():
            try:
                set_path(pdata, sweep_path(k), v)
            except (TypeError, IndexError) as exc:  # a key that goes into a single value
                raise SpecError(
                    f"sweep key {k!r} cannot be set: {exc}",
                    where=f"{origin}: sweep.{k}",
                    fix="sweep a field of the spec (docs/spec.md, section sweep)",
                ) from None
        # an error names the point and the field, with its own fix
        pspec = validate_data(pdata, None, f"{origin} (sweep point {values})")
        jobs, seconds, peak = _estimate(pspec)
        points.append(PlannedPoint(i, values, pspec, jobs, seconds, peak))
    plan = Plan(spec, points, order_trials(spec, points))
    check_safety(plan)
    return plan


def order_trials(spec: ExperimentSpec, points: list[PlannedPoint]) -> list[PlannedTrial]:
    """Every point's trials in a row, or with ``schedule.interleave`` round-robin over the
    points (each repetition a pass over all points); ``schedule.window`` gives trial k of
    N the earliest start k·window/N."""
    sched = spec.schedule
    if sched is not None and sched.interleave:
        pairs = [(p.index, t) for t in range(spec.trials) for p in points]
    else:
        pairs = [(p.index, t) for p in points for t in range(spec.trials)]
    slot = sched.window / len(pairs) if sched is not None and sched.window else 0.0
    return [PlannedTrial(trial_id(p, t), p, t, k * slot) for k, (p, t) in enumerate(pairs)]


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
