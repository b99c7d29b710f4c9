"""Job rates in specs ("60" per minute, "2/s", "120/min"). Durations are core:
:mod:`gridbench.units`."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator

_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:/\s*(s|sec|m|min|h|hour))?\s*$")
_RATE_DIV = {None: 60.0, "min": 60.0, "m": 60.0, "s": 1.0, "sec": 1.0, "h": 3600.0, "hour": 3600.0}


def parse_rate(value: object) -> float:
    """Jobs/s from a bare number (jobs per MINUTE, as the seeds) or 'N/s', 'N/min', 'N/h'."""
    if isinstance(value, bool):
        raise ValueError("expected a rate such as 60 (per minute), 2/s or 120/min")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"a rate must be a finite number >= 0, got {value!r}")
        return float(value) / 60.0
    if isinstance(value, str):
        m = _RATE.match(value)
        if m:
            return float(m.group(1)) / _RATE_DIV[m.group(2)]
    raise ValueError(f"expected a rate such as 60 (per minute), 2/s or 120/min, got {value!r}")


def format_rate(per_s: float) -> str:
    """Human rate in the unit that reads best."""
    if per_s >= 1 or per_s == 0:
        return f"{per_s:g}/s"
    return f"{per_s * 60:g}/min"


#: A spec field in jobs per second, written as 2/s, 120/min or a bare number per minute.
Rate = Annotated[float, BeforeValidator(parse_rate)]
