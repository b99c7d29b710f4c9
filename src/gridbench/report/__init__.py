"""Renderers of any family's typed report (:class:`gridbench.sections.Report`): CSV and
JSON exports, the terminal summary and the self-contained HTML page. None of them knows a
family's metrics; the families build the report (e.g. ``gridbench.jobflow.report``).
"""

from __future__ import annotations

from pathlib import Path

from gridbench.report.csv_export import export_tables
from gridbench.report.html import render_page, write_page
from gridbench.report.terminal import render_report
from gridbench.sections import Report


def write_reports(run_dir: Path, report: Report) -> dict[str, Path]:
    """Write RUN/tables/<id>.csv (the exported tables), RUN/report.json and RUN/report.html.

    Returns the written paths by name: one per CSV table (its id, e.g. 'latency'),
    'report_json' and 'html'. Raises ResultsError (with where/fix) when the directory
    cannot be written.
    """
    paths = export_tables(run_dir, report)
    paths["html"] = write_page(run_dir, report)
    return paths


__all__ = ["render_page", "render_report", "write_reports"]
