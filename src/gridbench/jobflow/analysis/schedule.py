"""The figure of each trial against its start time (METHODS 1.10).

The seeds spread repetitions over 24 hours to average out daily load; this shows whether
the load did vary: every trial's main figure (the load model's growth quantity, else the
overall latency) beside its start time, hour of day (UTC) and the backend's background
queue at its start and end, and the figure's mean per hour of day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from gridbench.jobflow import loads as load_models

FALLBACK = ("latency.overall.mean", "overall latency", "s")


def _figure(trial: Mapping[str, Any], path: str) -> float | None:
    """``path`` in a trial's metrics (a stats object's mean), or None."""
    cur: Any = trial
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if isinstance(cur, Mapping):
        cur = cur.get("mean")
    ok = isinstance(cur, int | float) and not isinstance(cur, bool) and math.isfinite(cur)
    return float(cur) if ok else None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def trial_times(
    points: Sequence[Mapping[str, Any]], load_model: str | None
) -> dict[str, Any] | None:
    """Each trial's figure against its start, in start order, and the mean per hour of day.

    ``{quantity, label, unit, trials: [{trial_id, point, started_ns, start_utc, hour,
    figure, queue_start, queue_end}], by_hour: [{hour, trials, mean, min, max}]}``;
    None with fewer than 2 timed trials (nothing to compare).
    """
    model = load_models.find(load_model)
    quantity = model.growth_quantity(points) if model is not None else None
    path, label, unit = quantity or FALLBACK
    recs = [
        {
            "trial_id": str(t.get("trial_id")),
            "point": dict(p.get("point") or {}),
            "started_ns": _int_or_none(t.get("started_ns")),
            "figure": _figure(t, path),
            "queue_start": _int_or_none((t.get("background_queue") or {}).get("start")),
            "queue_end": _int_or_none((t.get("background_queue") or {}).get("end")),
        }
        for p in points
        for t in p.get("trials") or []
        if isinstance(t, Mapping)
    ]
    recs = [r for r in recs if r["started_ns"] is not None]
    if len(recs) < 2:
        return None
    frame = pl.DataFrame(
        {
            "started_ns": [r["started_ns"] for r in recs],
            "figure": [r["figure"] for r in recs],
            "i": list(range(len(recs))),
        },
        schema={"started_ns": pl.Int64, "figure": pl.Float64, "i": pl.Int64},
    ).with_columns(start=pl.from_epoch("started_ns", time_unit="ns").dt.replace_time_zone("UTC"))
    frame = frame.with_columns(
        hour=pl.col("start").dt.hour(),
        start_utc=pl.col("start").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
    ).sort("started_ns")
    trials = [
        {**recs[i], "start_utc": s, "hour": h}
        for i, s, h in frame.select("i", "start_utc", "hour").iter_rows()
    ]
    by_hour = (
        frame.group_by("hour")
        .agg(
            trials=pl.len(),
            mean=pl.col("figure").mean(),
            min=pl.col("figure").min(),
            max=pl.col("figure").max(),
        )
        .sort("hour")
    )
    return {
        "quantity": path,
        "label": label,
        "unit": unit,
        "trials": trials,
        "by_hour": by_hour.to_dicts(),
    }
