"""What the command line lends each family's commands (:class:`gridbench.family.Ui`): the
consoles, the results root, and a run analysed through its family with its reports
written and its summary shown."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from gridbench.console import SETTINGS, console, err_console, safe_markup

if TYPE_CHECKING:
    from rich.console import Console


def results_root(args: argparse.Namespace) -> Path:
    """The results root of ``--results``, $GRIDBENCH_RESULTS or ./results."""
    from gridbench.store.layout import results_root as root_of

    return root_of(getattr(args, "results", None))


def _warm_dashboard(run_path: Path) -> None:
    """Pre-build the dashboard's view of the run, so that its first page view is fast even
    for a million jobs (docs/dashboard.md)."""
    from gridbench.web.results import warm

    warm(run_path, run_path.parent)


class CliUi:
    """What the command line lends each family's commands (``gridbench.family.Ui``)."""

    @property
    def console(self) -> Console:
        """Standard output's console."""
        return console.real

    @property
    def err_console(self) -> Console:
        """Standard error's console."""
        return err_console.real

    def results_root(self, args: argparse.Namespace) -> Path:
        """The results root of ``--results``, $GRIDBENCH_RESULTS or ./results."""
        return results_root(args)

    def analyze_and_show(self, run_path: Path, *, as_json: bool = False) -> int:
        """Analyse through the run's family, write the reports, show the summary."""
        return analyze_and_show(run_path, as_json=as_json)

    def serve(self, args: argparse.Namespace) -> int:
        """The dashboard (``gridbench serve``) with ``args``' options."""
        from gridbench.web.command import cmd_serve

        return cmd_serve(args)


def analyze_and_show(run_path: Path, *, as_json: bool = False) -> int:
    """Analyse ``run_path`` through its family, write its reports and show the summary (or
    print the metrics as JSON); the family's exit code."""
    from gridbench.pipeline import analyze_and_report
    from gridbench.report.terminal import render_report

    done = analyze_and_report(run_path, after=(_warm_dashboard,))
    if as_json:
        print(json.dumps(done.metrics, indent=1, default=str))
        return done.exit_code
    render_report(done.report, console.real, verbose=SETTINGS.verbose)
    if "html" in done.paths:
        console.print(f"HTML report: [cyan]{safe_markup(done.paths['html'])}[/]")
    csvs = [p for p in done.paths.values() if p.suffix == ".csv"]
    if csvs:
        console.print(
            f"tables (CSV): [cyan]{safe_markup(csvs[0].parent)}[/]; JSON: "
            f"[cyan]{safe_markup(done.paths.get('report_json', ''))}[/]"
        )
    return done.exit_code
