"""Job flow's figures for ``gridbench compare``: which metrics two runs share, their points,
and each run's measurements of a metric at a point (pure: metrics.json and the samples
:mod:`gridbench.jobflow.compare.loading` read). The statistics are gridbench.compare's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.compared import (
    is_sampling_key,
    phase_values,
    swept_sampling_figures,
)
from gridbench.jobflow.report.model import (
    as_dict,
    chain_view,
    latency_keys,
    point_label,
    points,
    queue_segments,
    staging_kinds,
    throughput_stages,
)
from gridbench.paths import PathError, number, resolve
from gridbench.swept import ExperimentMetrics, Measure, SweepPoint, SweptFigure, Test, UnitSamples

FAILURE_RATE = "failures.rate"
#: the latency statistics compared, and the test each asks for (significance names)
LATENCY_STATS: tuple[tuple[str, Test], ...] = (
    ("mean", "welch-t-clustered"),
    ("p50", "mann-whitney-u-clustered"),
    ("p99", "welch-t"),
)


def point_key(point: Mapping[str, Any]) -> str:
    """The key that matches a point across experiments: its swept values, or its index."""
    return point_label(point) or f"point {point.get('index', 0)}"


def used_trials(point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trial objects a point's summary used: valid and not excluded as outliers."""
    summary = as_dict(point.get("summary"))
    excluded = {as_dict(e).get("trial_id") for e in summary.get("excluded") or []}
    return [
        as_dict(t)
        for t in point.get("trials") or []
        if as_dict(t).get("valid") and as_dict(t).get("trial_id") not in excluded
    ]


def trial_value(trial: Mapping[str, Any], metric: str) -> float | None:
    """A trial's value of a trial path (``failures.rate`` is the trial's failure_rate)."""
    if metric == FAILURE_RATE:
        return number(trial.get("failure_rate"))
    try:
        return number(resolve(trial, metric))
    except PathError:
        return None


def trial_values(
    metrics: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], metric: str
) -> list[float | None]:
    """Each trial's value of ``metric``: a trial path, or a sampled host's figure over the
    trial (``sampling.<host>.cpu_busy_pct``: its phase in metrics.json's ``sampling``)."""
    if is_sampling_key(metric):
        return list(phase_values(metrics, metric, [str(t.get("trial_id")) for t in trials]))
    return [trial_value(t, metric) for t in trials]


def _common(lists: Sequence[Sequence[str]]) -> list[str]:
    first = list(lists[0])
    rest = [set(x) for x in lists[1:]]
    return [k for k in first if all(k in r for r in rest)]


def default_metrics(runs: Sequence[ExperimentMetrics]) -> list[SweptFigure]:
    """The metrics every experiment has, overall ones first.

    Latency (seconds, lower is better) of every common segment: ``.mean`` (Welch on
    per-job samples, trial-clustered), ``.p50`` (Mann-Whitney U on per-job samples,
    trial-clustered), ``.p99`` (Welch on per-trial values); steady throughput (jobs/s,
    higher is better) of every common stage; every common timed transfer's median rate
    and time (:func:`staging_figures`); the failure rate (Fisher's exact test); queue
    growth (jobs/s, lower is better); each sampled host's CPU busy % per trial
    (``sampling.<host>.cpu_busy_pct``, lower is better, Welch).
    """
    if not runs:
        return []
    ms = [r.metrics for r in runs]
    chain = chain_view(ms[0])
    lat = _common([latency_keys(m) for m in ms])
    lat = sorted(lat, key=lambda k: (k != "overall", lat.index(k)))
    out: list[SweptFigure] = []
    for key in lat:
        label = chain.segment_label(key)
        for stat, test in LATENCY_STATS:
            out.append(SweptFigure(f"latency.{key}.{stat}", f"{label} ({stat})", "s", False, test))
    stages = _common([throughput_stages(m) for m in ms])
    stages = sorted(stages, key=lambda s: (s != "overall", stages.index(s)))
    for st in stages:
        label = "overall" if st == "overall" else chain.stage_label(st)
        out.append(
            SweptFigure(
                f"throughput.{st}.steady",
                f"steady throughput at {label}",
                "jobs/s",
                True,
                "welch-t",
            )
        )
    for kind in _common([staging_kinds(m) for m in ms]):
        out += staging_figures(kind)
    out.append(
        SweptFigure(FAILURE_RATE, "failed jobs / planned jobs", "ratio", False, "fisher-exact")
    )
    for q in _common([queue_segments(m) for m in ms]):
        out.append(
            SweptFigure(
                f"queues.{q}.growth_per_s",
                f"queue growth in {chain.segment_label(q)}",
                "jobs/s",
                False,
                "welch-t",
            )
        )
    out += swept_sampling_figures(ms)  # sampling.<host>.cpu_busy_pct: each trial a phase
    return out


def staging_figures(kind: str) -> list[SweptFigure]:
    """A timed transfer's figures: its median rate per trial (bytes/s, higher is better)
    and its median time (s, lower is better), Welch across trials (trial paths
    ``staging.<kind>.rate_bps_p50`` / ``.seconds_p50``)."""
    return [
        SweptFigure(
            f"staging.{kind}.rate_bps_p50", f"{kind} transfer rate (median)", "B/s", True, "welch-t"
        ),
        SweptFigure(
            f"staging.{kind}.seconds_p50", f"{kind} transfer time (median)", "s", False, "welch-t"
        ),
    ]


def check_compatible(runs: Sequence[ExperimentMetrics]) -> None:
    """ResultsError when a run's load model is not the baseline's."""
    base = runs[0]
    for r in runs[1:]:
        if r.load_model != base.load_model:
            raise ResultsError(
                f"incompatible experiments: {r.id} uses the {r.load_model} load model, "
                f"the baseline {base.id} the {base.load_model} one",
                where=r.id,
                fix="compare experiments of the same load model (open with open, closed "
                "with closed)",
            )


def sweep_points(run: ExperimentMetrics) -> list[SweepPoint]:
    """The run's points in index order, keyed by their swept values."""
    return [
        SweepPoint(
            key=point_key(p),
            values=dict(as_dict(p.get("point"))),
            x=number(p.get("offered_rate_per_s")),
            index=int(p.get("index", 0) or 0),
            data=p,
        )
        for p in points(run.metrics)
    ]


def measure(run: ExperimentMetrics, point: SweepPoint, figure: SweptFigure) -> Measure:
    """Per-trial values over the point's used trials; per-job samples for latency means and
    medians (when loaded); pooled failed and planned jobs."""
    trials = used_trials(point.data)
    vals = trial_values(run.metrics, trials, figure.key)
    per_trial = np.array([v for v in vals if v is not None], dtype=np.float64)
    units: UnitSamples | None = None
    parts = figure.key.split(".")
    if parts[0] == "latency" and parts[-1] in ("mean", "p50"):
        key = ".".join(parts[1:-1])
        got = run.samples.get(point.index, {}).get(key)
        labels = run.sample_trials.get(point.index, {}).get(key)
        if got is not None:
            units = UnitSamples(
                got,
                labels if labels is not None else np.zeros(got.size, dtype=np.int64),
                run.samples_total.get(point.index, {}).get(key, int(got.size)),
            )
    failed = sum(int(as_dict(t.get("jobs")).get("failed") or 0) for t in trials)
    planned = sum(int(as_dict(t.get("jobs")).get("planned") or 0) for t in trials)
    return Measure(per_trial, units, (failed, planned))


def comparison_notes(runs: Sequence[ExperimentMetrics], max_samples: int | None) -> list[str]:
    """Which runs' per-job latencies were down-sampled, and which had none."""
    notes: list[str] = []
    cut = [r.id for r in runs if r.downsampled]
    if cut:
        notes.append(
            f"per-job latencies were down-sampled to at most {max_samples} per point and "
            f"segment (seeded uniform sample) for: {', '.join(cut)}"
        )
    no_samples = [r.id for r in runs if not r.samples]
    if no_samples:
        notes.append(
            "no per-job samples for " + ", ".join(no_samples) + ": latency means and medians "
            "were tested across trials (Welch), which has little power with few trials"
        )
    return notes
