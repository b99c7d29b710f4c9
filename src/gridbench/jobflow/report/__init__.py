"""The job-flow report: metrics.json (and the trials' series) as typed report sections.

:func:`build_report` is the one entry point: the headline, the evaluation summary and
every table and chart, in the order the full report shows them. Renderers (terminal,
HTML page, CSV/JSON, the dashboard) draw the result without knowing job flow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.jobflow import loads
from gridbench.jobflow.report.brief import (
    failures_brief,
    latency_brief,
    throughput_brief,
    validity_brief,
)
from gridbench.jobflow.report.build import export
from gridbench.jobflow.report.charts import (
    expected_ratio,
    failures,
    latency_breakdown,
    latency_share,
    throughput_vs_rate,
)
from gridbench.jobflow.report.clocks import agents_load_table, clocks_table
from gridbench.jobflow.report.growth import growth_table, results_statements
from gridbench.jobflow.report.headline import downsampled_trials, evaluation_summary, headline
from gridbench.jobflow.report.model import check_metrics, points
from gridbench.jobflow.report.predicted import predicted_findings
from gridbench.jobflow.report.rates import rates_table
from gridbench.jobflow.report.rows import all_tables
from gridbench.jobflow.report.schedule import hour_table, time_table
from gridbench.jobflow.report.server import server_table
from gridbench.jobflow.report.staging import staging_table
from gridbench.jobflow.report.staging_chart import staging_chart
from gridbench.jobflow.report.tables import (
    failures_table,
    latency_tables,
    outliers_table,
    queues_table,
    thresholds_table,
    throughput_table,
    users_table,
    validity_table,
)
from gridbench.jobflow.report.timeseries import (
    latency_histograms,
    queues_over_time,
    throughput_over_time,
)
from gridbench.sections import Chart, Headline, Report, Section, Statements, Status, Table

FAMILY = "jobflow"


def all_charts(metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]) -> list[Chart]:
    """Every chart that has data, in report order."""
    made = [
        latency_breakdown(metrics),
        latency_share(metrics),
        staging_chart(metrics),
        throughput_vs_rate(metrics),
        expected_ratio(metrics),
        throughput_over_time(metrics, series),
        queues_over_time(metrics, series),
        failures(metrics),
        latency_histograms(metrics, series),
    ]
    return [c for c in made if c is not None]


def chart_notes(series: Mapping[str, Mapping[str, Any]]) -> Statements | None:
    """What a reader of the charts must know: down-sampled series, or none at all."""
    lines: list[tuple[Status, str]] = []
    ds = downsampled_trials(series)
    if ds:
        lines.append(
            (
                "info",
                f"Time series of {len(ds)} trial(s) were down-sampled to at most 500 points per "
                f"line for the charts, by min/max per bucket (each bucket keeps its lowest and "
                f"highest point, so peaks and dips survive): {', '.join(ds)}. Tables use the "
                "full data.",
            )
        )
    if not series:
        lines.append(
            ("info", "No per-trial time series were passed; time-series charts are left out.")
        )
    return Statements("chart-notes", "", tuple(lines), scope="full") if lines else None


def model_sections(metrics: Mapping[str, Any]) -> list[Section | None]:
    """The load models' own sections, in registration order (each model's ``sections()``
    hooks; a hook gives one section, several, or None)."""
    made: list[Section | None] = []
    for model in loads.LOAD_MODELS.values():
        for build in model.sections():
            got = build(metrics)
            if got is None or isinstance(got, (Table, Chart, Statements)):
                made.append(got)
            else:
                made.extend(got)
    return made


def sections(metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]) -> list[Section]:
    """Every section in report order: the closed models' results, the charts, then the
    tables (each in its full and, where the terminal shows it shorter, brief form)."""
    made: list[Section | None] = [
        results_statements(metrics),
        chart_notes(series),
        *all_charts(metrics, series),
        *model_sections(metrics),
        growth_table(metrics),
        *latency_tables(metrics),
        latency_brief(metrics),
        server_table(metrics),
        staging_table(metrics),
        throughput_table(metrics),
        throughput_brief(metrics),
        rates_table(metrics),
        failures_table(metrics),
        failures_brief(metrics),
        users_table(metrics),
        thresholds_table(metrics),
        validity_table(metrics),
        validity_brief(metrics),
        agents_load_table(metrics),
        clocks_table(metrics),
        outliers_table(metrics),
        queues_table(metrics),
        time_table(metrics),
        hour_table(metrics),
    ]
    return [s for s in made if s is not None]


def build_report(
    metrics: Mapping[str, Any],
    series: Mapping[str, Mapping[str, Any]],
    *,
    spec_yaml: str = "",
    plan: Table | None = None,
    not_tested: Sequence[str] = (),
    experiment: Mapping[str, Any] | None = None,
) -> Report:
    """The typed report of a job-flow experiment.

    ``metrics`` is a gridbench.metrics/1 document (ResultsError otherwise), ``series`` the
    trials' series.json by trial id; ``spec_yaml``, ``plan`` and ``not_tested`` come from
    the run's spec, ``experiment`` from its experiment.json.
    """
    check_metrics(metrics)
    hl = headline(metrics)
    marks = predicted_findings(experiment)
    if marks:  # a run of `gridbench model predict`: say so first, with where it was checked
        hl = Headline(f"{hl.title} (predicted)", (*marks, *hl.findings))
    meta = (
        f"{metrics.get('schema')} · load model {metrics.get('load_model') or 'n/a'} · "
        f"{len(points(metrics))} point(s)"
    )
    return Report(
        family=FAMILY,
        title=hl.title,
        headline=hl,
        summary=evaluation_summary(
            metrics,
            spec_yaml=spec_yaml,
            plan=plan,
            not_tested=not_tested,
            experiment=experiment,
        ),
        sections=tuple(sections(metrics, series)),
        meta=meta,
        exports=tuple(export(k, v) for k, v in all_tables(metrics).items()),
        data=dict(metrics),
    )


__all__ = ["build_report"]
