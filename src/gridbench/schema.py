"""Checked structure for a family's ``metrics.json``: the scalar types every family's
schema models use, and one way to turn a validation failure into a clear error.

metrics.json is foreign input (a shared store, a run copied in, a file half written by a
crash). A family describes its document with pydantic models built on :class:`OpenModel`
(extra fields allowed, declared ones typed where present) and these scalars, which never
take a bool or a numeric string for a number; :func:`validate_document` raises one
:class:`~gridbench.errors.ResultsError` naming the file, the first bad field and the fix.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from difflib import get_close_matches
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from gridbench.errors import ResultsError
from gridbench.sections import ValidityRule as ValidityRule  # re-exported


def _is_bool(v: Any) -> bool:
    """A bool, numpy's included (none can exist before numpy is imported: this module does
    not import it, so that loading a spec does not pay for numpy)."""
    np = sys.modules.get("numpy")
    return isinstance(v, bool) or (np is not None and isinstance(v, np.bool_))


def _number(v: Any) -> float | None:
    if v is None:
        return None
    if _is_bool(v) or not isinstance(v, numbers.Real):
        raise PydanticCustomError("number_type", "Input should be a valid number")
    return float(v)


def _count(v: Any) -> int | None:
    if v is None:
        return None
    if _is_bool(v) or not isinstance(v, numbers.Real):
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
    if not _is_bool(v):
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


class OpenModel(BaseModel):
    """Extra fields allowed; what is declared is checked where present."""

    model_config = ConfigDict(extra="allow", frozen=True)


# --- shapes every family's metrics share ----------------------------------------------------


class Rep(OpenModel):
    """One figure across repetitions or trials (``gridbench.stats.rep``)."""

    n: Count = None
    mean: Num = None
    std: Num = None
    min: Num = None
    max: Num = None
    ci95: Num = None


class Described(Rep):
    """A sample described (``gridbench.stats.describe``): a rep's figures and the
    percentiles."""

    p50: Num = None
    p90: Num = None
    p99: Num = None
    p999: Num = None


class ThresholdResult(OpenModel):
    """One threshold's result (``gridbench.thresholds``; ``value`` and ``point`` are echoed
    from the spec as given, so they are not checked)."""

    metric: Text = None
    op: Text = None
    passed: Flag = None
    actual: Num = None
    where: Text = None
    reason: Text = None


class RuleDoc(OpenModel):
    """One validity rule as the metrics record it (:func:`validity_document`)."""

    name: Text = None
    description: Text = None


class ValidityDoc(OpenModel):
    """The ``validity`` block of a family's metrics (:func:`validity_document`). A family
    subclasses it with its own ``flags`` record (``flags: list[Flagged] = []``, which
    keeps its place) and its own extra fields."""

    valid: Flag = None
    flags: Sequence[OpenModel] = []
    rules: list[RuleDoc] = []


def validity_document(
    flags: list[dict[str, Any]], rules: Sequence[ValidityRule], **more: Any
) -> dict[str, Any]:
    """``metrics["validity"]`` as every family writes it: ``valid`` (no rule flagged
    anything), the ``flags``, the ``rules`` applied (name, description), then the
    family's own ``more``."""
    return {
        "valid": not flags,
        "flags": flags,
        "rules": [{"name": r.name, "description": r.description} for r in rules],
        **more,
    }


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


def validate_document(
    data: Any, model: type[BaseModel], schema: str, where: str = "metrics.json"
) -> dict[str, Any]:
    """``data`` if it is a ``schema`` document that ``model`` accepts, else one
    ResultsError naming ``where`` and the first bad field path."""
    if not isinstance(data, Mapping):
        raise ResultsError(
            f"metrics is not a JSON object, got {type(data).__name__}",
            where=where,
            fix=_fix(where),
        )
    if data.get("schema") != schema:
        raise ResultsError(
            f"unsupported metrics schema {_shown(data.get('schema'))} (expected {schema!r})",
            where=f"{where}: schema",
            fix=_fix(where),
        )
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise schema_error(exc, where) from None
    return data if isinstance(data, dict) else dict(data)


# -- threshold paths checked against the schema before a run ------------------------------

#: How close a name must be to a known one to be taken for a misspelling of it.
NEAR_MISS = 0.75


def models_in(annotation: Any) -> list[Any]:
    """The alternatives of a (possibly optional or annotated) type, ``None`` left out."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return models_in(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [a for arg in get_args(annotation) for a in models_in(arg)]
    return [] if annotation is type(None) else [annotation]


def _instead(parts: tuple[str, ...], i: int, near: list[str]) -> str | None:
    """The path with part ``i`` replaced by its nearest known name, if there is one."""
    return ".".join([*parts[:i], near[0], *parts[i + 1 :]]) if near else None


def path_problem(
    model: type[BaseModel],
    path: str,
    known_keys: Callable[[tuple[str, ...]], Collection[str] | None] = lambda _: None,
) -> tuple[str, str | None] | None:
    """Why ``path`` cannot name a figure of a document shaped like ``model``: (what is
    wrong, the name it probably meant or None); None when it may. Only what is surely a
    misspelling is refused: a near miss of a model's field (an open model may hold others),
    or of a mapping's key that ``known_keys(prefix)`` names (a key nobody declared may
    still appear, as a collector's stage does); a list takes an index, and a single value
    ends the path."""
    parts = tuple(p for p in path.split(".") if p)
    if not parts:
        return "an empty path", None
    current: Any = model
    for i, part in enumerate(parts):
        here = ".".join(parts[: i + 1])
        kinds = models_in(current)
        cls = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
        origin = next((get_origin(k) for k in kinds if get_origin(k) in (dict, list)), None)
        if cls is not None:
            if part not in cls.model_fields:
                # an open model may hold fields it does not declare: refuse near misses only
                near = get_close_matches(part, list(cls.model_fields), 1, NEAR_MISS)
                return (f"'{here}' names nothing", _instead(parts, i, near)) if near else None
            current = cls.model_fields[part].annotation
        elif origin is dict:
            known = known_keys(parts[:i])
            if known and part not in known:
                near = get_close_matches(part, sorted(known), 1, NEAR_MISS)
                if near:
                    return f"'{here}' names nothing", _instead(parts, i, near)
            args = get_args(next(k for k in kinds if get_origin(k) is dict))
            current = args[1] if len(args) == 2 else Any
        elif origin is list:
            if not part.isdigit():
                return f"'{'.'.join(parts[:i])}' is a list: '{part}' is not an index", None
            args = get_args(next(k for k in kinds if get_origin(k) is list))
            current = args[0] if args else Any
        elif Any in kinds or not kinds:
            return None  # free-form data: nothing to check further
        else:
            return f"'{'.'.join(parts[:i])}' is a single value: '{part}' cannot follow it", None
    return None
