"""Read RUN/metrics.json and RUN/trials/*/series.json for the reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.jobflow.report.model import check_metrics
from gridbench.store.layout import read_json


def _read_json(path: Path) -> Any:
    return read_json(
        path,
        missing_fix="run `gridbench analyze` on this run first",
        bad_fix="re-run `gridbench analyze`; the file may have been cut short",
    )


def load_metrics(run_dir: Path) -> dict[str, Any]:
    """RUN/metrics.json, checked to be a gridbench.metrics/1 document."""
    path = run_dir / "metrics.json"
    metrics = _read_json(path)
    check_metrics(metrics, where=str(path))
    result: dict[str, Any] = metrics
    return result


def load_series(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every trial's series.json by trial id; trials without one are left out."""
    out: dict[str, dict[str, Any]] = {}
    trials_dir = run_dir / "trials"
    if not trials_dir.is_dir():
        return out
    for path in sorted(trials_dir.glob("*/series.json")):
        data = _read_json(path)
        if not isinstance(data, dict):
            raise ResultsError(
                "series.json is not a JSON object",
                where=str(path),
                fix="re-run `gridbench analyze`",
            )
        out[path.parent.name] = data
    return out
