"""Analysis followed by reports, for a run of any family: the one path shared by run,
analyze, report and the web dashboard."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.family import Family, family_of
from gridbench.report import write_reports
from gridbench.sections import Column, Report, Table
from gridbench.states import with_state
from gridbench.store import exclusions
from gridbench.store.layout import RunDir, read_json

log = logging.getLogger(__name__)

#: Called with the run's path after its reports are written (e.g. the dashboard pre-builds
#: its view); a failure there only costs that extra, never the analysis.
AfterReport = Callable[[Path], None]


@dataclass(frozen=True)
class Analysed:
    """One run analysed through its family, with its reports written."""

    family: Family
    metrics: dict[str, Any]
    report: Report
    paths: dict[str, Path]

    @property
    def exit_code(self) -> int:
        """The family's exit code for these metrics."""
        return self.family.exit_code(self.metrics)


def analyze_and_report(run_path: Path, *, after: tuple[AfterReport, ...] = ()) -> Analysed:
    """Analyse a results directory through the family recorded in it, write metrics.json
    and every report, and record the verdict in experiment.json."""
    run = RunDir.open(run_path)
    fam = family_of(run)
    metrics = fam.analyze(run)
    report = with_exclusions(fam.report(run, metrics), run)
    paths = write_reports(run.path, report)
    state = run.read_experiment().get("status")  # an aborted run's verdict says so first
    run.update_experiment(verdict=with_state(fam.verdict(metrics), state), analysed=True)
    for hook in after:
        try:
            hook(run.path)
        except Exception as exc:  # never fail an analysis for a cache
            log.warning("after-report step on %s failed: %s", run.path.name, exc)
    return Analysed(fam, metrics, report, {k: Path(v) for k, v in paths.items()})


def report_of(run: RunDir) -> tuple[Family, dict[str, Any], Report]:
    """The report of an analysed run, without re-analysing it (``show``, the dashboard)."""

    fam = family_of(run)
    metrics = read_json(run.metrics_file)
    if not isinstance(metrics, dict) or metrics.get("schema") != fam.schema:
        from gridbench.errors import ResultsError

        raise ResultsError(
            f"metrics.json is not a {fam.schema} document",
            where=str(run.metrics_file),
            fix=f"re-analyse it: gridbench analyze {run.path}",
        )
    return fam, metrics, with_exclusions(fam.report(run, metrics), run)


def with_exclusions(report: Report, run: RunDir) -> Report:
    """``report`` with the table of the trials excluded by hand and why (``gridbench
    exclude``), whatever the family: every report of the run shows them."""
    found = exclusions.in_force(run)
    if not found:
        return report
    table = Table(
        id="excluded-by-hand",
        title="Trials excluded by hand",
        columns=(Column("trial"), Column("reason"), Column("at"), Column("by")),
        rows=tuple((e.trial, e.reason, e.at, e.by) for e in found.values()),
        note="left out of every figure by 'gridbench exclude'; 'gridbench include RUN "
        "TRIAL' takes an exclusion back (both recorded in exclusions.jsonl)",
    )
    return dataclasses.replace(report, sections=(table, *report.sections))
