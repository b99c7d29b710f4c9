"""Job flow's load models as plugins: one module each, registered in :data:`LOAD_MODELS`.

Adding a load model is one new module (its spec, plan, runner, analysis and report
sections; see :mod:`gridbench.jobflow.loads.base`) and one line here. The spec's
``load:`` block is the union of the registered models' specs, discriminated on ``model``
(:func:`load_spec_type`).

The registry is a plain dict rather than an entry-point group: a load model is part of job
flow, not a separate distribution; the order is fixed (it orders the union, the allowed
values in error messages and the web form's choices); and a new module works without
re-installing the package to refresh entry-point metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from gridbench.jobflow.loads import batch, probe, retry, split, sustain
from gridbench.jobflow.loads import open as open_
from gridbench.jobflow.loads.base import (
    DEFAULT_MODEL,
    BaseLoadModel,
    LoadBase,
    LoadModel,
    PlanEstimate,
    TrialContext,
)

__all__ = [
    "DEFAULT_MODEL",
    "LOAD_MODELS",
    "BaseLoadModel",
    "LoadBase",
    "LoadModel",
    "PlanEstimate",
    "TrialContext",
    "field_names",
    "find",
    "get",
    "load_spec_type",
    "names",
]

#: Every load model, by its ``load.model`` name. The one registration of a new model.
LOAD_MODELS: dict[str, LoadModel] = {
    m.name: m
    for m in (open_.MODEL, sustain.MODEL, batch.MODEL, probe.MODEL, retry.MODEL, split.MODEL)
}


def names() -> tuple[str, ...]:
    """The registered models' names, in registration order."""
    return tuple(LOAD_MODELS)


def find(name: str | None) -> LoadModel | None:
    """The model called ``name``; ``None`` for an unknown name (old or foreign results)."""
    return LOAD_MODELS.get(name) if name is not None else None


def get(name: str) -> LoadModel:
    """The model called ``name`` (a validated spec names a registered one)."""
    model = find(name)
    if model is None:
        raise KeyError(f"unknown load model {name!r}; known: {', '.join(LOAD_MODELS)}")
    return model


def field_names() -> frozenset[str]:
    """Every field of every model's ``load:`` block (the sweep keys that mean load.<key>)."""
    return frozenset(f for m in LOAD_MODELS.values() for f in m.spec.model_fields)


def _quoted(items: list[str]) -> str:
    """'a', 'b' or 'c' (pydantic's wording for literals)."""
    q = [repr(i) for i in items]
    return q[0] if len(q) == 1 else f"{', '.join(q[:-1])} or {q[-1]}"


def _error(kind: str, message: str, key: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError(kind, message), loc=(key,), input=value)


def _check_load(data: Any) -> Any:
    """Before the union picks a member: default the model, and name an unknown model or a
    field of another model as such (a flat "extra field" error would hide why)."""
    if not isinstance(data, Mapping):
        return data
    name = data.get("model", DEFAULT_MODEL)
    model = LOAD_MODELS.get(name) if isinstance(name, str) else None
    if model is None:
        # the error types map to the spec loader's fixes (allowed values; remove the field)
        msg = f"Input should be {_quoted(list(LOAD_MODELS))}"
        raise ValidationError.from_exception_data(
            "load", [_error("literal_error", msg, "model", name)]
        )
    errors = []
    for key in data:
        if key in model.spec.model_fields:
            continue
        owner = next((m for m in LOAD_MODELS.values() if key in m.spec.model_fields), None)
        if owner is not None:
            about = owner.spec.model_fields[key].description
            msg = (
                f"{key}{f' ({about})' if about else ''} is a field of model: {owner.name}, "
                f"not of model: {model.name}"
            )
            errors.append(_error("extra_forbidden", msg, key, data[key]))
    if errors:
        raise ValidationError.from_exception_data("load", errors)
    return data if "model" in data else {**data, "model": DEFAULT_MODEL}


def _tag(value: Any) -> str:
    # Spelled '[name]': pydantic puts the tag into error locations (load.[open].rate) and
    # the spec loader drops location parts with brackets, so users read load.rate.
    name = value.get("model") if isinstance(value, Mapping) else getattr(value, "model", None)
    return f"[{name if isinstance(name, str) else DEFAULT_MODEL}]"


def load_spec_type() -> Any:
    """The type of a spec's ``load:``: the registered models' specs, discriminated on
    ``model`` (which defaults to open)."""
    members = tuple(Annotated[m.spec, Tag(f"[{n}]")] for n, m in LOAD_MODELS.items())
    return Annotated[
        Union[members],  # noqa: UP007  (a union built at run time: no | spelling)
        Field(discriminator=Discriminator(_tag)),
        BeforeValidator(_check_load),
    ]
