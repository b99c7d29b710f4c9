"""Loading an ``io`` spec with errors that name the file, line, field and fix.

Reuses the job-flow spec loader's YAML parsing, ``--set`` overrides and error formatting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gridbench.errors import SpecError
from gridbench.io.model import IoSpec
from gridbench.specload import parse_with_overrides, read_spec_text, validation_error


def load_io_spec_text(
    text: str, origin: str = "<spec>", overrides: list[str] | None = None
) -> tuple[IoSpec, dict[str, Any]]:
    """Parse, override and validate spec text; returns the model and the plain data."""
    root, data, overridden = parse_with_overrides(text, origin, overrides)
    if not isinstance(data, dict):
        raise SpecError(
            "an io spec must be a YAML mapping (name:, targets:, ...)",
            where=origin,
            fix="see examples/io-local-quick.yaml for a template",
        )
    try:
        spec = IoSpec.model_validate(data)
    except ValidationError as exc:
        err = validation_error(exc, root, origin, overridden)
        raise SpecError(err.message.replace("docs/spec.md", "docs/io.md")) from None
    return spec, data


def load_io_spec(
    path: str | Path, overrides: list[str] | None = None
) -> tuple[IoSpec, dict[str, Any]]:
    """Load an ``io`` spec file."""
    return load_io_spec_text(read_spec_text(path), str(path), overrides)
