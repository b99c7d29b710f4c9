"""The retry load model (parallel submission with retries, METHODS 1.9): its rows and
section, the failure rate per attempt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_pct
from gridbench.jobflow.report.build import Spec, TableDef, level_style, trial_cell
from gridbench.jobflow.report.model import Row, as_dict, mean_of, model_rows


def _kinds(kinds: Any) -> str:
    """'submit_rejected 12, job_failed 2' (a summary's kinds: their mean per trial)."""
    parts = []
    for k, v in as_dict(kinds).items():
        n = mean_of(v)
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
                "submitted": mean_of(a.get("submitted")),
                "failed": mean_of(a.get("failed")),
                "failure_rate": mean_of(a.get("failure_rate")),
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
                "submitted": mean_of(m.get("submissions")),
                "failed": mean_of(m.get("never_succeeded")),
                "failure_rate": mean_of(m.get("average_failure_rate")),
                "time_to_success": mean_of(m.get("time_to_success_s")),
                "time_to_all": mean_of(m.get("time_to_all_success_s")),
                "kinds": "mean of the rates; failed: never succeeded",
            }
        )
    return rows


def retry_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Failure rate per attempt: per trial, and per point (means over its valid trials,
    each attempt over the trials that reached it) when it has several trials."""
    return model_rows(metrics, "retry", _attempt_rows)


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
