"""Durations and byte sizes in any family's spec: a number of seconds or a string with a
unit ("15s", "2m", "100ms"); a number of bytes or a string with a binary multiple ("128k",
"2G"). Job rates stay with job flow (:mod:`gridbench.jobflow.specbase.units`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BeforeValidator

_DUR = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|ms|s|m|min|h)?\s*$")
_DUR_UNITS = {
    None: 1.0,
    "s": 1.0,
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
}


def parse_with_unit(
    value: object,
    pattern: re.Pattern[str],
    convert: Callable[[float, str | None], float],
    what: str,
    example: str,
) -> float:
    """A quantity from a number (``convert(number, None)``) or a string that ``pattern``
    matches as (number, unit or None); errors name ``what`` ("a duration") and an
    ``example`` ("30s, 2m or 500ms"). Booleans, negatives and non-finite numbers are
    refused."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what} such as {example}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
        return convert(float(value), None)
    if isinstance(value, str):
        m = pattern.match(value)
        if m:
            return convert(float(m.group(1)), m.group(2))
    raise ValueError(f"expected {what} such as {example}, got {value!r}")


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a string with a unit: ns, us, ms, s, m/min, h."""
    return parse_with_unit(
        value, _DUR, lambda x, unit: x * _DUR_UNITS[unit], "a duration", "30s, 2m or 500ms"
    )


#: A spec field in seconds, written as a number or with a unit (30s, 2m, 500ms).
Duration = Annotated[float, BeforeValidator(parse_duration)]

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


#: A spec field in bytes, written as a number or with a binary multiple (128k, 2G).
Size = Annotated[int, BeforeValidator(parse_size)]
