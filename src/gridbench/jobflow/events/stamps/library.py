"""Shipped stamp declarations (``stamps: {use: NAME}``): YAML files in ``library/``, each
a whole plan (sources and chain order) plus ``description``, ``tested`` and
``written_for``, as the command presets are. ``use`` may also be a path to a file; the
``sources`` given beside ``use`` are appended and an ``order`` given replaces the file's.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from gridbench.errors import SpecError
from gridbench.presets import shipped_yaml, unknown_preset

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
    try:
        data = YAML(typ="safe", pure=True).load(io.StringIO(text))
    except YAMLError as exc:
        raise SpecError(
            f"stamp declaration {name!r} is not valid YAML: {exc}".replace("\n", " "),
            where=where,
            fix="fix the YAML syntax of the file",
        ) from None
    if not isinstance(data, dict):
        raise SpecError(
            f"stamp declaration {name!r} is not a mapping",
            where=where,
            fix="a declaration holds sources: [...] and order: [...]",
        )
    return data


def resolve(data: Any, where: str) -> Any:
    """``data`` with ``use`` replaced by the named declaration (left alone otherwise)."""
    if not isinstance(data, dict) or "use" not in data:
        return data
    base = load(str(data["use"]), f"{where}.use")
    out = {k: v for k, v in base.items() if k not in META_KEYS}
    extra = data.get("sources") or []
    out["sources"] = [*(out.get("sources") or []), *(extra if isinstance(extra, list) else [])]
    if data.get("order"):
        out["order"] = data["order"]
    return out
