"""Loading an ``io`` spec with errors that name the file, line, field and fix.

Reuses the job-flow spec loader's YAML parsing, ``--set`` overrides and error formatting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.io.model import IoSpec
from gridbench.specload import parse_with_overrides, read_spec_text, validate_spec


def load_io_spec_text(
    text: str, origin: str = "<spec>", overrides: list[str] | None = None
) -> tuple[IoSpec, dict[str, Any]]:
    """Parse, override and validate spec text; returns the model and the plain data."""
    root, data, overridden = parse_with_overrides(text, origin, overrides)
    spec = validate_spec(
        IoSpec,
        data,
        root,
        origin,
        overridden,
        what="an io spec",
        keys="name:, targets:, ...",
        template="examples/io-local-quick.yaml",
        docs="docs/io.md",
    )
    return spec, data


def load_io_spec(
    path: str | Path, overrides: list[str] | None = None
) -> tuple[IoSpec, dict[str, Any]]:
    """Load an ``io`` spec file."""
    return load_io_spec_text(read_spec_text(path), str(path), overrides)
