""" "Did you mean" for a spec's unknown keys and values, from the family's own model: the
keys a misspelt key could have meant are the fields of the model at its place, the values
a misspelt value could have meant are those the error itself lists (pydantic's literal,
enum and tagged-union errors). Only a near miss is suggested (:data:`NEAR_MISS`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from gridbench.schema import models_in

_QUOTED = re.compile(r"'([^']*)'")
#: how near a word must be to be suggested: looser than a threshold path's (schema's
#: NEAR_MISS), since a suggestion never changes what is accepted (``tpc`` → ``tcp``)
NEAR_MISS = 0.6


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a spec writes for ``model``'s fields (an alias where one is declared)."""
    return [f.alias or name for name, f in model.model_fields.items()]


def _tagged(models: list[type[BaseModel]], tag: str) -> type[BaseModel] | None:
    """The member of a tagged union whose Literal field holds ``tag``."""
    for m in models:
        for f in m.model_fields.values():
            if get_origin(f.annotation) is Literal and tag in get_args(f.annotation):
                return m
    return None


def fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str] | None:
    """The keys the mapping at ``loc`` (a pydantic error's location, tags included) may
    hold, or None when the place is not a model (free-form data, an unknown shape)."""
    current: Any = model
    for part in loc:
        kinds = models_in(current)
        models = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        containers = [k for k in kinds if get_origin(k) in (dict, list)]
        if models:
            name = str(part)
            if name.startswith("[") and name.endswith("]"):  # a tagged union's member
                current = _tagged(models, name[1:-1])
                if current is None:
                    return None
                continue
            owner = next((m for m in models if name in _keys(m)), None)
            if owner is None:
                return None
            field = next(f for n, f in owner.model_fields.items() if (f.alias or n) == name)
            current = field.annotation
        elif containers:
            args = get_args(containers[0])
            current = args[-1] if args else Any
        else:
            return None
    models = [k for k in models_in(current) if isinstance(k, type) and issubclass(k, BaseModel)]
    if len(models) != 1:
        return None
    return _keys(models[0])


def _near(word: object, choices: list[str]) -> str | None:
    if not isinstance(word, str) or not choices:
        return None
    near = get_close_matches(word, choices, 1, NEAR_MISS)
    return near[0] if near else None


def did_you_mean(model: type[BaseModel] | None, err: Mapping[str, Any]) -> str | None:
    """The key or value a pydantic error's input probably meant, or None."""
    kind = err.get("type")
    loc = tuple(err.get("loc") or ())
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden" and model is not None and loc:
        keys = fields_at(model, loc[:-1])
        return _near(loc[-1], keys or [])
    if kind in ("literal_error", "enum"):  # a validator's own error lists them in its text
        listed = str(ctx.get("expected") or err.get("msg", ""))
        return _near(err.get("input"), _QUOTED.findall(listed))
    if kind == "union_tag_invalid":
        return _near(ctx.get("tag"), _QUOTED.findall(str(ctx.get("expected_tags", ""))))
    return None
