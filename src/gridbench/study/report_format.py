"""Formatting and reading helpers shared by the study's tables, statements and charts:
numbers as the seed printed them (means to two decimals, p-values scientific below
0.001), and safe access to the parts of a checked ``gridbench.study/1`` document (a part
that is not the expected shape reads as empty).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.sections import Shown, part

MISSING = "–"
#: The seed's Table 2 row labels, per metric.
METRIC_LABEL = {
    "sus": "Mean SUS score (100 = most usable)",
    "time": "Mean task time (seconds)",
    "failure": "Mean failure rate (5 = most failure prone)",
    "difficulty": "Mean perceived difficulty (5 = most difficult)",
    "satisfaction": "Mean satisfaction (5 = most satisfied)",
}
METRIC_SHORT = {
    "sus": "SUS score",
    "time": "Mean task time",
    "failure": "Failure rate",
    "difficulty": "Perceived difficulty",
    "satisfaction": "Satisfaction",
}
#: Where each metric's per-tool mean is in ``tools.<id>``.
MEAN_OF = {
    "sus": ("sus", "mean"),
    "time": ("tasks", "time_mean_s"),
    "failure": ("tasks", "failure_mean"),
    "difficulty": ("tasks", "difficulty_mean"),
    "satisfaction": ("tasks", "satisfaction_mean"),
}
ALT_TEXT = {"greater": "a > b", "less": "a < b", "two-sided": "a ≠ b"}


def num(x: Any) -> float | None:
    """A number as a float; None for anything else (booleans too)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def fmt(x: Any, digits: int = 4) -> str:
    """``digits`` significant digits; thousands whole; '–' when missing."""
    v = num(x)
    if v is None:
        return MISSING
    return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:.{digits}g}"


def fmt2(x: Any) -> str:
    """Two decimals, as the seed printed means (69.47, 2.11)."""
    v = num(x)
    return MISSING if v is None else f"{v:.2f}"


def fmt_p(p: Any) -> str:
    """A p-value as the seed printed them: scientific below 0.001."""
    v = num(p)
    if v is None:
        return MISSING
    return f"{v:.3g}" if v >= 0.001 else f"{v:.3e}"


def fmt_ci(ci: Any, f: Any = fmt2) -> str:
    """'[lo, hi]' or '–'."""
    if not isinstance(ci, Sequence) or len(ci) != 2 or num(ci[0]) is None or num(ci[1]) is None:
        return MISSING
    return f"[{f(ci[0])}, {f(ci[1])}]"


def cell(x: Any, f: Any = fmt2) -> Shown:
    """A number shown with ``f``, raw as itself."""
    return Shown(num(x), f(x))


def table_id(*parts: Any) -> str:
    """A safe table id (an HTML anchor and a CSV file name) from untrusted names."""
    raw = "-".join(str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-")[:80] or "table"


def tools(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The per-tool documents, in the spec's order."""
    v = metrics.get("tools")
    return (
        {str(k): t for k, t in v.items() if isinstance(t, Mapping)}
        if isinstance(v, Mapping)
        else {}
    )


def title_of(metrics: Mapping[str, Any], tool: str) -> str:
    """A tool's title (its id when it has none)."""
    return str(tools(metrics).get(tool, {}).get("title") or tool)


#: A title longer than this heads a table column by the tool's id instead.
SHORT = 20


def label_of(metrics: Mapping[str, Any], tool: str) -> str:
    """A column heading for a tool: its title when short, else its id."""
    title = title_of(metrics, tool)
    return title if len(title) <= SHORT else tool


def metric_mean(metrics: Mapping[str, Any], tool: str, metric: str) -> float | None:
    """The per-tool mean of ``metric`` (Table 2's rows)."""
    where, key = MEAN_OF[metric]
    return num(part(tools(metrics).get(tool, {}), where).get(key))
