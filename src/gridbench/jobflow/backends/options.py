"""Validation of backend options with spec-style errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gridbench.errors import SpecError

M = TypeVar("M", bound=BaseModel)


def parse_options(model: type[M], options: dict[str, Any], backend: str) -> M:
    """Validate ``backend.options`` against ``model``; one SpecError listing every problem."""
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(x) for x in err["loc"]) or "(options)"
            problems.append(f"backend.options.{field}: {err['msg'].removeprefix('Value error, ')}")
        raise SpecError(
            "; ".join(problems),
            where=f"backend {backend!r}",
            fix="see docs/backends.md for this backend's options",
        ) from None
