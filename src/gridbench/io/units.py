"""Byte sizes in specs: ``2G``, ``128k``, ``512MiB``, or a bare number of bytes."""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: object) -> int:
    """Bytes from ``128k``/``2G``/``1.5GiB`` (binary multiples, as iozone and fio use)."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string like 128k, 2G")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m:
            return int(float(m.group(1)) * _MULT[m.group(2).lower()])
    raise ValueError(f"{value!r} is not a size; write e.g. 4k, 128k, 512M, 2G")


def format_size(n: float) -> str:
    """Short binary size: 131072 -> '128k', 2147483648 -> '2G'."""
    for unit, mult in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("k", 1024)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}"
