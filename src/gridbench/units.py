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


#: The longest duration a spec may give: a year (1e308 s once ended in an OverflowError).
MAX_DURATION_S = 366 * 86400.0
#: The shortest positive duration (:data:`PositiveDuration`): 1 us.
MIN_POSITIVE_S = 1e-6


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a string with a unit: ns, us, ms, s, m/min, h;
    0 to :data:`MAX_DURATION_S`."""
    seconds = parse_with_unit(
        value, _DUR, lambda x, unit: x * _DUR_UNITS[unit], "a duration", "30s, 2m or 500ms"
    )
    if not seconds <= MAX_DURATION_S:  # also catches inf from a string of 400 digits
        raise ValueError(f"a duration must be at most 366 days ({MAX_DURATION_S:.0f} s)")
    return seconds + 0.0  # -0.0 is 0


def parse_positive_duration(value: object) -> float:
    """A duration that must be longer than nothing: at least :data:`MIN_POSITIVE_S`."""
    seconds = parse_duration(value)
    if seconds < MIN_POSITIVE_S:
        raise ValueError(f"a duration here must be at least 1us, got {value!r}")
    return seconds


#: A spec field in seconds, written as a number or with a unit (30s, 2m, 500ms).
Duration = Annotated[float, BeforeValidator(parse_duration)]
#: A spec field in seconds that cannot be 0 (a trial's duration, a sampling interval).
PositiveDuration = Annotated[float, BeforeValidator(parse_positive_duration)]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


#: The largest size a spec may give (1 EiB): past it, a typo or a unit slip, and sums of
#: such sizes would leave int64.
MAX_SIZE = 1024**6


def parse_size(value: object) -> int:
    """Bytes from ``128k``/``2G``/``1.5GiB`` (binary multiples, as iozone and fio use)."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string like 128k, 2G")
    size: int | None = None
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        size = value
    elif isinstance(value, float) and value.is_integer() and value >= 0:
        size = int(value)
    elif isinstance(value, str) and (m := _SIZE.match(value)):
        size = int(float(m.group(1)) * _MULT[m.group(2).lower()])
    if size is None:
        raise ValueError(f"{value!r} is not a size; write e.g. 4k, 128k, 512M, 2G")
    if size > MAX_SIZE:
        raise ValueError(f"{value!r} is larger than 1 EiB, the largest size a spec may give")
    return size


def format_size(n: float) -> str:
    """Short binary size: 131072 -> '128k', 2147483648 -> '2G'."""
    for unit, mult in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("k", 1024)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}"


#: A spec field in bytes, written as a number or with a binary multiple (128k, 2G).
Size = Annotated[int, BeforeValidator(parse_size)]


def format_duration(s: float) -> str:
    """Seconds as '45 s', '10.0 min' or '24.0 h' (schedules, plans' estimates)."""
    if s < 120:
        return f"{s:g} s"
    return f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"
