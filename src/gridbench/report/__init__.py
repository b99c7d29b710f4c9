"""Renderers of any family's typed report (:class:`gridbench.sections.Report`): CSV and
JSON exports, the terminal summary and the self-contained HTML page. None of them knows a
family's metrics; the families build the report (e.g. ``gridbench.jobflow.report``).

Light at import: each renderer (the HTML page brings plotly and jinja2) is imported when
first used, so a module of this package (a table for the command line) costs only its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.sections import Report

if TYPE_CHECKING:
    from gridbench.report.html import render_page as render_page
    from gridbench.report.terminal import render_report as render_report


def write_reports(run_dir: Path, report: Report) -> dict[str, Path]:
    """Write RUN/tables/<id>.csv (the exported tables), RUN/report.json and RUN/report.html.

    Returns the written paths by name: one per CSV table (its id, e.g. 'latency'),
    'report_json' and 'html'. Raises ResultsError (with where/fix) when the directory
    cannot be written.
    """
    from gridbench.report.csv_export import export_tables
    from gridbench.report.html import write_page

    paths = export_tables(run_dir, report)
    paths["html"] = write_page(run_dir, report)
    return paths


def __getattr__(name: str) -> Any:
    """``render_page`` and ``render_report``, imported when first asked for."""
    if name == "render_page":
        from gridbench.report.html import render_page

        return render_page
    if name == "render_report":
        from gridbench.report.terminal import render_report

        return render_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["render_page", "render_report", "write_reports"]
