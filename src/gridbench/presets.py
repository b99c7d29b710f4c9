"""What the preset modules share (command-backend presets, reference-grid presets, the
dashboard's preset picker): the YAML files shipped inside the package, and the error for
a name that is not one of them."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable

from gridbench.errors import SpecError


def shipped_yaml(*folder: str) -> dict[str, Traversable]:
    """The ``.yaml`` files of a folder shipped in the gridbench package (e.g.
    ``"backends", "presets"``), by name without ``.yaml``, sorted by name."""
    # through the regular package: gridbench.jobflow.backends is a namespace package
    root = resources.files("gridbench")
    for part in folder:
        root = root / part
    files = sorted((p for p in root.iterdir() if p.name.endswith(".yaml")), key=lambda p: p.name)
    return {p.name.removesuffix(".yaml"): p for p in files}


def unknown_preset(
    name: str, known: Iterable[str], *, where: str, kind: str = "preset", other: str = ""
) -> SpecError:
    """The error for a preset name that is not one of ``known``; ``other`` names another
    way to give one (e.g. a path)."""
    return SpecError(
        f"unknown {kind} {name!r}", where=where, fix=f"use one of: {', '.join(known)}{other}"
    )
