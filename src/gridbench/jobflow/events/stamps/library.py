"""Shipped stamp declarations (``stamps: {use: NAME}``): YAML files in ``library/``, each
a whole plan (sources and chain order) plus ``description``, ``tested`` and
``written_for``, as the command presets are. ``use`` may also be a path to a file, or a
list of names and paths whose declarations are combined (one tier per middleware: GRAM's
and GridFTP's): their sources and orders concatenated, the longest ``settle_s``. The
``sources`` given beside ``use`` are appended; an ``order`` or ``settle_s`` given replaces
the declarations'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.errors import SpecError
from gridbench.presets import shipped_yaml, unknown_preset
from gridbench.yamltext import parse_mapping

META_KEYS = ("description", "tested", "written_for")


def names() -> list[str]:
    return list(shipped_yaml("jobflow", "events", "stamps", "library"))


def load(name: str, where: str) -> dict[str, Any]:
    """A declaration file's mapping (metadata included), by shipped name or path."""
    if name.endswith((".yaml", ".yml")) or "/" in name:
        try:
            text = Path(name).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(
                f"cannot read stamp declaration {name!r}: {exc.strerror or exc}",
                where=where,
                fix="give a shipped declaration name or the path of a readable YAML file",
            ) from None
    else:
        shipped = shipped_yaml("jobflow", "events", "stamps", "library")
        if name not in shipped:
            raise unknown_preset(name, shipped, where=where, kind="stamp declaration")
        text = shipped[name].read_text(encoding="utf-8")
    return parse_mapping(
        text,
        name,
        what=f"stamp declaration {name!r}",
        where=where,
        fix="a declaration holds sources: [...] and order: [...]",
    )


def resolve(data: Any, where: str) -> Any:
    """``data`` with ``use`` replaced by the named declaration (left alone otherwise)."""
    if not isinstance(data, dict) or "use" not in data:
        return data
    used = data["use"] if isinstance(data["use"], list) else [data["use"]]
    out: dict[str, Any] = {"sources": [], "order": []}
    for i, name in enumerate(used):
        here = f"{where}.use" if len(used) == 1 else f"{where}.use.{i}"
        base = {k: v for k, v in load(str(name), here).items() if k not in META_KEYS}
        out["sources"] += _list(base.get("sources"))
        out["order"] += _list(base.get("order"))
        if "settle_s" in base:  # the longest; a value that is not a number is validated later
            v, prev = base["settle_s"], out.get("settle_s")
            numbers = all(isinstance(x, int | float) for x in (v, prev))
            out["settle_s"] = max(v, prev) if numbers else v
    out["sources"] += _list(data.get("sources"))
    if data.get("order"):
        out["order"] = data["order"]
    if "settle_s" in data:
        out["settle_s"] = data["settle_s"]
    return out


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []
