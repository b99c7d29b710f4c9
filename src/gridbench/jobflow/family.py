"""Job flow as a benchmark family: jobs driven through a scheduler, CE or cloud job
service, each stage stamped, analysed into ``gridbench.metrics/1``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gridbench.errors import EXIT_OK, EXIT_THRESHOLD
from gridbench.family import (
    CatalogueColumn,
    CatalogueEntry,
    CleanupOutcome,
    RunSize,
    Ui,
    ValidityRule,
)
from gridbench.sections import Report
from gridbench.states import FAIL, INVALID, PASS

if TYPE_CHECKING:  # light at import: the command line loads every family (--help)
    from gridbench.family.dashboard import LiveMetric, Pages, WebContext
    from gridbench.store.layout import RunDir
    from gridbench.swept import F64, ExperimentMetrics, Measure, SweepPoint, SweptFigure

#: The rules of analysis/validity.py, in the words the report uses.
JOBFLOW_VALIDITY_RULES: tuple[ValidityRule, ...] = (
    ValidityRule("complete", "the trial completed and at least one job completed"),
    ValidityRule("late_share", "at most 5% of submissions started late (the schedule was kept)"),
    ValidityRule("dropped_share", "at most 1% of planned jobs were never submitted"),
    ValidityRule(
        "client_bound",
        "the client's CPU stayed below 90% of its ceiling; with a sampling: block, the "
        "load's own host (sampling.client) was not 90% busy over a trial before any other "
        "sampled host was (that trial is invalid)",
    ),
    ValidityRule("client_tools", "the client tools a backend spawned used under 50% of the cores"),
    ValidityRule(
        "stamp_precision",
        "the overall latency's stamps are finer than 10% of the median overall latency",
    ),
    ValidityRule(
        "clock_bound",
        "each segment's clock-offset bound (agents' clocks) is within 10% of its median "
        "latency (validity.clock_factor)",
    ),
    ValidityRule(
        "negative_segments",
        "no segment is negative beyond its stamps' precision and clock bounds after the "
        "agents' offsets are removed",
    ),
)


def _trials_cell(experiment: Mapping[str, Any]) -> str:
    """The list's trials cell: done/planned ("?" for one not known yet), "–" for a run
    that records neither."""
    if "trials_planned" not in experiment and "trials_done" not in experiment:
        return "–"
    done, planned = experiment.get("trials_done"), experiment.get("trials_planned")
    return f"{'?' if done is None else done}/{'?' if planned is None else planned}"


class JobFlow:
    """The job-flow family (the ``kind`` of runs made by ``gridbench run``)."""

    name = "jobflow"
    title = "job flow through a scheduler, CE or cloud job service"
    spec_marks = frozenset({"backend", "load", "job", "sweep", "trials", "trial", "collectors"})
    spec_noun = "a job-flow spec"
    schema = "gridbench.metrics/1"
    validity_rules = JOBFLOW_VALIDITY_RULES

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """validate, plan, run, demo, check, ingest, reference, backends (declared in
        :mod:`gridbench.jobflow.cli`: their code is imported when one runs)."""
        from gridbench.jobflow.cli import COMMANDS

        COMMANDS.add_commands(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Analyse every trial; writes metrics.json and each trial's series.json."""
        from gridbench.jobflow.analysis.experiment import analyze_run

        return analyze_run(run.path, write=True)

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Headline, evaluation summary and every job-flow section."""
        from gridbench.jobflow.metrics_schema import validate_metrics
        from gridbench.jobflow.report import build_report
        from gridbench.jobflow.report.loading import load_series
        from gridbench.testplan import report_inputs

        validate_metrics(metrics, str(run.metrics_file))

        report = build_report(metrics, load_series(run.path), **report_inputs(run))
        from gridbench.jobflow.report.sampling import run_sampling_sections

        sampled = run_sampling_sections(run.path, run.read_spec()[1])
        if not sampled:
            return report
        return dataclasses.replace(report, sections=(*report.sections, *sampled))

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """1 when any threshold failed."""
        failed = any(not t.get("passed") for t in metrics.get("thresholds") or [])
        return EXIT_THRESHOLD if failed else EXIT_OK

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """pass or fail by the thresholds, marked when some trials are invalid."""
        word = FAIL if self.exit_code(metrics) else PASS
        validity = metrics.get("validity")
        if isinstance(validity, Mapping) and not validity.get("valid", True):
            bad = validity.get("invalid_trials")
            n = f"{len(bad)} " if isinstance(bad, list) and bad else ""
            # invalid trials never sit beside a plain "pass" (issue 41)
            word = f"{INVALID if word == PASS else word} ({n}invalid trials)"
        return word

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        """The backend and the load model; a run of ``gridbench model predict`` is marked;
        the dashboard's trials column (done/planned), and its search covers the backend and
        load model fields. Job flow's catalogue fields of a damaged experiment.json are a
        ResultsError."""
        from pathlib import Path

        from gridbench.jobflow.record import check_jobflow_experiment
        from gridbench.store.layout import EXPERIMENT_FILE

        where = Path(str(experiment.get("path", "."))) / EXPERIMENT_FILE
        check_jobflow_experiment(experiment, where)
        variant = str(experiment.get("load_model", "") or "")
        if isinstance(experiment.get("predicted"), Mapping):
            variant = f"{variant} · predicted" if variant else "predicted"
        return CatalogueEntry(
            target=str(experiment.get("backend", "") or ""),
            variant=variant,
            columns=(CatalogueColumn("trials", _trials_cell(experiment), numeric=True),),
            search=tuple(str(experiment.get(k, "")) for k in ("backend", "load_model")),
        )

    @property
    def live_metrics(self) -> tuple[LiveMetric, ...]:
        """Each live trial's job counters and the offered and achieved rates on the
        dashboard's ``/metrics`` (``LiveMetered``; sampled by ``JobFlowRun``)."""
        from gridbench.jobflow.web.live_metrics import LIVE_METRICS

        return LIVE_METRICS

    def web_pages(self, web: WebContext) -> Pages:
        """``/new``, presets and agents (``WebPages``): job flow's pages, built on the
        dashboard's context; its runs start on the dashboard's run manager."""
        from gridbench.jobflow.web.seam import web_pages

        return web_pages(web)

    def has_records(self, run: RunDir) -> bool:
        """Whether the run has a trial folder (``HasRecords``: what analysis reads); a
        linked one is not the run's."""
        trials = run.path / "trials"
        try:
            if trials.is_symlink() or not trials.is_dir():
                return False
            return any(p.is_dir() and not p.is_symlink() for p in trials.iterdir())
        except OSError:
            return False

    def excludable_ids(self, run: RunDir) -> list[str]:
        """The run's trial folders, in order (``Trialled``: what ``gridbench exclude``
        takes); a linked one is not the run's."""
        trials = run.path / "trials"
        try:
            if trials.is_symlink() or not trials.is_dir():
                return []
            return sorted(p.name for p in trials.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            return []

    def run_size(self, metrics: Mapping[str, Any]) -> RunSize:
        """The jobs of an analysed run (``Sized``): per trial those submitted (else those
        planned) for the results page, and those submitted, whose per-job samples a
        comparison reads."""
        shown = samples = 0
        with contextlib.suppress(AttributeError, TypeError, ValueError):  # untrusted metrics
            for p in metrics.get("points") or []:
                for t in p.get("trials") or []:
                    jobs = t.get("jobs")
                    if isinstance(jobs, Mapping):
                        shown += int(jobs.get("submitted") or jobs.get("planned") or 0)
                        samples += int(jobs.get("submitted") or 0)
        return RunSize(units=shown, noun="jobs", samples=samples)

    def cleanup(self, run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
        """Cancel, by id, the jobs a crashed or killed run left behind; stop only the
        processes whose start time gridbench recorded (``gridbench.jobflow.experiment.cleanup``)."""
        import asyncio

        from gridbench.jobflow.experiment.cleanup import cleanup_run, find_outstanding

        todo = find_outstanding(run)
        n = sum(df.height for df in todo.values())
        lines = [f"{run.path}: {n} outstanding jobs in {len(todo)} trials"]
        report = asyncio.run(cleanup_run(run, dry_run=dry_run, force=force))
        lines += report.plan
        if dry_run:
            lines.append("dry run: nothing was cancelled")
            return CleanupOutcome(tuple(lines), tuple(report.errors))
        stopped = report.stopped_processes
        resv = report.released_reservations
        lines.append(
            f"cancelled {report.cancelled} jobs"
            + (f"; stopped leftover processes {stopped}" if stopped else "")
            + (f"; deleted {resv} reservations" if resv else "")
        )
        return CleanupOutcome(tuple(lines), tuple(report.errors))

    # -- compare and history (SweptComparable): gridbench.jobflow.compare ------------------

    #: the rows ``gridbench compare`` shows by default (plus every significant one)
    key_figures = (
        "latency.overall.mean",
        "latency.overall.p50",
        "latency.overall.p99",
        "throughput.overall.steady",
        "failures.rate",
    )
    history_fix = (
        "use a path such as latency.overall.p99, throughput.<stage>.steady, "
        "failures.rate, summary.latency.overall.mean or knee.capacity_per_s "
        "(docs/metrics.md)"
    )

    def load_compared(
        self, run: RunDir, *, samples: bool, max_samples: int | None
    ) -> ExperimentMetrics:
        """metrics.json, experiment.json and (``samples``) per-job latencies, cached."""
        from gridbench.jobflow.compare.loading import load_compared

        return load_compared(run, samples=samples, max_samples=max_samples)

    def check_compatible(self, runs: Sequence[ExperimentMetrics]) -> None:
        """Runs of one load model only."""
        from gridbench.jobflow.compare.figures import check_compatible

        check_compatible(runs)

    def swept_figures(self, runs: Sequence[ExperimentMetrics]) -> list[SweptFigure]:
        """Latency, throughput, failure rate and queue growth that every run has."""
        from gridbench.jobflow.compare.figures import default_metrics

        return default_metrics(runs)

    def sweep_points(self, run: ExperimentMetrics) -> list[SweepPoint]:
        """The points by their swept values, at their offered rates."""
        from gridbench.jobflow.compare.figures import sweep_points

        return sweep_points(run)

    def measure(self, run: ExperimentMetrics, point: SweepPoint, figure: SweptFigure) -> Measure:
        """Per-trial values, per-job samples (latency means, medians), job counts."""
        from gridbench.jobflow.compare.figures import measure

        return measure(run, point, figure)

    def comparison_notes(
        self, runs: Sequence[ExperimentMetrics], max_samples: int | None
    ) -> list[str]:
        """Down-sampled and missing per-job samples."""
        from gridbench.jobflow.compare.figures import comparison_notes

        return comparison_notes(runs, max_samples)

    def history_values(self, run: ExperimentMetrics, metric: str) -> dict[str, F64]:
        """A threshold-style metric path per point (or per run)."""
        from gridbench.jobflow.compare.history import history_values

        return history_values(run, metric)

    def history_higher_is_better(self, metric: str) -> bool:
        """Throughput-like paths are better higher, the rest lower."""
        from gridbench.jobflow.compare.history import higher_is_better

        return higher_is_better(metric)


FAMILY = JobFlow()
