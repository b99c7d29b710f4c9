"""Read-only views of a job-flow metrics.json dict: chain order, labels, points, failure kinds.

Everything the report shows is read through here, so a field the analysis leaves out
(or sets to null) degrades to an empty cell instead of a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench.errors import ResultsError
from gridbench.fmt import fmt_number
from gridbench.jobflow.metrics_schema import validate_metrics

SCHEMA = "gridbench.metrics/1"

#: Failure kinds in the order the runner can hit them (events/model.py FAIL_*).
FAILURE_ORDER: tuple[str, ...] = (
    "dropped",
    "submit_rejected",
    "submit_timeout",
    "submit_error",
    "submit_auth",
    "job_failed",
    "lost",
)

#: Derived latency rows that are not segments of the chain.
OTHER = "other"
OVERALL = "overall"

Json = dict[str, Any]
#: One table row: flat, the same keys in every row of a table, raw values.
Row = dict[str, Any]


def check_metrics(metrics: Mapping[str, Any], where: str = "metrics.json") -> None:
    """Raise ResultsError unless ``metrics`` looks like a gridbench.metrics/1 document."""
    if not isinstance(metrics, Mapping):
        raise ResultsError(
            "metrics is not a JSON object", where=where, fix="re-run `gridbench analyze`"
        )
    schema = metrics.get("schema")
    if schema != SCHEMA:
        raise ResultsError(
            f"unsupported metrics schema {schema!r} (expected {SCHEMA!r})",
            where=f"{where}: schema",
            fix="re-run `gridbench analyze` with this version of gridbench",
        )
    if not isinstance(metrics.get("points"), list):
        raise ResultsError(
            "metrics has no 'points' list",
            where=f"{where}: points",
            fix="re-run `gridbench analyze`; the analysis may have been interrupted",
        )
    validate_metrics(metrics, where)


def as_dict(value: Any) -> Json:
    """``value`` if it is a dict, else an empty dict (null-tolerant field access)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def num(value: Any) -> float | None:
    """A finite float, or None for null / non-numbers / NaN / inf."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if f == f and f not in (float("inf"), float("-inf")) else None


MIB = 1024.0 * 1024.0


def scaled(value: Any, factor: float) -> float | None:
    """:func:`num` times ``factor`` (a unit change), or None."""
    x = num(value)
    return None if x is None else x * factor


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One segment of the chain as declared in metrics['chain']."""

    name: str
    start: str
    end: str
    component: bool


@dataclass(frozen=True, slots=True)
class ChainView:
    """The stage chain of an experiment with display labels."""

    stages: tuple[str, ...]
    labels: Mapping[str, str]
    segments: tuple[SegmentInfo, ...]

    @property
    def components(self) -> list[str]:
        """Component segment names in chain order (they sum, with 'other', to overall)."""
        return [s.name for s in self.segments if s.component]

    def stage_label(self, stage: str) -> str:
        """The stage's label from the chain, or its name."""
        return self.labels.get(stage) or stage

    def segment_label(self, name: str) -> str:
        """A readable description of a segment or derived latency row."""
        if name == OTHER:
            return "overall − components (network, queues, polling)"
        if name == OVERALL:
            return "intended submit → client saw done"
        if name == "submit_lag":
            return "intended → submit call start"
        if name == "submit_call":
            return "submit call start → return"
        for s in self.segments:
            if s.name == name:
                return f"{self.stage_label(s.start)} → {self.stage_label(s.end)}"
        return name


def chain_view(metrics: Mapping[str, Any]) -> ChainView:
    """Build the ChainView of ``metrics['chain']`` (StageChain.to_dict() form)."""
    chain = as_dict(metrics.get("chain"))
    stages: list[str] = []
    labels: dict[str, str] = {}
    for s in as_list(chain.get("stages")):
        d = as_dict(s)
        name = d.get("name")
        if isinstance(name, str):
            stages.append(name)
            label = d.get("label")
            if isinstance(label, str) and label:
                labels[name] = label
    segments: list[SegmentInfo] = []
    for g in as_list(chain.get("segments")):
        d = as_dict(g)
        name = d.get("name")
        if isinstance(name, str):
            segments.append(
                SegmentInfo(
                    name=name,
                    start=str(d.get("start", "")),
                    end=str(d.get("end", "")),
                    component=bool(d.get("component", True)),
                )
            )
    return ChainView(stages=tuple(stages), labels=labels, segments=tuple(segments))


def points(metrics: Mapping[str, Any]) -> list[Json]:
    """The measured points, in index order."""
    pts = [as_dict(p) for p in as_list(metrics.get("points"))]
    return sorted(pts, key=lambda p: int(p.get("index", 0) or 0))


def trials(point: Mapping[str, Any]) -> list[Json]:
    """The trials of one point."""
    return [as_dict(t) for t in as_list(point.get("trials"))]


def all_trials(metrics: Mapping[str, Any]) -> list[tuple[Json, Json]]:
    """Every (point, trial) pair in order."""
    return [(p, t) for p in points(metrics) for t in trials(p)]


def rate(point: Mapping[str, Any]) -> float | None:
    """The point's offered rate in jobs/s."""
    return num(point.get("offered_rate_per_s"))


def rate_label(point: Mapping[str, Any]) -> str:
    """'1/s (60/min)' style label of a point's offered rate, or its parameters."""
    r = rate(point)
    if r is None:
        return point_label(point) or f"point {point.get('index', '?')}"
    return f"{fmt_number(r)}/s ({fmt_number(r * 60.0)}/min)"


def point_label(point: Mapping[str, Any]) -> str:
    """The point's swept parameters as 'k=v, k=v'."""
    return params_label(point.get("point"))


def params_label(params: Any) -> str:
    """Parameters as a reader writes them, 'k=v, k=v' (never a JSON object in a cell)."""
    params = as_dict(params)
    parts = []
    for k, v in params.items():
        vs = fmt_number(float(v)) if num(v) is not None else str(v)
        parts.append(f"{k}={vs}")
    return ", ".join(parts)


def _ordered(seen: Sequence[str], order: Sequence[str]) -> list[str]:
    """``seen`` (deduplicated) in the order of ``order``, unknown names after, sorted."""
    uniq = set(seen)
    known = [n for n in order if n in uniq]
    return known + sorted(uniq - set(order))


def _keys_seen(metrics: Mapping[str, Any], field: str) -> list[str]:
    """The keys of ``field`` in each point's summary and each of its trials, as seen."""
    seen: list[str] = []
    for p in points(metrics):
        seen.extend(as_dict(as_dict(p.get("summary")).get(field)).keys())
        for t in trials(p):
            seen.extend(as_dict(t.get(field)).keys())
    return seen


def throughput_stages(metrics: Mapping[str, Any]) -> list[str]:
    """Stages with throughput numbers, in chain order."""
    return _ordered(_keys_seen(metrics, "throughput"), chain_view(metrics).stages)


def latency_components(metrics: Mapping[str, Any]) -> list[str]:
    """Table-6 rows: the chain's component segments, then 'other' and 'overall'."""
    return [*chain_view(metrics).components, OTHER, OVERALL]


def latency_keys(metrics: Mapping[str, Any]) -> list[str]:
    """Every latency key found in any trial, chain segments first."""
    chain = chain_view(metrics)
    order = [s.name for s in chain.segments] + [OTHER, OVERALL, "submit_lag", "submit_call"]
    seen: list[str] = []
    for _, t in all_trials(metrics):
        seen.extend(as_dict(t.get("latency")).keys())
    return _ordered(seen, order)


def staging_kinds(metrics: Mapping[str, Any]) -> list[str]:
    """The timed transfer kinds (``upload``, ``stage_in``, ``download``, ``stage_out``)
    found in any trial, in first-seen order."""
    seen: list[str] = []
    for _, t in all_trials(metrics):
        seen.extend(as_dict(t.get("staging")).keys())
    return list(dict.fromkeys(seen))


def queue_segments(metrics: Mapping[str, Any]) -> list[str]:
    """Segments with queue numbers, in chain order."""
    seen: list[str] = []
    for _, t in all_trials(metrics):
        seen.extend(as_dict(t.get("queues")).keys())
    return _ordered(seen, [s.name for s in chain_view(metrics).segments])


def failure_kinds(metrics: Mapping[str, Any]) -> list[str]:
    """Every failure kind seen in any trial or summary, in FAILURE_ORDER."""
    return _ordered(_keys_seen(metrics, "failures"), FAILURE_ORDER)


def representative_trial(point: Mapping[str, Any], metrics: Mapping[str, Any]) -> str | None:
    """The trial that best stands for its point.

    A valid trial whose last-stage throughput is closest to the point's mean (ties: the
    lower trial index); the first trial when none is valid or nothing can be compared.
    """
    ts = trials(point)
    if not ts:
        return None
    valid = [t for t in ts if t.get("valid", True)] or ts
    stages = throughput_stages(metrics)
    summary_tp = as_dict(as_dict(point.get("summary")).get("throughput"))
    if stages:
        last = stages[-1]
        target = num(as_dict(summary_tp.get(last)).get("mean"))
        if target is not None:
            scored = []
            for i, t in enumerate(valid):
                v = num(as_dict(as_dict(t.get("throughput")).get(last)).get("average"))
                if v is not None:
                    scored.append((abs(v - target), i, t))
            if scored:
                return str(min(scored, key=lambda s: (s[0], s[1]))[2].get("trial_id"))
    return str(valid[0].get("trial_id"))


def trial_entries(
    metrics: Mapping[str, Any],
    field: Callable[[Json], Any],
    order: Sequence[str] | None = None,
) -> Iterator[tuple[Json, Json, str, Json]]:
    """Every entry of a per-trial mapping (``field`` of a trial), over each trial of each
    point: (point, trial, the entry's key as text, the entry). With ``order``, only the
    keys it names, in its order."""
    for p in points(metrics):
        for t in trials(p):
            m = as_dict(field(t))
            for key in m if order is None else [k for k in order if k in m]:
                yield p, t, str(key), as_dict(m[key])


def nums(d: Mapping[str, Any], keys: Mapping[str, str]) -> Row:
    """``{column: num(d[key])}`` for each column and key of ``keys``, in their order."""
    return {col: num(d.get(key)) for col, key in keys.items()}


def point_cols(p: Mapping[str, Any]) -> Row:
    """The columns every per-point row starts with: index, label and offered rate."""
    r = rate(p)
    return {
        "point_index": p.get("index"),
        "point": point_label(p),
        "rate_per_s": r,
        "rate_per_min": None if r is None else r * 60.0,
    }


def model_of(obj: Mapping[str, Any], kind: str) -> Row:
    """The trial's (or summary's) ``model`` object when it is of ``kind``, else {}."""
    m = as_dict(obj.get("model"))
    return m if m.get("kind") == kind else {}


def model_trials(p: Mapping[str, Any], kind: str) -> list[tuple[Json, Row]]:
    """The point's trials that have a ``kind`` model object, each with that object."""
    ts = [(t, model_of(t, kind)) for t in trials(p)]
    return [(t, m) for t, m in ts if m]


def model_rows(
    metrics: Mapping[str, Any], kind: str, rows_of: Callable[[Row, Row], list[Row]]
) -> list[Row]:
    """``rows_of(head, m)`` of each trial's ``kind`` object (a :func:`trial_head`), then,
    when the point has several trials, of its summary's (a :func:`point_head`, valid when
    any trial is)."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, kind)
        for t, m in ts:
            rows += rows_of(trial_head(p, t), m)
        summ = model_of(as_dict(p.get("summary")), kind)
        if len(ts) > 1 and summ:
            rows += rows_of(point_head(p, any(t.get("valid", True) for t, _ in ts)), summ)
    return rows


def mean_of(value: Any) -> float | None:
    """A trial's number, or the mean of a point summary's rep object."""
    return num(as_dict(value).get("mean")) if isinstance(value, Mapping) else num(value)


def trial_head(p: Mapping[str, Any], t: Mapping[str, Any]) -> Row:
    """The columns a closed model's trial row starts with (level 'trial')."""
    return {
        **point_cols(p),
        "level": "trial",
        "trial_id": t.get("trial_id"),
        "valid": bool(t.get("valid", True)),
    }


def point_head(p: Mapping[str, Any], valid: bool) -> Row:
    """The columns a closed model's point row starts with (level 'point')."""
    return {**point_cols(p), "level": "point", "trial_id": None, "valid": valid}


def stat_cols(prefix: str, st: Mapping[str, Any]) -> Row:
    """n, mean, min, max and CI of a stats object as ``<prefix>_avg_s``-style columns."""
    return {
        f"n_{prefix}": num(st.get("n")),
        f"{prefix}_avg_s": num(st.get("mean")),
        f"{prefix}_min_s": num(st.get("min")),
        f"{prefix}_max_s": num(st.get("max")),
        f"{prefix}_ci95_s": num(st.get("ci95")),
    }
