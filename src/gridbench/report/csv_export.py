"""Write a report's exported tables as CSV (RUN/tables/<id>.csv) and the report as
RUN/report.json (the metrics, every exported table, the headline and the summary)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import ResultsError
from gridbench.sections import Cell, Finding, Report, Table
from gridbench.store.layout import write_text_atomic
from gridbench.store.safe_open import refuse_links

Row = dict[str, Cell]

REPORT_SCHEMA = "gridbench.report/1"
#: What to do when a report file cannot be written.
WRITABLE = "check that the results directory is writable"


@contextmanager
def writing(what: str, where: Path, fix: str = WRITABLE) -> Iterator[None]:
    """Turn an OSError while writing ``what`` into a ResultsError naming it, with the fix."""
    try:
        yield
    except OSError as exc:
        raise ResultsError(
            f"cannot write {what}: {exc.strerror or exc}", where=str(where), fix=fix
        ) from exc


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


def write_csv_tables(run_dir: Path, tables: Sequence[Table]) -> dict[str, Path]:
    """Write each table with rows to RUN/tables/<id>.csv; return the paths by id. A
    ``tables`` link (or a link in it) is refused: it would be written through."""
    out_dir = run_dir / "tables"
    paths: dict[str, Path] = {}
    with writing("CSV tables", out_dir):
        refuse_links(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for t in tables:
            if not t.rows:
                continue
            path = out_dir / f"{t.id}.csv"
            # Keys in column order; polars writes floats in shortest round-trip form.
            text = pl.DataFrame(_defuse(t.records()), infer_schema_length=None).write_csv()
            write_text_atomic(path, text)
            paths[t.id] = path
    return paths


def _finding(f: Finding) -> dict[str, str]:
    return {"status": f.status, "text": f.text, "evidence": f.evidence}


def report_document(report: Report) -> dict[str, Any]:
    """The report.json document: schema, family, the metrics as analysed, every exported
    table (by id), the headline and the evaluation summary."""
    s = report.summary
    doc = {
        "schema": REPORT_SCHEMA,
        "family": report.family,
        "title": report.title,
        "metrics": report.data,
        "tables": {t.id: t.records() for t in report.exported()},
        "headline": {
            "title": report.headline.title,
            "verdict": report.headline.verdict,
            "findings": [_finding(f) for f in report.headline.findings],
        },
        "summary": {
            "tested": [list(kv) for kv in s.tested],
            "outcome": [_finding(f) for f in s.outcome],
            "left_open": list(s.left_open),
            "not_tested": list(s.not_tested),
        },
    }
    cleaned: dict[str, Any] = _clean(doc)
    return cleaned


def write_report_json(run_dir: Path, report: Report) -> Path:
    """Write RUN/report.json and return its path."""
    path = run_dir / "report.json"
    text = json.dumps(report_document(report), indent=1, allow_nan=False)
    with writing("report.json", path):
        write_text_atomic(path, text + "\n")
    return path


def export_tables(run_dir: Path, report: Report) -> dict[str, Path]:
    """Write the CSVs and report.json of ``report``.

    Returns the paths by table id, plus 'report_json'.
    """
    paths = write_csv_tables(run_dir, report.exported())
    paths["report_json"] = write_report_json(run_dir, report)
    return paths
