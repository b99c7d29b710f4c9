"""Durations in any family's spec: a number of seconds or a string with a unit ("15s",
"2m", "100ms"). Each family keeps its own other units (job rates in
:mod:`gridbench.spec.units`, byte sizes in :mod:`gridbench.io.units`)."""

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
