"""Presets of the command backend: YAML data files of templates, patterns and state maps.

A preset is the ``options`` of a ``command`` backend plus three metadata keys:
``description``, ``tested`` (whether it was run against the real CLI) and ``written_for``
(the CLI name and version its templates and patterns follow). Shipped presets live in
``gridbench/jobflow/backends/command/preset_files/<name>.yaml``; ``preset:`` may also be a
path to a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from gridbench.errors import SpecError
from gridbench.presets import shipped_yaml, unknown_preset
from gridbench.yamltext import parse_mapping

META_KEYS = ("description", "tested", "written_for")
_WHERE = "backend.options.preset"


@dataclass(frozen=True, slots=True)
class PresetInfo:
    """What a preset says about itself."""

    name: str
    description: str
    tested: bool
    written_for: str


def _parse(text: str, origin: str) -> dict[str, Any]:
    data = parse_mapping(
        text,
        origin,
        what=f"preset {origin}",
        where=_WHERE,
        fix="a preset holds the command backend's options (submit:, status:, states: ...)",
    )
    for key in ("tested", "written_for"):
        if key not in data:
            raise SpecError(
                f"preset {origin} does not state {key!r}",
                where=_WHERE,
                fix="every preset says tested: true|false and written_for: '<CLI and version>'",
            )
    return data


def _shipped() -> dict[str, Traversable]:
    return shipped_yaml("jobflow", "backends", "command", "preset_files")


def names() -> list[str]:
    """The shipped presets."""
    return list(_shipped())


def load(name: str) -> dict[str, Any]:
    """A preset's raw options (metadata included), by shipped name or file path."""
    if name.endswith((".yaml", ".yml")) or "/" in name:
        path = Path(name).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(
                f"cannot read preset file {str(path)!r}: {exc.strerror or exc}",
                where=_WHERE,
                fix="give a shipped preset name or the path of a readable YAML file",
            ) from None
        return _parse(text, str(path))
    shipped = _shipped()
    if name not in shipped:
        raise unknown_preset(
            name, shipped, where=_WHERE, other=" (or a path to your own .yaml preset)"
        )
    return _parse(shipped[name].read_text(encoding="utf-8"), name)


def info(name: str) -> PresetInfo:
    """The metadata of one preset."""
    data = load(name)
    return PresetInfo(
        name,
        str(data.get("description", "")).strip(),
        bool(data.get("tested")),
        str(data.get("written_for", "")),
    )


def listing() -> list[PresetInfo]:
    """Metadata of every shipped preset."""
    return [info(n) for n in names()]
