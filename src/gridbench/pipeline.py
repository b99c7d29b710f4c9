"""Analysis followed by reports: the one path shared by run, analyze, report and the web."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from gridbench.store.layout import RunDir, read_json

log = logging.getLogger(__name__)


def analyze_and_report(run_path: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """Analyse a results directory, write metrics.json and every report; return both."""
    from gridbench.analysis.experiment import analyze_run
    from gridbench.report import load_series, write_reports

    run = RunDir.open(run_path)
    metrics = analyze_run(run.path, write=True)
    series = load_series(run.path)
    exp = run.read_experiment()
    spec_summary = {"experiment": exp, "spec_yaml": _read(run.spec_file), "plan": _plan(run)}
    paths = write_reports(run.path, metrics, series, spec_summary)
    thresholds = metrics.get("thresholds") or []
    verdict = "fail" if any(not t.get("passed") for t in thresholds) else "pass"
    if not metrics.get("validity", {}).get("valid", True):
        verdict += " (invalid trials)"
    run.update_experiment(verdict=verdict, analysed=True)
    _warm_dashboard(run.path)
    return metrics, {k: Path(v) for k, v in paths.items()}


def _warm_dashboard(run_path: Path) -> None:
    """Pre-build the dashboard's view of the run, so its first page view is fast even for a
    million jobs (docs/dashboard.md); the reports are written already, so a failure here
    only costs that speed."""
    from gridbench.web.results import warm

    try:
        warm(run_path, run_path.parent)
    except Exception as exc:  # never fail an analysis for a cache
        log.warning("dashboard view of %s not pre-built: %s", run_path.name, exc)


def exit_code_for(metrics: dict[str, Any]) -> int:
    """1 when any threshold failed, else 0."""
    return 1 if any(not t.get("passed") for t in metrics.get("thresholds") or []) else 0


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8") if p.exists() else ""


def _plan(run: RunDir) -> Any:
    return read_json(run.plan_file) if run.plan_file.exists() else None
