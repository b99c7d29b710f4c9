"""What every document of a campaign shares: the links to a run, a log and another
document, identifiers, the navigation bar, times, the outcome sentence and a unit's pass
criteria in words."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from gridbench.campaign.folder import RUNS_DIR, UNITS_DIR, Attempt
from gridbench.campaign.render import Cell, Link
from gridbench.campaign.view import UnitView, View


def commas(cells: Sequence[Cell]) -> tuple[Cell, ...]:
    out: list[Cell] = []
    for i, c in enumerate(cells):
        out += [", ", c] if i else [c]
    return tuple(out)


def run_link(a: Attempt | None, text: str | None = None) -> Cell:
    """A link to an attempt's run report, through the campaign's link to its folder."""
    if a is None or not a.run:
        return "–"
    return Link(text or a.run, f"../{RUNS_DIR}/{a.name}/report.html")


def log_link(a: Attempt) -> Cell:
    return Link("log", f"../{UNITS_DIR}/{a.name}.log")


def case_slug(key: str) -> str:
    return f"case-{key}"


def design_slug(comp: str) -> str:
    return f"design-{comp}"


def parse_time(x: str | None) -> datetime | None:
    """An ISO time from the log (foreign input), or None; one without a zone is UTC (so
    that any two can be subtracted)."""
    try:
        t = datetime.fromisoformat(x) if x else None
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


def duration(a: Attempt) -> float | None:
    s, e = parse_time(a.started), parse_time(a.ended)
    return (e - s).total_seconds() if s and e else None


def nav(v: View) -> tuple[tuple[str, str], ...]:
    return (
        ("Campaign", "index"),
        ("Test plan", "test-plan"),
        *((f"Design {c.id}", design_slug(c.id)) for c in v.parsed.spec.components),
        ("Test log", "test-log"),
        ("Incidents", "incidents"),
        ("Summary", "summary"),
    )


def ident(v: View, kind: str, suffix: str = "") -> str:
    return f"{kind}-{v.folder.id}" + (f"-{suffix}" if suffix else "")


def outcome_sentence(v: View, units: Sequence[UnitView] | None = None) -> str:
    us = v.units if units is None else units
    c = v.counts(us)
    parts = [f"{c['passed']} of {len(us)} units passed"]
    for k in ("failed", "error", "timeout", "not run"):
        if c.get(k):
            parts.append(f"{c[k]} {k}")
    return "; ".join(parts)


def criteria(u: UnitView) -> list[Cell]:
    out: list[Cell] = ["the family's own verdict: every threshold of the spec met, no check failed"]
    out += [
        f"threshold (campaign) {t.metric} {t.op} {t.value}"
        + (f" at point {t.point}" if t.point != "all" else "")
        for t in u.unit.pass_.thresholds
    ]
    out.append(
        "the measurement must be valid (its family's validity rules)"
        if u.unit.pass_.valid
        else "validity flags are incidents (minor), not failures"
    )
    if u.unit.repetitions > 1:
        out.append(f"every one of {u.unit.repetitions} repetitions passes")
    return out


def semicolons(cells: Sequence[Cell]) -> list[Cell]:
    out: list[Cell] = []
    for i, c in enumerate(cells):
        out.append(c if i == 0 else ("; ", c))
    return out
