"""The retry load model (parallel submission with retries, METHODS 1.9): its rows and
section, the failure rate per attempt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_pct
from gridbench.jobflow.report.build import Spec, TableDef, level_style, trial_cell
from gridbench.jobflow.report.model import (
    Row,
    as_dict,
    model_of,
    model_trials,
    num,
    point_head,
    points,
    trial_head,
)


def _mean(v: Any) -> float | None:
    """A trial's number, or a point summary's rep object's mean."""
    return num(as_dict(v).get("mean")) if isinstance(v, Mapping) else num(v)


def _kinds(kinds: Any) -> str:
    """'submit_rejected 12, job_failed 2' (a summary's kinds: their mean per trial)."""
    parts = []
    for k, v in as_dict(kinds).items():
        n = _mean(v)
        if n:
            parts.append(f"{k} {n:g}")
    return ", ".join(parts)


def _attempt_rows(head: Row, m: Mapping[str, Any]) -> list[Row]:
    """One row per attempt of a trial's (or a point summary's) retry object, then the
    mean of the per-attempt rates (the seed's average failure rate)."""
    rows: list[Row] = []
    for key, a in as_dict(m.get("attempts")).items():
        a = as_dict(a)
        rows.append(
            {
                **head,
                "attempt": key,
                "submitted": _mean(a.get("submitted")),
                "failed": _mean(a.get("failed")),
                "failure_rate": _mean(a.get("failure_rate")),
                "time_to_success": None,
                "time_to_all": None,
                "kinds": _kinds(a.get("kinds")),
            }
        )
    if rows:
        rows.append(
            {
                **head,
                "attempt": "average",
                "submitted": _mean(m.get("submissions")),
                "failed": _mean(m.get("never_succeeded")),
                "failure_rate": _mean(m.get("average_failure_rate")),
                "time_to_success": _mean(m.get("time_to_success_s")),
                "time_to_all": _mean(m.get("time_to_all_success_s")),
                "kinds": "mean of the rates; failed: never succeeded",
            }
        )
    return rows


def retry_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Failure rate per attempt: per trial, and per point (means over its valid trials,
    each attempt over the trials that reached it) when it has several trials."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, "retry")
        for t, m in ts:
            rows.extend(_attempt_rows(trial_head(p, t), m))
        summ = model_of(as_dict(p.get("summary")), "retry")
        if len(ts) > 1 and summ:
            valid = any(t.get("valid", True) for t, _ in ts)
            rows.extend(_attempt_rows(point_head(p, valid), summ))
    return rows


def _pct(x: Any) -> str:
    return fmt_pct(None if x is None else 100.0 * float(x))


_RETRY = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("attempt", "attempt"),
    Spec("submitted", "submitted", True),
    Spec("failed", "failed", True),
    Spec("failure rate", "failure_rate", True, _pct),
    Spec("time to success s", "time_to_success", True),
    Spec("all succeeded s", "time_to_all", True),
    Spec("failures by kind", "kinds"),
)


#: The seed's parallel-submission table: failed ÷ submitted at each attempt.
retry_table = TableDef(
    "retry",
    "Retry: failure rate per attempt = failed ÷ submitted at once",
    retry_rows,
    _RETRY,
    note="M jobs submitted at the same instant; the failures resubmitted together, up to R "
    "times (METHODS 1.9). The 'average' row is the mean of the per-attempt rates (the "
    "seed's average failure rate); its 'failed' is the jobs that never succeeded, its time "
    "to success a job's first submission to the end of its attempt that succeeded (mean), "
    "and 'all succeeded' the first submission to the last success. Point rows give means "
    "over the valid trials.",
    style=level_style,
)
