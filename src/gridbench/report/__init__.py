"""Reports of an experiment: tables, CSV/JSON exports, the terminal summary, the HTML page.

Everything here reads the analysis output (metrics.json, schema gridbench.metrics/1, and
per-trial series.json) and never the raw events.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.report.csv_export import export_tables
from gridbench.report.html import write_html_report
from gridbench.report.loading import load_metrics, load_series
from gridbench.report.model import check_metrics
from gridbench.report.terminal import render_summary


def write_reports(
    run_dir: Path,
    metrics: dict[str, Any],
    series: Mapping[str, dict[str, Any]] | None = None,
    spec_summary: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write RUN/tables/*.csv, RUN/report.json and RUN/report.html.

    Returns the written paths by name: one per CSV table (e.g. 'latency', 'throughput'),
    'report_json' and 'html'. Raises ResultsError (with where/fix) when ``metrics`` is not
    a gridbench.metrics/1 document or the directory cannot be written.
    """
    check_metrics(metrics, where=str(run_dir / "metrics.json"))
    paths = export_tables(run_dir, metrics)
    paths["html"] = write_html_report(run_dir, metrics, dict(series or {}), spec_summary)
    return paths


__all__ = [
    "load_metrics",
    "load_series",
    "render_summary",
    "write_html_report",
    "write_reports",
]
