"""Job flow's values for ``gridbench history``: one metric path per point and run.

``metric`` uses the threshold path grammar (docs/metrics.md): a trial path such as
``latency.overall.p99`` gives each point's values over its used trials; a ``summary.``
path is read from each point's summary; ``experiment.`` / ``knee.`` / ``bottleneck.``
paths give one value per run (point key ``experiment``). gridbench.compare tests and
corrects them (only per-trial values, two or more a side, are tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gridbench.jobflow.compare.figures import point_key, trial_values, used_trials
from gridbench.jobflow.report.model import as_dict, points
from gridbench.paths import PathError, number, resolve
from gridbench.swept import F64, ExperimentMetrics

EXPERIMENT_KEY = "experiment"
_TOP = ("experiment.", "knee.", "bottleneck.")
_HIGHER = (
    "throughput.",
    "summary.throughput",
    "summary.expected_ratio",
    "summary.edgi_ratio",
    "knee.capacity",
    "experiment.knee.capacity",
    "jobs.completed",
    "summary.valid_trials",
    "summary.used_trials",
    "rates.",  # end-to-end, submit, dispatch and per-second completion rates (jobs/s)
)


def better_direction(metric: str) -> str:
    """'higher' for throughput-like paths, job rates (``*_per_s``: a closed model's
    throughput, an agent's rate) and transfer rates, else 'lower' (latency, failures,
    queues and their growth, transfer times)."""
    higher = metric.startswith(_HIGHER) or ".expected_ratio" in metric
    rate = metric.endswith("_per_s") and not metric.endswith("growth_per_s")
    if higher or rate or metric.endswith((".rate_bps_p50", ".rate_bps_min")):
        return "higher"
    return "lower"


def higher_is_better(metric: str) -> bool:
    """Whether more of ``metric`` is better (:func:`better_direction`)."""
    return better_direction(metric) == "higher"


def _kind(metric: str) -> str:
    if metric.startswith(_TOP):
        return "top"
    if metric.startswith("summary."):
        return "summary"
    return "trial"


def _top_value(metrics: Mapping[str, Any], metric: str) -> float | None:
    path = metric[len("experiment.") :] if metric.startswith("experiment.") else metric
    try:
        return number(resolve(metrics, path))
    except PathError:
        return None


def history_values(run: ExperimentMetrics, metric: str) -> dict[str, F64]:
    """Point key -> the values of ``metric`` in one run (pure; one value for summary and
    run-level paths)."""
    kind = _kind(metric)
    if kind == "top":
        v = _top_value(run.metrics, metric)
        return {} if v is None else {EXPERIMENT_KEY: np.array([v])}
    out: dict[str, F64] = {}
    for p in points(run.metrics):
        if kind == "summary":
            try:
                v = number(resolve(as_dict(p.get("summary")), metric[len("summary.") :]))
            except PathError:
                v = None
            if v is not None:
                out[point_key(p)] = np.array([v])
            continue
        vals = trial_values(run.metrics, used_trials(p), metric)
        arr = np.array([x for x in vals if x is not None], dtype=np.float64)
        if arr.size:
            out[point_key(p)] = arr
    return out
