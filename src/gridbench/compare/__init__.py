"""Compare analysed experiments, and follow one metric across the runs of a spec.

Generic: this package knows no family's metrics. A family says what its runs measured
through :class:`gridbench.swept.SweptComparable` (points, per-repetition values,
per-unit samples, counts: job flow, in :mod:`gridbench.jobflow.compare`) or
:class:`gridbench.family.Comparable` (flat figures with their samples: io, net, study);
here they are tested, corrected, judged, rendered and exported.

Public API (stable; the web dashboard and ``gridbench compare`` / ``gridbench history`` use it):

- :func:`load_comparison` ``(root, experiment_ids, *, metrics=None, samples=True,
  settings=None) -> Comparison``: load the runs (ids as ``gridbench list`` shows them, a
  unique prefix, a path, or ``latest``) and compare them; the first is the baseline.
- :func:`compare` ``(runs, *, metrics=None, settings=None) -> Comparison``: the pure part
  (runs of a swept-comparable family).
- :func:`history` ``(root, experiment_id, metric, *, settings=None) -> History``: ``metric``
  (job flow: a threshold-style path, e.g. ``latency.overall.p99``; else a figure key)
  across every analysed run with the same spec name as ``experiment_id``, oldest first.
- :func:`load_experiment` ``(root, ref, *, samples=True, max_samples=...) -> ExperimentMetrics``.

Each result has ``to_dict()`` (JSON-safe; shapes in docs/compare.md). Bad input raises
:class:`gridbench.errors.GridbenchError` (a ``ResultsError``) with ``where`` and ``fix``.

Statistics (:mod:`gridbench.compare.significance`): per-unit samples (job flow: per-job
latencies, capped per experiment, point and key by the family) are tested with Welch's
t-test (means) and the Mann-Whitney U test (medians), both clustered by repetition
(Kish design effect, df capped at repetitions - 2); per-repetition values with Welch's
t-test; proportions with Fisher's exact test on pooled counts. The p-values of each
metric (over all points and experiments) are adjusted together with Benjamini-Hochberg; a
difference is *significant* when the adjusted p < ``alpha`` and the relative change is
at least ``min_effect``.
"""

from __future__ import annotations

from gridbench.compare.dispatch import compare_runs as load_comparison
from gridbench.compare.dispatch import history_of as history
from gridbench.compare.engine import compare
from gridbench.compare.loading import load_experiment
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
    "history",
    "load_comparison",
    "load_experiment",
]
