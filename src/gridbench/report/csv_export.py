"""Write the report tables as CSV (RUN/tables/*.csv) and RUN/report.json (metrics + tables)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.report.model import check_metrics
from gridbench.report.tables import Row, all_tables, as_frame
from gridbench.store.layout import write_text_atomic

REPORT_SCHEMA = "gridbench.report/1"


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null (strict JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


#: Leading characters that make spreadsheet programs evaluate a cell as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _defuse(rows: list[Row]) -> list[Row]:
    """Prefix text cells that a spreadsheet would run as a formula with a quote (names and
    messages come from backends and job output; numbers are left alone)."""
    return [
        {
            k: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            for k, v in r.items()
        }
        for r in rows
    ]


def write_csv_tables(run_dir: Path, tables: Mapping[str, list[Row]]) -> dict[str, Path]:
    """Write each non-empty table to RUN/tables/<name>.csv; return the paths by name."""
    out_dir = run_dir / "tables"
    paths: dict[str, Path] = {}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            if not rows:
                continue
            path = out_dir / f"{name}.csv"
            # Keys in first-seen order; polars writes floats in shortest round-trip form.
            as_frame(_defuse(rows)).write_csv(path)
            paths[name] = path
    except OSError as exc:
        raise ResultsError(
            f"cannot write CSV tables: {exc.strerror or exc}",
            where=str(out_dir),
            fix="check that the results directory is writable",
        ) from exc
    return paths


def report_document(metrics: Mapping[str, Any], tables: Mapping[str, list[Row]]) -> dict[str, Any]:
    """The report.json document: schema, the metrics as analysed, and every table."""
    doc = {"schema": REPORT_SCHEMA, "metrics": metrics, "tables": dict(tables)}
    cleaned: dict[str, Any] = _clean(doc)
    return cleaned


def write_report_json(
    run_dir: Path, metrics: Mapping[str, Any], tables: Mapping[str, list[Row]]
) -> Path:
    """Write RUN/report.json and return its path."""
    path = run_dir / "report.json"
    text = json.dumps(report_document(metrics, tables), indent=1, allow_nan=False)
    try:
        write_text_atomic(path, text + "\n")
    except OSError as exc:
        raise ResultsError(
            f"cannot write report.json: {exc.strerror or exc}",
            where=str(path),
            fix="check that the results directory is writable",
        ) from exc
    return path


def export_tables(run_dir: Path, metrics: Mapping[str, Any]) -> dict[str, Path]:
    """Build every table from ``metrics`` and write the CSVs and report.json.

    Returns the paths by table name, plus 'report_json'.
    """
    check_metrics(metrics, where=str(run_dir / "metrics.json"))
    tables = all_tables(metrics)
    paths = write_csv_tables(run_dir, tables)
    paths["report_json"] = write_report_json(run_dir, metrics, tables)
    return paths
