"""Loading a ``study`` spec with errors that name the file, line, field and fix (the shared
loader of :mod:`gridbench.specload`, as every family uses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.specload import parse_with_overrides, read_spec_text, validate_spec
from gridbench.study.model import StudySpec


def load_study_spec_text(
    text: str, origin: str = "<spec>", overrides: list[str] | None = None
) -> tuple[StudySpec, dict[str, Any]]:
    """Parse, override and validate spec text; returns the model and the plain data."""
    root, data, overridden = parse_with_overrides(text, origin, overrides)
    spec = validate_spec(
        StudySpec,
        data,
        root,
        origin,
        overridden,
        what="a study spec",
        keys="name:, purpose:, tools:, participants:, questionnaires:, comparisons:",
        template="examples/study-ahe.yaml",
        docs="docs/study.md",
    )
    return spec, data


def load_study_spec(
    path: str | Path, overrides: list[str] | None = None
) -> tuple[StudySpec, dict[str, Any]]:
    """Load a ``study`` spec file."""
    return load_study_spec_text(read_spec_text(path), str(path), overrides)
