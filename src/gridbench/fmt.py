"""Number formatting shared by the families (the text of their report sections) and the
renderers; CSV and JSON keep the raw values."""

from __future__ import annotations

import math
from typing import Any


def fmt_number(x: float) -> str:
    """A compact number: integers without decimals, else 3 significant digits."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:.3g}"


def fmt_rate(r: float | None) -> str:
    """'0.667/s (40/min)', or 'n/a'."""
    if r is None:
        return "n/a"
    return f"{fmt_number(r)}/s ({fmt_number(r * 60.0)}/min)"


def fmt_s(x: float | None) -> str:
    """Seconds at a precision that suits the magnitude (the seed used 2 decimals)."""
    if x is None:
        return "–"
    if abs(x) >= 0.1 or x == 0:
        return f"{x:.2f}"
    return f"{x:.3g}"


def fmt_val(x: Any, digits: int = 3) -> str:
    """Any table cell: None as '–', floats to ``digits`` significant digits."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return fmt_number(x) if digits == 3 else f"{x:.{digits}g}"
    return str(x)


def fmt_pct(x: float | None) -> str:
    """'12.3%' or '–'."""
    return "–" if x is None else f"{x:.1f}%"


def fmt_pm(mean: float | None, std: float | None, digits: int = 3) -> str:
    """'0.323 ± 0.007': the mean to ``digits`` significant digits, the std to the same
    decimals (± omitted when std is unknown)."""
    if mean is None:
        return "–"
    a = abs(mean)
    decimals = max(0, digits - 1 - math.floor(math.log10(a))) if a > 0 else digits
    text = f"{mean:.{decimals}f}"
    return text if std is None else f"{text} ± {std:.{decimals}f}"


def fmt_count_pm(mean: float | None, std: float | None) -> str:
    """Counts per trial: '31 ± 1', '5 ± 1.41', '0 ± 0'."""
    if mean is None:
        return "–"
    text = fmt_number(mean)
    return text if std is None else f"{text} ± {fmt_number(std)}"
