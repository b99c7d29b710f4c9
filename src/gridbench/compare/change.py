"""How a change against the baseline is shown: a relative change, or the absolute
difference alone when the baseline is near zero (where "+2492.6 %" says nothing).

Pure: the terminal table (compare/command.py) and the dashboard's compare page use it.
"""

from __future__ import annotations

from collections.abc import Iterable

#: A baseline below this share of the metric's largest magnitude in the comparison (over
#: every point and experiment) is "near zero": its relative change is withheld.
NEAR_ZERO_SHARE = 0.05
#: Below this magnitude a baseline is zero whatever the scale (a metric that is all zero).
ZERO_EPS = 1e-9
#: The note beside an absolute difference shown in place of a relative change.
NEAR_ZERO_NOTE = "baseline near zero"


def metric_scale(values: Iterable[float | None]) -> float:
    """The largest magnitude of a metric's values (``None`` ignored; 0.0 when none)."""
    return max((abs(v) for v in values if v is not None), default=0.0)


def near_zero(baseline: float, scale: float) -> bool:
    """True when ``baseline`` is too close to zero for a relative change to mean anything."""
    return abs(baseline) < max(ZERO_EPS, NEAR_ZERO_SHARE * abs(scale))


def relative_change(baseline: float | None, test: float | None, scale: float) -> float | None:
    """``test / baseline - 1``, or ``None`` when either is missing or the baseline is near
    zero against ``scale`` (see :func:`metric_scale`)."""
    if baseline is None or test is None or near_zero(baseline, scale):
        return None
    return test / baseline - 1.0


def change_text(baseline: float | None, test: float | None, scale: float) -> str:
    """The change as shown: "+12.3 %", or "+0.25 (abs, baseline near zero)"; "–" when a
    value is missing."""
    if baseline is None or test is None:
        return "–"
    rel = relative_change(baseline, test, scale)
    if rel is not None:
        return f"{rel * 100:+.1f} %"
    return f"{test - baseline:+.3g} (abs, {NEAR_ZERO_NOTE})"
