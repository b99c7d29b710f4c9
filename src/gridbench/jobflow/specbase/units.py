"""Job rates in specs ("60" per minute, "2/s", "120/min"). Durations are core:
:mod:`gridbench.units`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

from gridbench.units import parse_with_unit

_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:/\s*(s|sec|m|min|h|hour))?\s*$")
_RATE_DIV = {None: 60.0, "min": 60.0, "m": 60.0, "s": 1.0, "sec": 1.0, "h": 3600.0, "hour": 3600.0}


def parse_rate(value: object) -> float:
    """Jobs/s from a bare number (jobs per MINUTE, as the seeds) or 'N/s', 'N/min', 'N/h'."""
    return parse_with_unit(
        value,
        _RATE,
        lambda x, unit: x / _RATE_DIV[unit],
        "a rate",
        "60 (per minute), 2/s or 120/min",
    )


def format_rate(per_s: float) -> str:
    """Human rate in the unit that reads best."""
    if per_s >= 1 or per_s == 0:
        return f"{per_s:g}/s"
    return f"{per_s * 60:g}/min"


#: A spec field in jobs per second, written as 2/s, 120/min or a bare number per minute.
Rate = Annotated[float, BeforeValidator(parse_rate)]
