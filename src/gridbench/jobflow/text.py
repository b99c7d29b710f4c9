"""Number formatting for the sentences analysis writes (statements, reasons, evidence)."""

from __future__ import annotations


def num(x: float, digits: int = 3) -> str:
    """``digits`` significant digits, no trailing zeros, whole above 100 (1, 0.667, 1,200)."""
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def rate(per_s: float) -> str:
    """A job rate in jobs/s, with jobs/min beside it as the seeds quoted (e.g. '1/s (60/min)')."""
    return f"{num(per_s)}/s ({num(per_s * 60)}/min)"


def pct(x: float) -> str:
    """A share as a percentage ('62%', '0.4%')."""
    v = 100.0 * x
    return f"{v:.0f}%" if abs(v) >= 10 else f"{num(v, 2)}%"


def seconds(x: float) -> str:
    """A duration ('250 ms', '1.5 s')."""
    return f"{num(x * 1000)} ms" if abs(x) < 1 else f"{num(x)} s"
