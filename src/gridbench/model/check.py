"""``gridbench model check``: predict a measured run the model was not fitted on, with the
run's own rates, trial window, arrivals and job size, and report the error per figure.

Figures: capacity (the knee's fitted capacity), the breaking stage, the highest sustained
rate, and per point the mean latency and the steady completion rate. The pass marks are
the product's promise: capacity within 10 %, the same breaking stage, mean latency below
the knee within 15 %. Each latency row also gives the prediction's 95 % interval over its
repetitions and whether it covers the measured figure; when it does not, the row says
why (the interval is the model's own spread; a one-trial measurement's variation is not
in it; or, with several measured trials, whether the two intervals together cover it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from gridbench.jobflow import api as load
from gridbench.model.spec import ChainModel, Check
from gridbench.model.sweep import Point, Window
from gridbench.stats import t_halfwidth
from gridbench.store.layout import RunDir, now_iso
from gridbench.units import parse_duration

CAPACITY_TOL, LATENCY_TOL = 0.10, 0.15


@dataclass(frozen=True, slots=True)
class Row:
    figure: str
    point: str
    measured: float | str | None
    predicted: float | str | None
    error: float | None  # relative, |p - m| / m
    limit: float | None
    #: the prediction's 95% confidence half-width over its repetitions (latency rows)
    ci95: float | None = None
    #: whether predicted ± ci95 holds the measured figure (None: no interval)
    covered: bool | None = None
    #: why the interval does not cover the measured figure, or why there is none
    why: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    rows: tuple[Row, ...]
    within: bool

    def errors(self) -> dict[str, float | str | None]:
        """The figures a model file records of this check."""
        out: dict[str, float | str | None] = {}
        for r in self.rows:
            if r.point == "run":
                out[r.figure] = r.error if r.error is not None else f"{r.measured} vs {r.predicted}"
        lat = [
            r.error
            for r in self.rows
            if r.figure == "latency below the knee" and r.error is not None
        ]
        out["latency_below_knee_max"] = max(lat) if lat else None
        return out


def measured_points(run: Path) -> dict[float, dict[str, str]]:
    """The measured run's sweep point (as trial.json names it) by offered rate, so that a
    check's prediction has the same points and compares with it point by point."""
    out: dict[float, dict[str, str]] = {}
    for d in load.trial_dirs(run):
        info = load.read_trial_info(d)
        if info.offered_rate_per_s:
            out[info.offered_rate_per_s] = {str(k): str(v) for k, v in info.point.items()}
    return dict(sorted(out.items()))


def as_measured(pts: Sequence[Point], named: Mapping[float, dict[str, str]]) -> list[Point]:
    """``pts`` named as the measured run named its points (by offered rate)."""
    return [replace(p, values=named.get(p.offer.rate_per_s, p.values)) for p in pts]


def measured_window(run: Path) -> tuple[Window, list[float], float | None]:
    """The measured run's trial shape, its offered rates and the job size it declared."""
    _, spec = RunDir.open(run).read_spec()
    spec = spec if isinstance(spec, Mapping) else {}
    rates = list(measured_points(run))

    def get(path: str, default: Any) -> Any:
        node: Any = spec
        for p in path.split("."):
            node = node.get(p) if isinstance(node, Mapping) else None
        return default if node is None else node

    runtime = get("job.runtime", None)
    window = Window(
        duration_s=parse_duration(get("trial.duration", "10s")),
        drain_s=parse_duration(get("timeouts.drain", "60s")),
        # the engine's arrivals: poisson, or evenly spaced for every other schedule
        arrival="poisson" if get("load.arrival", "uniform") == "poisson" else "uniform",
        rate_per_s=rates[0] if rates else 1.0,
    )
    return window, rates, parse_duration(runtime) if runtime is not None else None


def _rel(m: float | None, p: float | None) -> float | None:
    if m is None and p is None:
        return 0.0  # neither has one (e.g. no capacity found below the rates tried): agree
    if m is None or p is None or m == 0:
        return None
    return abs(p - m) / abs(m)


def _mean(values: Sequence[Any]) -> float | None:
    xs = [float(v) for v in values if isinstance(v, int | float)]
    return sum(xs) / len(xs) if xs else None


def _latencies(trials: Sequence[Mapping[str, Any]]) -> list[float]:
    got = [(t.get("latency") or {}).get("overall", {}).get("mean") for t in trials]
    return [float(v) for v in got if isinstance(v, int | float) and not isinstance(v, bool)]


def _interval(
    measured: Sequence[float], predicted: Sequence[float]
) -> tuple[float | None, bool | None, str]:
    """(half-width, covered, why) of the predicted mean latency's 95% interval over its
    repetitions against the measured mean; ``why`` says why it does not cover it (or why
    there is none): a statement, not a pass mark."""
    if len(predicted) < 2:
        return None, None, "one predicted repetition: no interval (model check --reps 2 or more)"
    hw = t_halfwidth(float(np.std(predicted, ddof=1)), len(predicted))
    if hw is None or not measured:
        return hw, None, "no measured latency at this point"
    m, p = float(np.mean(measured)), float(np.mean(predicted))
    if abs(p - m) <= hw:
        return hw, True, ""
    side = "above" if p > m else "below"
    why = (
        f"the prediction is {abs(p - m):.3g} s {side} the measurement, beyond its ±{hw:.3g} s: "
        f"the interval is the model's own spread over {len(predicted)} repetitions (seeds "
        "and the fit's uncertainty)"
    )
    if len(measured) < 2:
        why += ", and the measured point is one trial, whose own variation it does not hold"
    else:
        mhw = t_halfwidth(float(np.std(measured, ddof=1)), len(measured)) or 0.0
        why += f"; the measured trials' own interval is ±{mhw:.3g} s"
        if abs(p - m) <= math.hypot(hw, mhw):
            why += " (the two intervals together do cover it)"
        else:
            why += ": a bias of the model (its fitted distributions or structure)"
    return hw, False, why


def _per_point(metrics: Mapping[str, Any]) -> dict[float, dict[str, Any]]:
    out: dict[float, dict[str, Any]] = {}
    for p in metrics.get("points") or []:
        trials = p.get("trials") or []
        out[float(p["offered_rate_per_s"])] = {
            "latencies": _latencies(trials),
            "latency": _mean(
                [(t.get("latency") or {}).get("overall", {}).get("mean") for t in trials]
            ),
            "throughput": _mean(
                [(t.get("throughput") or {}).get("overall", {}).get("steady") for t in trials]
            ),
        }
    return out


def compare(measured: Mapping[str, Any], predicted: Mapping[str, Any]) -> Verdict:
    """The error per figure of a prediction against the measured run (pure)."""
    mk, pk = measured.get("knee") or {}, predicted.get("knee") or {}
    mb, pb = (
        (measured.get("bottleneck") or {}).get("stage"),
        (predicted.get("bottleneck") or {}).get("stage"),
    )
    cap = _rel(mk.get("capacity_per_s"), pk.get("capacity_per_s"))
    rows = [
        Row("capacity", "run", mk.get("capacity_per_s"), pk.get("capacity_per_s"), cap,
            CAPACITY_TOL),
        Row("breaking stage", "run", mb or "none", pb or "none", None if mb == pb else 1.0, 0.0),
        Row(
            "highest sustained rate", "run", mk.get("highest_sustained_rate_per_s"),
            pk.get("highest_sustained_rate_per_s"),
            _rel(mk.get("highest_sustained_rate_per_s"),
                 pk.get("highest_sustained_rate_per_s")), None,
        ),
    ]  # fmt: skip
    knee = mk.get("highest_sustained_rate_per_s")
    mp, pp = _per_point(measured), _per_point(predicted)
    for rate in sorted(mp):
        if rate not in pp:
            continue
        below = knee is not None and rate <= float(knee)
        name = "latency below the knee" if below else "latency above the knee"
        m, p = mp[rate], pp[rate]
        point = f"{rate:g}/s"
        hw, covered, why = _interval(m["latencies"], p["latencies"])
        rows.append(Row(name, point, m["latency"], p["latency"], _rel(m["latency"], p["latency"]),
                        LATENCY_TOL if below else None, hw, covered, why))  # fmt: skip
        rows.append(Row("completion rate", point, m["throughput"], p["throughput"],
                        _rel(m["throughput"], p["throughput"]), None))  # fmt: skip
    within = all(
        r.limit is None
        or (r.error is not None and r.error <= r.limit)
        or (r.limit == 0.0 and r.error is None)
        for r in rows
    )
    return Verdict(tuple(rows), within)


def record(model: ChainModel, run_id: str, verdict: Verdict) -> ChainModel:
    """The model with this check appended (a model keeps where it was checked)."""
    check = Check(run=run_id, checked=now_iso(), errors=verdict.errors(), within=verdict.within)
    others = [c for c in model.checks if c.run != run_id]
    return model.model_copy(update={"checks": [*others, check]})
