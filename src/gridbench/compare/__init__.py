"""Compare analysed experiments, and follow one metric across the runs of a spec.

Public API (stable; the web dashboard and ``gridbench compare`` / ``gridbench history`` use it):

- :func:`load_comparison` ``(root, experiment_ids, *, metrics=None, samples=True,
  settings=None) -> Comparison``: load the runs (ids as ``gridbench list`` shows them, a
  unique prefix, a path, or ``latest``) and compare them; the first is the baseline.
- :func:`compare` ``(runs, *, metrics=None, settings=None) -> Comparison``: the pure part.
- :func:`history` ``(root, experiment_id, metric, *, settings=None) -> History``: ``metric``
  (a threshold-style path, e.g. ``latency.overall.p99``) across every analysed run with the
  same spec name as ``experiment_id``, oldest first.
- :func:`load_experiment` ``(root, ref, *, samples=True, max_samples=...) -> ExperimentMetrics``.

Each result has ``to_dict()`` (JSON-safe; shapes in docs/compare.md). Bad input raises
:class:`gridbench.errors.GridbenchError` (a ``ResultsError``) with ``where`` and ``fix``.

Statistics: per-job latencies (pooled over a point's used trials, capped at
``Settings.max_samples`` per experiment, point and segment by a seeded uniform
sub-sample) are tested with Welch's t-test (means) and the Mann-Whitney U test (medians),
both trial-clustered (Kish design effect, df capped at trials - 2); per-trial metrics
(p99, throughput, queue growth) with Welch's t-test over the trials;
failure rates with Fisher's exact test on pooled job counts. The p-values of each metric
(over all points and experiments) are adjusted together with Benjamini-Hochberg; a
difference is *significant* when the adjusted p < ``alpha`` and the relative change is
at least ``min_effect``.
"""

from __future__ import annotations

from gridbench.compare.engine import compare, default_metrics
from gridbench.compare.history import history
from gridbench.compare.loading import load_comparison, load_experiment
from gridbench.compare.model import (
    COMPARE_SCHEMA,
    HISTORY_SCHEMA,
    Comparison,
    Diff,
    ExperimentMetrics,
    History,
    HistoryEntry,
    MetricComparison,
    MetricInfo,
    PointComparison,
    Settings,
    Value,
)

__all__ = [
    "COMPARE_SCHEMA",
    "HISTORY_SCHEMA",
    "Comparison",
    "Diff",
    "ExperimentMetrics",
    "History",
    "HistoryEntry",
    "MetricComparison",
    "MetricInfo",
    "PointComparison",
    "Settings",
    "Value",
    "compare",
    "default_metrics",
    "history",
    "load_comparison",
    "load_experiment",
]
