"""The split load model (speedup and overhead against a serial run): its rows and table,
one row per trial and per point (means over its valid trials)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    return num(as_dict(v).get("mean")) if isinstance(v, Mapping) else num(v)


def _row(head: Row, m: Mapping[str, Any]) -> Row:
    eq = m.get("result_equal")
    return {
        **head,
        "parts": _mean(m.get("parts")),
        "serial_s": _mean(m.get("serial_s")),
        "parallel_s": _mean(m.get("parallel_s")),
        "speedup": _mean(m.get("speedup")),
        "efficiency": _mean(m.get("efficiency")),
        "overhead_s": _mean(m.get("overhead_s")),
        "result": "equal"
        if eq is True
        else "DIFFERS"
        if eq is False
        else f"not checked: {m.get('result_note') or '-'}",
    }


def split_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial, and per point when it has several trials."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, "split")
        rows += [_row(trial_head(p, t), m) for t, m in ts]
        summ = model_of(as_dict(p.get("summary")), "split")
        if len(ts) > 1 and summ:
            rows.append(_row(point_head(p, any(t.get("valid", True) for t, _ in ts)), summ))
    return rows


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.0f}%"


split_table = TableDef(
    "split",
    "Split: speedup and overhead against a serial run",
    split_rows,
    (
        Spec("trial", trial_cell),
        Spec("point", "point"),
        Spec("parts", "parts", True),
        Spec("serial s", "serial_s", True),
        Spec("parallel s", "parallel_s", True),
        Spec("speedup", "speedup", True),
        Spec("efficiency", "efficiency", True, _pct),
        Spec("overhead s", "overhead_s", True),
        Spec("result", "result"),
    ),
    note="The workload as one job, then as N parts at once through the backend: speedup = "
    "serial ÷ parallel makespan (submit to the end the client saw), efficiency = speedup ÷ "
    "N, overhead = parallel − serial ÷ N (what the middleware adds to an ideal split); "
    "result: the parts' combined output against the serial one (sha256).",
    style=level_style,
)
