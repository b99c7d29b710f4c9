"""Pass/fail thresholds from the spec, evaluated against metrics.json.

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

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench.analysis import text
from gridbench.analysis.paths import PathError, number, resolve

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
EXPERIMENT_KEYS = ("knee", "bottleneck")


def _badness(op: str, actual: float, value: float) -> float:
    """Larger = further on the failing side, to pick the worst trial or point."""
    if op in ("<", "<="):
        return actual
    if op in (">", ">="):
        return -actual
    return abs(actual - value)


@dataclass(frozen=True, slots=True)
class _Result:
    passed: bool
    actual: float | None
    where: str
    reason: str | None = None
    unknown: bool = False  # the path names nothing

    def badness(self, op: str, value: float) -> tuple[bool, float]:
        b = float("inf") if self.actual is None else _badness(op, self.actual, value)
        return (not self.passed, b)


def _as_dict(t: Any) -> dict[str, Any]:
    if hasattr(t, "model_dump"):
        return dict(t.model_dump())
    return dict(t)


def _point_label(p: Mapping[str, Any]) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in (p.get("point") or {}).items())
    return f"point {p.get('index')}" + (f" ({settings})" if settings else "")


def _resolve_trial(trial: Mapping[str, Any], path: str) -> Any:
    """A trial path, where failure kinds that did not occur count 0 and failures.rate is
    the trial's failure_rate."""
    if path == "failures.rate":
        return resolve(trial, "failure_rate")
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "failures" and isinstance(trial.get("failures"), Mapping):
        return trial["failures"].get(parts[1], 0)
    return resolve(trial, path)


def _check(obj: Any, path: str, op: str, value: float, where: str, trial: bool = False) -> _Result:
    try:
        raw = _resolve_trial(obj, path) if trial else resolve(obj, path)
    except PathError as e:
        return _Result(False, None, where, str(e), unknown=True)
    a = number(raw)
    if a is None:
        return _Result(False, None, where, f"the metric has no numeric value ({raw!r})")
    ok = OPS[op](a, value)
    return _Result(ok, a, where, None if ok else f"{text.num(a)} is not {op} {text.num(value)}")


def _eval_point(p: Mapping[str, Any], path: str, op: str, value: float, summary: bool) -> _Result:
    """The result of one point: its summary value, or its worst valid trial."""
    label = _point_label(p)
    if summary:
        return _check(p.get("summary", {}), path, op, value, f"{label}, summary")
    trials = [t for t in p.get("trials", []) if t.get("valid")]
    if not trials:
        return _Result(False, None, label, "the point has no valid trial")
    results = [
        _check(t, path, op, value, f"{label}, trial {t.get('trial_id')}", trial=True)
        for t in trials
    ]
    return max(results, key=lambda r: r.badness(op, value))


def evaluate_threshold(metrics: Mapping[str, Any], threshold: Any) -> dict[str, Any]:
    """One threshold's result: metric, op, value, point, actual, passed, where, reason."""
    try:
        t = _as_dict(threshold)
    except (TypeError, ValueError):
        t = {}
    metric = str(t.get("metric", ""))
    op = str(t.get("op", "<"))
    point = t.get("point", "all")
    out: dict[str, Any] = {
        "metric": metric,
        "op": op,
        "value": t.get("value"),
        "point": point,
        "actual": None,
        "passed": False,
        "where": "",
        "reason": None,
    }
    value = number(t.get("value"))
    if not metric:
        out["reason"] = "the threshold names no metric"
        return out
    if op not in OPS:
        out["reason"] = f"unknown operator {op!r}; use one of {', '.join(OPS)}"
        return out
    if value is None:
        out["reason"] = f"the threshold value {t.get('value')!r} is not a number"
        return out
    head, _, rest = metric.partition(".")
    if head == "experiment" or head in EXPERIMENT_KEYS:
        r = _check(metrics, rest if head == "experiment" else metric, op, value, "experiment")
    else:
        points: Sequence[Mapping[str, Any]] = metrics.get("points", [])
        if isinstance(point, int) and not isinstance(point, bool):
            sel = [p for p in points if p.get("index") == point]
            if not sel:
                out["reason"] = f"no point with index {point} (the sweep has {len(points)})"
                return out
        elif point in ("all", "any", None):
            sel = list(points)
        else:
            out["reason"] = f"point must be an index, 'all' or 'any', not {point!r}"
            return out
        if not sel:
            out["reason"] = "the experiment has no points"
            return out
        summary = head == "summary"
        results = [_eval_point(p, rest if summary else metric, op, value, summary) for p in sel]
        unknown = [x for x in results if x.unknown]
        if unknown:
            r = unknown[0]
        elif point == "any":
            best = min(results, key=lambda x: x.badness(op, value))
            r = _Result(any(x.passed for x in results), best.actual, best.where, best.reason)
        else:
            r = max(results, key=lambda x: x.badness(op, value))
    if r.unknown:
        out.update(where=r.where, reason=f"unknown metric path {metric!r}: {r.reason}")
        return out
    out.update(passed=r.passed, actual=r.actual, where=r.where, reason=r.reason)
    return out


def evaluate_thresholds(
    metrics: Mapping[str, Any], thresholds: Sequence[Any]
) -> list[dict[str, Any]]:
    """All thresholds, in order (see the module docstring for the path grammar)."""
    return [evaluate_threshold(metrics, t) for t in thresholds]
