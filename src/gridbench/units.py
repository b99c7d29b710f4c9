"""Durations in any family's spec: a number of seconds or a string with a unit ("15s",
"2m", "100ms"). Each family keeps its own other units (job rates in
:mod:`gridbench.spec.units`, byte sizes in :mod:`gridbench.io.units`)."""

from __future__ import annotations

import math
import re
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


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a string with a unit: ns, us, ms, s, m/min, h."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30s, 2m or 500ms")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"a duration must be a finite number >= 0, got {value!r}")
        return float(value)
    if isinstance(value, str):
        m = _DUR.match(value)
        if m:
            return float(m.group(1)) * _DUR_UNITS[m.group(2)]
    raise ValueError(f"expected a duration such as 30s, 2m or 500ms, got {value!r}")


#: A spec field in seconds, written as a number or with a unit (30s, 2m, 500ms).
Duration = Annotated[float, BeforeValidator(parse_duration)]
