"""The structure of an io ``metrics.json`` (``gridbench.io/1``), checked.

metrics.json is foreign input: the store may be shared, a run copied in, a crash may
leave it half written. ``validate_metrics`` checks the parts the io report and compare
code rely on, before any of it is read, and raises one :class:`ResultsError` naming the
file and the first bad field (``matrix.3.kbps.mean: Input should be a valid number``).

Every model allows extra fields and most fields may be absent or ``null``; what is there
must have its type. Numbers are checked by hand (never a bool or a numeric string). The
scalar checks repeat job flow's (``gridbench.jobflow.metrics_schema``): the two families
never import each other.
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

SCHEMA = "gridbench.io/1"


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


# --- the figures -------------------------------------------------------------------------


class Rep(_Open):
    """One figure across repetitions (``gridbench.stats.rep``)."""

    n: Count = None
    mean: Num = None
    std: Num = None
    min: Num = None
    max: Num = None
    ci95: Num = None


class Entry(_Open):
    """One (test, target) of the iozone matrix."""

    test: Text = None
    target: Text = None
    kbps: Rep | None = None
    lat_ms: dict[str, Num] = {}
    baseline: Text = None
    baseline_kbps: Num = None
    speedup: Num = None
    cpu_pct: Num = None


class CacheEffect(_Open):
    target: Text = None
    reread_over_read: Num = None
    cached: Flag = None
    statement: Text = None


class Cdf(_Open):
    target: Text = None
    test: Text = None
    ms: list[Num] = []
    cdf: list[Num] = []


class LatencySeries(_Open):
    target: Text = None
    test: Text = None
    direction: Text = None
    n: Num = None
    p50_ms: Num = None
    p99_ms: Num = None
    p999_ms: Num = None
    second: list[Num] = []
    ios: list[Num] = []
    p99_ms_per_s: list[Num] = []


class Concurrency(_Open):
    target: Text = None
    test: Text = None
    clients: Count = None
    files: Count = None
    last_done_kbps: Rep | None = None
    first_done_kbps: Rep | None = None
    finish_spread_s: Num = None
    per_client_kbps: dict[str, Num] = {}
    lat_ms: dict[str, Num] = {}


class Bonnie(_Open):
    target: Text = None
    column: Text = None
    kbps: Rep | None = None
    cpu_pct: Num = None
    baseline_kbps: Num = None
    speedup: Num = None
    note: Text = None


class Check(_Open):
    """One consistency check (``ok`` null: not run)."""

    check: Text = None
    ok: Flag = None
    seconds: Num = None
    detail: Text = None


class Http(_Open):
    size: Count = None
    op: Text = None
    seconds: Rep | None = None
    mib_s: Rep | None = None
    ok: Flag = None


class Threshold(_Open):
    """One threshold's result (``value`` and ``point`` are echoed from the spec as given,
    so they are not checked)."""

    metric: Text = None
    op: Text = None
    passed: Flag = None
    actual: Num = None
    where: Text = None
    reason: Text = None
    target: Text = None
    test: Text = None
    ok: Flag = None
    detail: Text = None


class Runtime(_Open):
    target: Text = None
    test: Text = None
    kind: Text = None
    direction: Text = None
    clients: Count = None
    rows: Count = None
    short_rows: Count = None
    runtime_ms: Num = None
    runtime_ms_max: Num = None
    resolution: Num = None


class Flagged(Runtime):
    rule: Text = None
    detail: Text = None
    limit: Num = None


class Rule(_Open):
    name: Text = None
    description: Text = None


class Validity(_Open):
    valid: Flag = None
    flags: list[Flagged] = []
    rules: list[Rule] = []
    max_resolution: Num = None
    runtimes: list[Runtime] = []


class Iozone(_Open):
    file_size: Num = None
    record_size: Num = None
    include_close: Flag = None
    include_flush: Flag = None


class Target(_Open):
    name: Text = None
    path: Text = None
    cache_requested: Text = None
    cache_used: Text = None


class IoMetrics(_Open):
    """The top level of ``gridbench.io/1``."""

    name: Text = None
    status: Text = None
    error: Text = None
    baseline: Text = None
    speedup_formula: Text = None
    repetitions: Count = None
    iozone: Iozone | None = None
    targets: list[Target] = []
    matrix: list[Entry]
    cache_effects: list[CacheEffect] = []
    latency_cdf: list[Cdf] = []
    latency_series: list[LatencySeries] = []
    concurrency: list[Concurrency] = []
    bonnie: list[Bonnie] = []
    consistency: list[Check] = []
    http: list[Http] = []
    thresholds: list[Threshold] = []
    validity: Validity | None = None
    thresholds_ok: Flag = None
    consistency_ok: Flag = None


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
    """``data`` if it is a ``gridbench.io/1`` document of the expected structure,
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
        IoMetrics.model_validate(data)
    except ValidationError as exc:
        raise schema_error(exc, where) from None
    return data if isinstance(data, dict) else dict(data)
