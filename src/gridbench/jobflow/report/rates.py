"""Scheduler-style throughput beside the EDGI average: Flux's end-to-end figure, the
submit and dispatch rates, and Kubernetes scheduler_perf's per-second percentiles
(issue 14 item 7; formulas in docs/metrics.md, computed by ``analysis.rates``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.build import Spec, TableDef, trial_cell
from gridbench.jobflow.report.model import Row, all_trials, as_dict, num, trial_head


def _count(v: Any) -> int | None:
    x = num(v)
    return None if x is None else int(x)


def rates_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial that has a ``rates`` object (analysed since it existed)."""
    rows: list[Row] = []
    for p, t in all_trials(metrics):
        r = as_dict(t.get("rates"))
        if not r:
            continue
        ps = as_dict(r.get("per_second"))
        rows.append(
            {
                **trial_head(p, t),
                "side": r.get("side"),
                "submit_stage": r.get("submit_stage"),
                "start_stage": r.get("start_stage"),
                "end_stage": r.get("end_stage"),
                "completed": _count(r.get("completed")),
                "end_to_end_per_s": num(r.get("end_to_end_per_s")),
                "submit_per_s": num(r.get("submit_per_s")),
                "dispatch_per_s": num(r.get("dispatch_per_s")),
                "per_second_bins": _count(ps.get("bins")),
                "per_second_mean": num(ps.get("mean")),
                "per_second_p50": num(ps.get("p50")),
                "per_second_p90": num(ps.get("p90")),
                "per_second_p99": num(ps.get("p99")),
            }
        )
    return rows


def _stamps(r: Row) -> str:
    start = r["start_stage"] or "–"
    return f"{r['side']}: {r['submit_stage']} → {start} → {r['end_stage']}"


_RATES = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("stamps (submit → start → end)", _stamps),
    Spec("completed", "completed", True),
    Spec("end to end jobs/s", "end_to_end_per_s", True),
    Spec("submit jobs/s", "submit_per_s", True),
    Spec("dispatch jobs/s", "dispatch_per_s", True),
    Spec("per-second p50", "per_second_p50", True),
    Spec("p90", "per_second_p90", True),
    Spec("p99", "per_second_p99", True),
)


#: Throughput as Flux and Kubernetes' scheduler_perf report it, per trial.
rates_table = TableDef(
    "rates",
    "Throughput, scheduler-style (Flux, scheduler_perf)",
    rates_rows,
    _RATES,
    note="End to end: jobs completed ÷ (last end − first submit), on server-side stamps "
    "when the chain has them, else the client's (Flux). Submit and dispatch: jobs ÷ (last − "
    "first) stamp of that stage. Per-second: completions in each 1-s bin from the first "
    "submit to the last completion, empty bins included, and their percentiles "
    "(Kubernetes scheduler_perf). The EDGI average is in the table above.",
    scope="full",
)
