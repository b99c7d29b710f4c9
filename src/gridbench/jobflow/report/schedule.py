"""The figure per trial against its start time and hour of day, with the background
queue at each trial (METHODS 1.10: repetitions spread over time)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_val
from gridbench.jobflow.report.build import Spec, TableDef
from gridbench.jobflow.report.model import Row, as_dict, as_list, num, params_label
from gridbench.sections import Table


def _label(metrics: Mapping[str, Any]) -> str:
    tod = as_dict(metrics.get("time_of_day"))
    unit = str(tod.get("unit") or "")
    return str(tod.get("label") or "figure") + (f" ({unit})" if unit else "")


def time_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial in start order: start (UTC), hour, background queue, figure."""
    tod = as_dict(metrics.get("time_of_day"))
    rows: list[Row] = []
    for t in as_list(tod.get("trials")):
        d = as_dict(t)
        rows.append(
            {
                "trial_id": str(d.get("trial_id") or ""),
                "point": params_label(d.get("point")),
                "start_utc": str(d.get("start_utc") or ""),
                "hour": num(d.get("hour")),
                "queue_start": num(d.get("queue_start")),
                "queue_end": num(d.get("queue_end")),
                "quantity": str(tod.get("quantity") or ""),
                "figure": num(d.get("figure")),
            }
        )
    return rows


def hour_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The figure's mean, min and max per hour of day (UTC); none within a single hour."""
    tod = as_dict(metrics.get("time_of_day"))
    rows = [
        {k: num(as_dict(h).get(k)) for k in ("hour", "trials", "mean", "min", "max")}
        for h in as_list(tod.get("by_hour"))
    ]
    return rows if len(rows) > 1 else []


_TIMES = (
    Spec("trial", "trial_id"),
    Spec("point", "point"),
    Spec("start (UTC)", "start_utc"),
    Spec("hour", "hour", True),
    Spec(
        "background queue",
        lambda r: f"{fmt_val(r['queue_start'])} → {fmt_val(r['queue_end'])}",
    ),
)


def time_table(metrics: Mapping[str, Any]) -> Table | None:
    """The figure of every trial against its start time, the figure named in its column."""
    return TableDef(
        "time_of_day",
        "Figure per trial against its start time",
        time_rows,
        (*_TIMES, Spec(_label(metrics), "figure", True)),
        note="Trials in start order with the load model's main figure and the backend's "
        "background queue (other jobs queued) at the trial's start and end; "
        "'–' where the backend does not report its queue.",
        scope="full",
    )(metrics)


_HOURS = (
    Spec("hour of day (UTC)", "hour", True),
    Spec("trials", "trials", True),
    Spec("mean", "mean", True),
    Spec("min", "min", True),
    Spec("max", "max", True),
)

#: The figure per hour of day, when the trials span more than one hour.
hour_table = TableDef(
    "time_of_day_hours",
    "Figure by hour of day",
    hour_rows,
    _HOURS,
    note="Mean, min and max of the figure over the trials started in each hour (UTC).",
    scope="full",
)
