"""YAML text of plain data, the one way gridbench writes YAML (spec.yaml, presets, the
dashboard's forms). A foundation: it imports nothing of gridbench, so the store (which
writes a run's spec.yaml) and the spec loader both stand on it."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML


def dump_yaml(data: Any) -> str:
    """``data`` (plain dicts, lists and scalars) as block-style YAML text."""
    buf = io.StringIO()
    y = YAML(typ="safe", pure=True)
    y.default_flow_style = False
    y.dump(data, buf)
    return buf.getvalue()
