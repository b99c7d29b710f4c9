"""The batch load model (MAPPER's throughput benchmark): its rows and sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_pm, fmt_s
from gridbench.jobflow.report.build import (
    Spec,
    TableDef,
    level_style,
    trial_cell,
)
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
from gridbench.sections import Shown

_BATCH_COUNTS = ("submitted", "acknowledged", "ended", "completed", "failed")


def batch_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The MAPPER throughput table: per trial N (jobs ended), makespan (last end − first
    submit), throughput N ÷ makespan and the submission rate; per point (several trials)
    the mean throughput with its std and 95% CI across the valid trials."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, "batch")
        for t, m in ts:
            rows.append(
                {
                    **trial_head(p, t),
                    "end_stage": str(m.get("end_stage") or ""),
                    **{c: num(m.get(c)) for c in _BATCH_COUNTS},
                    "makespan_s": num(m.get("makespan_s")),
                    "throughput_per_s": num(m.get("throughput_per_s")),
                    "throughput_std_per_s": None,
                    "throughput_ci95_per_s": None,
                    "submit_rate_per_s": num(m.get("submit_rate_per_s")),
                    "submit_avg_s": num(as_dict(m.get("submit")).get("mean")),
                }
            )
        summ = model_of(as_dict(p.get("summary")), "batch")
        if len(ts) > 1 and summ:
            valid = [m for t, m in ts if t.get("valid", True)]
            tp = as_dict(summ.get("throughput_per_s"))
            rows.append(
                {
                    **point_head(p, bool(valid)),
                    "end_stage": str(valid[0].get("end_stage") or "") if valid else "",
                    **{c: sum(num(m.get(c)) or 0.0 for m in valid) for c in _BATCH_COUNTS},
                    "makespan_s": num(as_dict(summ.get("makespan_s")).get("mean")),
                    "throughput_per_s": num(tp.get("mean")),
                    "throughput_std_per_s": num(tp.get("std")),
                    "throughput_ci95_per_s": num(tp.get("ci95")),
                    "submit_rate_per_s": num(as_dict(summ.get("submit_rate_per_s")).get("mean")),
                    "submit_avg_s": num(
                        as_dict(as_dict(summ.get("pooled")).get("submit")).get("mean")
                    ),
                }
            )
    return rows


_BATCH = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("submitted", "submitted", True),
    Spec("ended (N)", "ended", True),
    Spec("failed", "failed", True),
    Spec("end stage", "end_stage"),
    Spec("makespan (s)", "makespan_s", True, fmt_s),
    Spec(
        "throughput (jobs/s)",
        lambda r: (
            Shown(r["throughput_per_s"], fmt_pm(r["throughput_per_s"], r["throughput_ci95_per_s"]))
            if r["level"] == "point"
            else r["throughput_per_s"]
        ),
        True,
    ),
    Spec("submit rate (jobs/s)", "submit_rate_per_s", True),
)


#: The MAPPER throughput table: N, makespan and N ÷ makespan.
batch_table = TableDef(
    "batch",
    "Batch: throughput = jobs ended ÷ (last end − first submit)",
    batch_rows,
    _BATCH,
    note="The MAPPER throughput benchmark: N ÷ (last end − first submit). Point rows give "
    "the mean ± 95% CI across the valid trials.",
    style=level_style,
)
