"""Per-trial and per-point rows beside the measurements: thresholds, validity, outliers,
point totals and the per-user breakdown (re-exported by :mod:`~gridbench.jobflow.report.rows`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.clocks import negative_text
from gridbench.jobflow.report.model import (
    Row,
    as_dict,
    as_list,
    num,
    nums,
    point_cols,
    points,
    rate_label,
    trial_entries,
    trials,
)

_JOB_COUNTS = ("planned", "submitted", "completed", "failed", "dropped", "late")
_VALIDITY_FIGURES = ("late_share", "dropped_share", "client_cpu_max", "client_cpu_mean")


def threshold_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The spec's thresholds with the measured value and pass/fail."""
    rows: list[Row] = []
    for th in as_list(metrics.get("thresholds")):
        d = as_dict(th)
        rows.append(
            {
                "metric": str(d.get("metric", "")),
                "op": str(d.get("op", "")),
                "value": num(d.get("value")),
                "actual": num(d.get("actual")),
                "passed": bool(d.get("passed", False)),
                "where": str(d.get("where") or ""),
            }
        )
    return rows


def validity_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial: the validity verdict, its reasons and the evidence behind it."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            v = as_dict(t.get("validity"))
            jobs = as_dict(t.get("jobs"))
            bq = as_dict(t.get("background_queue"))
            reasons = [str(r) for r in as_list(v.get("reasons"))]
            coarse = [str(c) for c in as_list(v.get("coarse_precision"))]
            rows.append(
                {
                    **point_cols(p),
                    "trial_id": t.get("trial_id"),
                    "status": t.get("status"),
                    "valid": bool(t.get("valid", v.get("valid", True))),
                    "reasons": "; ".join(reasons),
                    **nums(jobs, {k: k for k in _JOB_COUNTS}),
                    **nums(v, {k: k for k in _VALIDITY_FIGURES}),
                    "client_bound": bool(v.get("client_bound", False)),
                    "coarse_precision": "; ".join(coarse),
                    "negative_segments": negative_text(v),
                    "background_queue_start": num(bq.get("start")),
                    "background_queue_end": num(bq.get("end")),
                    "bottleneck": t.get("bottleneck"),
                }
            )
    return rows


def outlier_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Outlying trials per point, with the reason each was kept or dropped."""
    rows: list[Row] = []
    for p in points(metrics):
        for o in as_list(as_dict(p.get("summary")).get("outliers")):
            d = as_dict(o)
            rows.append(
                {
                    **point_cols(p),
                    "trial_id": d.get("trial_id"),
                    "metric": str(d.get("metric", "")),
                    "value": num(d.get("value")),
                    "reason": str(d.get("reason", "")),
                    "kept": bool(d.get("kept", False)),
                }
            )
    return rows


def _job_total(ts: list[Row], key: str) -> int:
    return int(sum(num(as_dict(t.get("jobs")).get(key)) or 0.0 for t in ts))


def point_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per point: rate, trial counts, bottleneck and job totals."""
    rows: list[Row] = []
    for p in points(metrics):
        summ = as_dict(p.get("summary"))
        ts = trials(p)
        rows.append(
            {
                **point_cols(p),
                "rate": rate_label(p),
                "parameters": json.dumps(as_dict(p.get("point")), sort_keys=True),
                "trials": len(ts),
                "valid_trials": num(summ.get("valid_trials")),
                "invalid_trials": num(summ.get("invalid_trials")),
                "bottleneck": p.get("bottleneck"),
                "planned": _job_total(ts, "planned"),
                "submitted": _job_total(ts, "submitted"),
                "completed": _job_total(ts, "completed"),
                "failed": _job_total(ts, "failed"),
            }
        )
    return rows


# --- closed load models (metrics ``model`` objects; METHODS 1.6-1.8) ---------------------


_OVERALL = {f"overall_{k}_s": k for k in ("mean", "p50", "p90", "max")}


def user_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial and user (spec ``users``): job counts, failures and overall latency."""
    rows: list[Row] = []
    for p, t, user, u in trial_entries(metrics, lambda t: t.get("by_user")):
        kinds = as_dict(u.get("failures"))
        rows.append(
            {
                **point_cols(p),
                "trial_id": t.get("trial_id"),
                "user": user,
                **nums(u, {"jobs": "jobs", "completed": "completed", "failed": "failed"}),
                "failures": ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())),
                **nums(as_dict(u.get("overall")), _OVERALL),
                "submit_call_mean_s": num(as_dict(u.get("submit_call")).get("mean")),
            }
        )
    return rows
