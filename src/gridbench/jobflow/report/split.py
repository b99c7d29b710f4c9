"""The split load model (speedup and overhead against a serial run): its rows and table,
one row per trial and per point (means over its valid trials)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.build import Spec, TableDef, level_style, trial_cell
from gridbench.jobflow.report.model import Row, mean_of, model_rows


def _row(head: Row, m: Mapping[str, Any]) -> Row:
    eq = m.get("result_equal")
    return {
        **head,
        "parts": mean_of(m.get("parts")),
        "serial_s": mean_of(m.get("serial_s")),
        "parallel_s": mean_of(m.get("parallel_s")),
        "speedup": mean_of(m.get("speedup")),
        "efficiency": mean_of(m.get("efficiency")),
        "overhead_s": mean_of(m.get("overhead_s")),
        "result": "equal"
        if eq is True
        else "DIFFERS"
        if eq is False
        else f"not checked: {m.get('result_note') or '-'}",
    }


def split_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial, and per point when it has several trials."""
    return model_rows(metrics, "split", lambda head, m: [_row(head, m)])


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
