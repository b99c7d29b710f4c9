"""The sustain load model (MAPPER's response-time benchmark): its rows and sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_s
from gridbench.jobflow.report.build import Spec, TableDef, level_style, trial_cell
from gridbench.jobflow.report.model import (
    Row,
    as_dict,
    model_of,
    model_trials,
    num,
    nums,
    point_cols,
    point_head,
    points,
    stat_cols,
    trial_entries,
    trial_head,
)

_SUSTAIN_COUNTS = (
    "done",
    "canceled",
    "failed",
    "lost",
    "exceptions",
    "submit_exceptions",
    "query_exceptions",
)


def sustain_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The MAPPER response-time table: per trial (and per point, pooled over its valid
    trials, when it has several) the avg/min/max submit and query times and the Done,
    Canceled, Failed and exception counts."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, "sustain")
        for t, m in ts:
            counts = as_dict(m.get("counts"))
            rows.append(
                {
                    **trial_head(p, t),
                    "users": num(m.get("users")),
                    **stat_cols("submit", as_dict(m.get("submit"))),
                    **stat_cols("query", as_dict(m.get("query"))),
                    **{c: num(counts.get(c)) for c in _SUSTAIN_COUNTS},
                }
            )
        summ = model_of(as_dict(p.get("summary")), "sustain")
        if len(ts) > 1 and summ:
            pool = as_dict(summ.get("pooled"))
            valid = [m for t, m in ts if t.get("valid", True)]
            rows.append(
                {
                    **point_head(p, bool(valid)),
                    "users": num(as_dict(summ.get("users")).get("mean")),
                    **stat_cols("submit", as_dict(pool.get("submit"))),
                    **stat_cols("query", as_dict(pool.get("query"))),
                    **{
                        c: sum(num(as_dict(m.get("counts")).get(c)) or 0.0 for m in valid)
                        for c in _SUSTAIN_COUNTS
                    },
                }
            )
    return rows


_USER_NUMS = {
    "submitted": "submitted",
    "submit_mean_s": "submit_mean",
    "submit_max_s": "submit_max",
    "queries": "queries",
    "query_mean_s": "query_mean",
    "done": "done",
    "canceled": "canceled",
    "failed": "failed",
    "exceptions": "exceptions",
}


def sustain_user_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial and virtual user: submit time (mean, max), query time and job counts."""
    return [
        {**point_cols(p), "trial_id": t.get("trial_id"), "user": user, **nums(u, _USER_NUMS)}
        for p, t, user, u in trial_entries(
            metrics, lambda t: model_of(t, "sustain").get("per_user")
        )
    ]


_TIMES = [(op, k) for op in ("submit", "query") for k in ("avg", "min", "max")]

_SUSTAIN = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    *(Spec(f"{op} {k} (s)", f"{op}_{k}_s", True, fmt_s) for op, k in _TIMES),
    *(Spec(label, label.lower(), True) for label in ("Done", "Canceled", "Failed", "exceptions")),
)


#: The MAPPER response-time table: submit and query times, job and exception counts.
sustain_table = TableDef(
    "sustain",
    "Sustain: submit and query times (s), job counts",
    sustain_rows,
    _SUSTAIN,
    note="The MAPPER response-time table: submit_job and query_state call times, jobs by "
    "end state and exceptions (submit errors and failed queries). Point rows pool the "
    "jobs of the point's valid trials.",
    style=level_style,
)
