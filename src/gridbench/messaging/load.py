"""Loading a ``net`` spec with errors that name the file, line, field and fix (the shared
loader of :mod:`gridbench.specload`, as every family uses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.messaging.model import NetSpec
from gridbench.specload import parse_with_overrides, read_spec_text, validate_spec


def load_net_spec_text(
    text: str, origin: str = "<spec>", overrides: list[str] | None = None
) -> tuple[NetSpec, dict[str, Any]]:
    """Parse, override and validate spec text; returns the model and the plain data."""
    root, data, overridden = parse_with_overrides(text, origin, overrides)
    spec = validate_spec(
        NetSpec,
        data,
        root,
        origin,
        overridden,
        what="a net spec",
        keys="name:, environments:, pingpong:, echo:, burst:, transfer:, floor:",
        template="examples/net-loopback-quick.yaml",
        docs="docs/net.md",
    )
    return spec, data


def load_net_spec(
    path: str | Path, overrides: list[str] | None = None
) -> tuple[NetSpec, dict[str, Any]]:
    """Load a ``net`` spec file."""
    return load_net_spec_text(read_spec_text(path), str(path), overrides)
