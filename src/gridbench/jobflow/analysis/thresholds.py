"""Job flow's thresholds: the scopes of its metrics.json for the shared evaluator
(:mod:`gridbench.thresholds`, which holds the model and the result records).

A threshold is ``{"metric": PATH, "op": "<"|"<="|">"|">="|"==", "value": number,
"point": index | "all" | "any"}`` (``point`` defaults to "all").

Path grammar (dot-separated keys into metrics.json objects)::

    PATH  := TRIAL_PATH | "summary." POINT_PATH | "experiment." TOP_PATH
           | "knee." KEY | "bottleneck." KEY
    TRIAL_PATH: a path inside a trial object, e.g.
        latency.overall.p99           latency.<segment>.mean|p50|...|ci95   (seconds)
        throughput.<stage>.steady     throughput.<stage>.average|expected_ratio|edgi_ratio|count
        throughput.overall.average    jobs.completed   failure_rate
        failures.<kind>  (a count; 0 when that kind did not occur)
        failures.rate    (same as failure_rate: failed jobs / planned jobs)
        queues.<segment>.growth_per_s validity.late_share   validity.client_bound
    POINT_PATH: a path inside a point's summary, e.g.
        summary.throughput.ce_done.mean   summary.latency.overall.ci95
        summary.expected_ratio.client_done.min   summary.valid_trials
    TOP_PATH: a path inside the top-level object, e.g.
        experiment.validity.valid   experiment.knee.capacity_per_s
    ``knee.X`` / ``bottleneck.X`` are short for ``experiment.knee.X`` / ``experiment.bottleneck.X``.

A trial path must hold for every valid trial of a point (invalid trials are excluded from
results and are checked through ``validity``); ``actual`` reports the worst trial. A
summary path is read from the point's summary. ``point`` picks the points: an index,
"all" (every point must pass; the default) or "any" (at least one must). Experiment paths
ignore ``point``. Booleans compare as 1/0. A path that names nothing, a value that is not a
number, or an unknown operator makes the threshold fail with a reason; it never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gridbench.paths import resolve
from gridbench.thresholds import (
    DEFAULT_SCOPE,
    Doc,
    Group,
    Scope,
    Selection,
    single,
)
from gridbench.thresholds import evaluate_threshold as _evaluate

EXPERIMENT_KEYS = ("knee", "bottleneck")


def _point_label(p: Mapping[str, Any]) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in (p.get("point") or {}).items())
    return f"point {p.get('index')}" + (f" ({settings})" if settings else "")


def _resolve_trial(trial: Any, path: str) -> Any:
    """A trial path, where failure kinds that did not occur count 0 and failures.rate is
    the trial's failure_rate."""
    if path == "failures.rate":
        return resolve(trial, "failure_rate")
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "failures" and isinstance(trial.get("failures"), Mapping):
        return trial["failures"].get(parts[1], 0)
    return resolve(trial, path)


def _points(metrics: Mapping[str, Any], point: Any) -> list[Mapping[str, Any]] | str:
    """The points ``point`` selects, or why none can be."""
    points: Sequence[Mapping[str, Any]] = metrics.get("points", [])
    if isinstance(point, int) and not isinstance(point, bool):
        sel = [p for p in points if p.get("index") == point]
        if not sel:
            return f"no point with index {point} (the sweep has {len(points)})"
    elif point in ("all", "any", None):
        sel = list(points)
    else:
        return f"point must be an index, 'all' or 'any', not {point!r}"
    if not sel:
        return "the experiment has no points"
    return sel


def _summary(p: Mapping[str, Any]) -> Group:
    where = f"{_point_label(p)}, summary"
    return Group(where, [Doc(p.get("summary", {}), where)])


def _valid_trials(p: Mapping[str, Any]) -> Group:
    label = _point_label(p)
    # invalid trials are excluded from results (validity.* checks them), and so are the
    # trials excluded by hand
    docs = [
        Doc(t, f"{label}, trial {t.get('trial_id')}", _resolve_trial)
        for t in p.get("trials", [])
        if t.get("valid") and not t.get("excluded_by_hand")
    ]
    return Group(label, docs, "the point has no valid trial")


def scopes(metrics: Mapping[str, Any]) -> dict[str, Scope]:
    """Where job flow's paths are read: the experiment object, each selected point's
    summary, or each valid trial of the selected points (the worst trial speaks)."""

    def per_point(group: Callable[[Mapping[str, Any]], Group], strip_head: bool) -> Scope:
        def scope(metric: str, point: Any) -> Selection | str:
            sel = _points(metrics, point)
            if isinstance(sel, str):
                return sel
            path = metric.partition(".")[2] if strip_head else metric
            return Selection(path, [group(p) for p in sel], any=point == "any")

        return scope

    experiment = single(metrics, "experiment")
    return {
        "experiment": single(metrics, "experiment", strip_head=True),
        **dict.fromkeys(EXPERIMENT_KEYS, experiment),
        "summary": per_point(_summary, strip_head=True),
        DEFAULT_SCOPE: per_point(_valid_trials, strip_head=False),
    }


def evaluate_threshold(metrics: Mapping[str, Any], threshold: Any) -> dict[str, Any]:
    """One threshold's result: metric, op, value, point, actual, passed, where, reason."""
    return _evaluate(threshold, scopes(metrics))


def evaluate_thresholds(
    metrics: Mapping[str, Any], thresholds: Sequence[Any]
) -> list[dict[str, Any]]:
    """All thresholds, in order (see the module docstring for the path grammar)."""
    sc = scopes(metrics)
    return [_evaluate(t, sc) for t in thresholds]
