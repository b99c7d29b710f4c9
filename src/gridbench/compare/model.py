"""The result objects of a comparison and of a metric's history, with JSON-safe ``to_dict``.

Shapes (``to_dict``) are documented in docs/compare.md; the web dashboard draws its
overlaid charts straight from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gridbench.store.layout import json_safe

# the run of a comparison is core's (families build it); re-exported for old imports
from gridbench.swept import F64 as F64
from gridbench.swept import I64 as I64
from gridbench.swept import ExperimentMetrics as ExperimentMetrics

COMPARE_SCHEMA = "gridbench.compare/1"
HISTORY_SCHEMA = "gridbench.history/1"


@dataclass(frozen=True)
class Value:
    """One experiment's value of one metric at one point (over its used trials).

    ``value`` is the mean of the per-trial values, ``ci95`` the Student-t half-width of
    its 95% confidence interval (``None`` with fewer than 2 trials); ``n`` the trials.
    ``jobs`` is the number of per-job samples the test used (``None``: per-trial test),
    ``jobs_total`` the number before down-sampling.
    """

    experiment: str
    value: float | None
    ci95: float | None
    min: float | None
    max: float | None
    n: int
    jobs: int | None = None
    jobs_total: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json_safe(
            {
                "experiment": self.experiment,
                "value": self.value,
                "ci95": self.ci95,
                "low": None if self.value is None or self.ci95 is None else self.value - self.ci95,
                "high": None if self.value is None or self.ci95 is None else self.value + self.ci95,
                "min": self.min,
                "max": self.max,
                "n": self.n,
                "jobs": self.jobs,
                "jobs_total": self.jobs_total,
                "downsampled": self.jobs is not None
                and self.jobs_total is not None
                and self.jobs < self.jobs_total,
            }
        )
        return out


@dataclass(frozen=True)
class Diff:
    """One experiment against the baseline for one metric at one point.

    ``p_value`` is the raw two-sided p-value of ``test``; ``p_adjusted`` the
    Benjamini-Hochberg adjusted one (over every test of the same metric in the
    comparison: all points and experiments). ``significant``
    is ``p_adjusted < alpha`` *and* ``|relative| >= min_effect``. ``verdict`` is
    "improved" / "regressed" (significant, in the metric's better / worse direction) or
    "unchanged".
    """

    experiment: str
    baseline: str
    test: str | None
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    significant: bool
    difference: float | None
    ratio: float | None
    verdict: str
    note: str | None = None

    @property
    def relative(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json_safe(
            {
                "experiment": self.experiment,
                "baseline": self.baseline,
                "test": self.test,
                "statistic": self.statistic,
                "p_value": self.p_value,
                "p_adjusted": self.p_adjusted,
                "significant": self.significant,
                "difference": self.difference,
                "ratio": self.ratio,
                "relative": self.relative,
                "verdict": self.verdict,
                "note": self.note,
            }
        )
        return out


@dataclass(frozen=True)
class MetricInfo:
    """What a compared metric is: its path, label, unit and better direction."""

    metric: str
    label: str
    unit: str
    better: str  # "lower" | "higher"
    test: str  # the test used when per-job samples are present

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "unit": self.unit,
            "better": self.better,
            "test": self.test,
        }


@dataclass(frozen=True)
class MetricComparison:
    """One metric at one point: a value per experiment, a diff per non-baseline one."""

    metric: str
    values: tuple[Value, ...]
    diffs: tuple[Diff, ...]

    @property
    def significant(self) -> bool:
        return any(d.significant for d in self.diffs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "values": [v.to_dict() for v in self.values],
            "diffs": [d.to_dict() for d in self.diffs],
            "significant": self.significant,
        }


@dataclass(frozen=True)
class PointComparison:
    """One sweep point present in the baseline and at least one other experiment."""

    key: str
    point: Mapping[str, Any]
    offered_rate_per_s: float | None
    #: the point's index in each experiment (by experiment id; absent = not measured there)
    indices: Mapping[str, int]
    metrics: tuple[MetricComparison, ...]

    def metric(self, name: str) -> MetricComparison | None:
        for m in self.metrics:
            if m.metric == name:
                return m
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json_safe(
            {
                "key": self.key,
                "point": dict(self.point),
                "offered_rate_per_s": self.offered_rate_per_s,
                "indices": dict(self.indices),
            }
        )
        out["metrics"] = {m.metric: m.to_dict() for m in self.metrics}
        return out


@dataclass(frozen=True)
class Settings:
    """The statistical settings of a comparison."""

    alpha: float = 0.05
    min_effect: float = 0.05
    max_samples: int = 20_000
    correction: str = "benjamini-hochberg"

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "max_samples": self.max_samples,
            "correction": self.correction,
        }


@dataclass(frozen=True)
class Comparison:
    """Two or more experiments point by point; the first is the baseline."""

    experiments: tuple[ExperimentMetrics, ...]
    metric_info: tuple[MetricInfo, ...]
    points: tuple[PointComparison, ...]
    settings: Settings
    #: points measured by only some experiments: experiment id -> point keys left out
    unmatched: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...] = ()
    #: the metrics the terminal shows by default (the family's; not in the JSON)
    key_metrics: tuple[str, ...] = ()

    @property
    def baseline(self) -> str:
        return self.experiments[0].id

    @property
    def downsampled(self) -> bool:
        return any(e.downsampled for e in self.experiments)

    def significant(self) -> list[tuple[PointComparison, MetricComparison, Diff]]:
        """Every significant difference as (point, metric, diff)."""
        return [(p, m, d) for p in self.points for m in p.metrics for d in m.diffs if d.significant]

    def series(self) -> dict[str, dict[str, dict[str, list[Any]]]]:
        """Chart-ready overlays: metric -> experiment id -> {x, y, ci95, point}.

        ``x`` is the offered rate (jobs/s) where known, else the point key.
        """
        out: dict[str, dict[str, dict[str, list[Any]]]] = {}
        for info in self.metric_info:
            per: dict[str, dict[str, list[Any]]] = {
                e.id: {"x": [], "y": [], "ci95": [], "point": []} for e in self.experiments
            }
            for p in self.points:
                m = p.metric(info.metric)
                if m is None:
                    continue
                for v in m.values:
                    s = per[v.experiment]
                    s["x"].append(
                        p.offered_rate_per_s if p.offered_rate_per_s is not None else p.key
                    )
                    s["y"].append(v.value)
                    s["ci95"].append(v.ci95)
                    s["point"].append(p.key)
            out[info.metric] = per
        result: dict[str, dict[str, dict[str, list[Any]]]] = json_safe(out)
        return result

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": COMPARE_SCHEMA,
            "baseline": self.baseline,
            "experiments": [e.to_dict() for e in self.experiments],
            "settings": self.settings.to_dict(),
            "downsampled": self.downsampled,
            "metrics": [m.to_dict() for m in self.metric_info],
            "points": [p.to_dict() for p in self.points],
            "series": self.series(),
            "significant_count": len(self.significant()),
            "unmatched": {k: list(v) for k, v in self.unmatched.items()},
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class HistoryEntry:
    """One run in a metric's history: its value per point and the change from the run before.

    ``same_config`` says whether its spec hash equals the reference run's (a different
    hash means the spec was edited, so a change may be the edit, not the system).
    """

    experiment: str
    created: str | None
    spec_hash: str | None
    same_config: bool
    valid: bool | None
    values: Mapping[str, Value]
    vs_previous: Mapping[str, Diff]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json_safe(
            {
                "experiment": self.experiment,
                "created": self.created,
                "spec_hash": self.spec_hash,
                "same_config": self.same_config,
                "valid": self.valid,
            }
        )
        out["values"] = {k: v.to_dict() for k, v in self.values.items()}
        out["vs_previous"] = {k: d.to_dict() for k, d in self.vs_previous.items()}
        return out


@dataclass(frozen=True)
class History:
    """One metric across every analysed run of the same spec name, oldest first."""

    metric: str
    name: str
    reference: str
    better: str
    points: tuple[str, ...]
    entries: tuple[HistoryEntry, ...]
    settings: Settings
    skipped: Mapping[str, str] = field(default_factory=dict)

    def series(self) -> dict[str, dict[str, list[Any]]]:
        """Chart-ready: point key -> {x (created), y, ci95, experiment, same_config}."""
        out: dict[str, dict[str, list[Any]]] = {}
        for key in self.points:
            s: dict[str, list[Any]] = {
                "x": [],
                "y": [],
                "ci95": [],
                "experiment": [],
                "same_config": [],
                "significant": [],
            }
            for e in self.entries:
                v = e.values.get(key)
                if v is None:
                    continue
                d = e.vs_previous.get(key)
                s["x"].append(e.created)
                s["y"].append(v.value)
                s["ci95"].append(v.ci95)
                s["experiment"].append(e.experiment)
                s["same_config"].append(e.same_config)
                s["significant"].append(bool(d and d.significant))
            out[key] = s
        result: dict[str, dict[str, list[Any]]] = json_safe(out)
        return result

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": HISTORY_SCHEMA,
            "metric": self.metric,
            "name": self.name,
            "reference": self.reference,
            "match": "spec name",
            "better": self.better,
            "settings": self.settings.to_dict(),
            "points": list(self.points),
            "entries": [e.to_dict() for e in self.entries],
            "series": self.series(),
            "skipped": dict(self.skipped),
        }
