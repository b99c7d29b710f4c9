"""The structure of a job-flow ``metrics.json`` (``gridbench.metrics/1``), checked.

metrics.json is foreign input: the store may be shared, a run copied in, a crash may
leave it half written. ``validate_metrics`` checks the parts the report and compare code
rely on, before any of it is read, and raises one :class:`ResultsError` naming the file
and the first bad field (``points.0.trials.2.latency.overall.p99: Input should be a
valid number``).

Every model allows extra fields (a later analysis may add some), and most fields may be
absent or ``null`` (undefined values are null, see docs/metrics.md); what is there must
have its type. Numbers are checked by hand rather than by pydantic's lax mode, which
would accept ``"1.5"`` or ``true`` as a number: a number is an int or float (numpy's
too: the report also runs on the analysis' own objects), never a bool or a string.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from gridbench.errors import ResultsError

SCHEMA = "gridbench.metrics/1"


def _number(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
        raise PydanticCustomError("number_type", "Input should be a valid number")
    return float(v)


def _count(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    if isinstance(v, numbers.Integral):
        return int(v)
    f = float(v)
    if f.is_integer():
        return int(f)
    raise PydanticCustomError("int_type", "Input should be a valid integer")


def _flag(v: Any) -> bool | None:
    if v is None:
        return None
    if not isinstance(v, bool | np.bool_):
        raise PydanticCustomError("bool_type", "Input should be true or false")
    return bool(v)


def _text(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "Input should be a valid string")
    return str(v)


#: A number or null (never a bool or a numeric string).
Num = Annotated[float | None, PlainValidator(_number)]
#: An integer (an integral float is accepted) or null.
Count = Annotated[int | None, PlainValidator(_count)]
#: true, false or null.
Flag = Annotated[bool | None, PlainValidator(_flag)]
#: A string or null.
Text = Annotated[str | None, PlainValidator(_text)]


class _Open(BaseModel):
    """Extra fields allowed; what is declared is checked where present."""

    model_config = ConfigDict(extra="allow", frozen=True)


# --- the chain ---------------------------------------------------------------------------


class Stage(_Open):
    name: Text = None
    source: Text = None
    label: Text = None
    precision_ns: Count = None


class Segment(_Open):
    name: Text = None
    start: Text = None
    end: Text = None
    component: Flag = None


class Chain(_Open):
    stages: list[Stage] = []
    segments: list[Segment] = []


# --- one trial ---------------------------------------------------------------------------


class Stats(_Open):
    """Descriptive statistics of one latency (docs/metrics.md, "Latency")."""

    n: Count = None
    mean: Num = None
    min: Num = None
    max: Num = None
    std: Num = None
    p50: Num = None
    p90: Num = None
    p99: Num = None
    p999: Num = None
    ci95: Num = None


class StageThroughput(_Open):
    average: Num = None
    steady: Num = None
    expected_ratio: Num = None
    edgi_ratio: Num = None
    count: Count = None


class Queue(_Open):
    final: Num = None
    max: Num = None
    growth_per_s: Num = None


class Warmup(_Open):
    method: Text = None
    fraction: Num = None
    trimmed_jobs: Count = None
    note: Text = None


class TrialValidity(_Open):
    valid: Flag = None
    reasons: list[Text] = []
    warnings: list[Text] = []
    late_share: Num = None
    dropped_share: Num = None
    client_bound: Flag = None
    client_cpu_max: Num = None
    client_cpu_mean: Num = None


class Trial(_Open):
    trial_id: Text = None
    trial_index: Count = None
    valid: Flag = None
    status: Text = None
    offered_rate_per_s: Num = None
    jobs: dict[str, Count] = {}
    latency: dict[str, Stats] = {}
    throughput: dict[str, StageThroughput] = {}
    failures: dict[str, Count] = {}
    failure_rate: Num = None
    queues: dict[str, Queue] = {}
    warmup: Warmup | None = None
    window_s: Num = None
    validity: TrialValidity | None = None
    bottleneck: Text = None
    background_queue: dict[str, Num] = {}
    model: dict[str, Any] | None = None


# --- one point ---------------------------------------------------------------------------


class Rep(_Open):
    """One metric across the repetitions of a point."""

    n: Count = None
    mean: Num = None
    std: Num = None
    min: Num = None
    max: Num = None
    ci95: Num = None


class RepQueue(_Open):
    growth_per_s: Rep | None = None
    max: Rep | None = None


class Outlier(_Open):
    trial_id: Text = None
    metric: Text = None
    value: Num = None
    reason: Text = None
    kept: Flag = None


class Excluded(_Open):
    trial_id: Text = None
    reason: Text = None


class Summary(_Open):
    throughput: dict[str, Rep] = {}
    throughput_edgi: dict[str, Rep] = {}
    expected_ratio: dict[str, Rep] = {}
    edgi_ratio: dict[str, Rep] = {}
    latency: dict[str, Rep] = {}
    failures: dict[str, Rep] = {}
    queues: dict[str, RepQueue] = {}
    valid_trials: Count = None
    invalid_trials: Count = None
    used_trials: Count = None
    outliers: list[Outlier] = []
    excluded: list[Excluded] = []
    bottleneck_corroborated: Flag = None
    model: dict[str, Any] | None = None


class Point(_Open):
    index: Count = None
    point: dict[str, Any] = {}
    offered_rate_per_s: Num = None
    trials: list[Trial] = []
    summary: Summary | None = None
    bottleneck: Text = None
    bottleneck_evidence: Text = None


# --- the experiment ----------------------------------------------------------------------


class Knee(_Open):
    capacity_per_s: Num = None
    capacity_ci95: list[Num] | None = None
    first_failing_rate_per_s: Num = None
    highest_sustained_rate_per_s: Num = None
    limited_by: Text = None
    statement: Text = None


class Bottleneck(_Open):
    stage: Text = None
    segment: Text = None
    from_rate_per_s: Num = None
    evidence: Text = None
    statement: Text = None


class FailuresAtRate(_Open):
    index: Count = None
    offered_rate_per_s: Num = None
    failed_share: Rep | None = None
    by_kind: dict[str, Rep] = {}


class Validity(_Open):
    valid: Flag = None
    invalid_trials: list[Text] = []
    reasons: list[Text] = []


class Threshold(_Open):
    """One threshold's result (``value`` and ``point`` are echoed from the spec as given,
    so they are not checked)."""

    metric: Text = None
    op: Text = None
    passed: Flag = None
    actual: Num = None
    where: Text = None
    reason: Text = None


class JobflowMetrics(_Open):
    """The top level of ``gridbench.metrics/1``."""

    experiment: Text = None
    load_model: Text = None
    chain: Chain | None = None
    analysis: dict[str, Any] | None = None
    points: list[Point]
    knee: Knee | None = None
    bottleneck: Bottleneck | None = None
    failures_vs_rate: list[FailuresAtRate] = []
    growth: list[dict[str, Any]] = []
    validity: Validity | None = None
    thresholds: list[Threshold] = []


def _field_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fix(where: str) -> str:
    p = Path(where)
    run = str(p.parent) if p.name == "metrics.json" and str(p.parent) != "." else "RUN"
    return f"re-run 'gridbench analyze {run}' (the file may be half written or from elsewhere)"


def schema_error(exc: ValidationError, where: str) -> ResultsError:
    """One ResultsError for the first error pydantic found (and how many more there are)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    msg = str(first["msg"])
    if first["type"] != "missing":
        msg += f", got {_shown(first.get('input'))}"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more bad field{'s' if len(errors) > 2 else ''})"
    return ResultsError(msg, where=f"{where}: {_field_path(tuple(first['loc']))}", fix=_fix(where))


def validate_metrics(data: Any, where: str = "metrics.json") -> dict[str, Any]:
    """``data`` if it is a ``gridbench.metrics/1`` document of the expected structure,
    else ResultsError naming ``where`` and the first bad field path."""
    if not isinstance(data, Mapping):
        raise ResultsError(
            f"metrics is not a JSON object, got {type(data).__name__}",
            where=where,
            fix=_fix(where),
        )
    if data.get("schema") != SCHEMA:
        raise ResultsError(
            f"unsupported metrics schema {_shown(data.get('schema'))} (expected {SCHEMA!r})",
            where=f"{where}: schema",
            fix=_fix(where),
        )
    try:
        JobflowMetrics.model_validate(data)
    except ValidationError as exc:
        raise schema_error(exc, where) from None
    return data if isinstance(data, dict) else dict(data)
