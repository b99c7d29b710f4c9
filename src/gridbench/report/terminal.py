"""The terminal summary of any family's :class:`~gridbench.sections.Report`, drawn with rich.

The brief report: the headline, the lead statements, then every section whose scope is
not ``full`` (charts are never drawn here). Every string goes into a ``rich.text.Text``
rather than a markup string, so '[red]' in a job's output stays text, and its control
characters are made visible (:func:`gridbench.fmt.visible`), so an escape sequence in a
name cannot clear the screen or set the title.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table as RichTable
from rich.text import Text

from gridbench.fmt import safe_text, visible
from gridbench.sections import Headline, Report, Statements, Status, Table, ranked

#: The colour of each status (None: the default).
STYLE: dict[Status, str] = {"pass": "green", "fail": "red", "warn": "yellow", "info": ""}
MARK: dict[Status, str] = {"pass": "✓ ", "fail": "✗ ", "warn": "! ", "info": ""}


def headline_panel(hl: Headline) -> Panel:
    """Every finding once, the first in bold, each evidence under its finding."""
    lines = Text()
    for i, f in enumerate(ranked(hl.findings)):  # failures and problems first
        if i:
            lines.append("\n")
        style = STYLE[f.status]
        lines.append(visible(f.text), style=f"bold {style}".strip() if i == 0 else style)
        if f.evidence:
            lines.append("\nEvidence: ", style="bold")
            lines.append(visible(f.evidence))
    return Panel(lines, title=safe_text(hl.title, "bold"), title_align="left")


def table(t: Table) -> RichTable:
    """A report table as a rich table (its title above; notes are the page's)."""
    out = RichTable(title=safe_text(t.title), box=box.SIMPLE_HEAVY)
    for c in t.columns:
        out.add_column(safe_text(c.title), justify="right" if c.numeric else "left")
    n = len(t.rows)
    for i in range(n):
        style = t.row_style[i] if t.row_style else None
        status = t.row_status[i] if t.row_status else None
        nxt = t.row_style[i + 1] if t.row_style and i + 1 < n else None
        cells = [
            safe_text(
                t.cell_text(i, j), _cell_style(t.cell_status[i][j] if t.cell_status else None)
            )
            for j in range(len(t.columns))
        ]
        emphasis = "bold" if style in ("total", "group") else ""
        row_style = " ".join(x for x in (emphasis, STYLE[status] if status else "") if x)
        out.add_row(*cells, style=row_style or None, end_section=nxt == "group-start")
    return out


def _cell_style(status: Status | None) -> str:
    if status is None:
        return ""
    return f"bold {STYLE[status]}" if status in ("pass", "fail") else STYLE[status]


def statements(s: Statements) -> Panel:
    """A titled box of sentences, each marked and coloured by its status."""
    body = Text()
    for i, (st, line) in enumerate(s.lines):
        if i:
            body.append("\n")
        body.append(MARK[st] + visible(line), style=STYLE[st])
    kinds = {st for st, _ in s.lines}
    border = "red" if "fail" in kinds else ("yellow" if "warn" in kinds else "")
    return Panel(body, title=safe_text(s.title) if s.title else None, title_align="left",
                 border_style=border or "none")  # fmt: skip


#: Findings the brief headline shows; the rest are counted (all of them with --verbose).
BRIEF_FINDINGS = 5


def brief_headline_panel(hl: Headline) -> Panel:
    """The headline as a calm summary: each finding's sentence (no evidence), at most
    :data:`BRIEF_FINDINGS`, failures and problems first (every one of them shown, however
    many: a void comparison is never behind "--verbose"), then warnings, the rest
    counted."""
    first = ranked(hl.findings)
    grave = [f for f in first if f.status == "fail" or f.problem]
    rest = sorted(first[len(grave) :], key=lambda f: {"warn": 0}.get(f.status, 1))
    if grave:  # a plain "✓" never sits beside a void comparison or a failure: counted
        rest = [f for f in rest if f.status != "pass"] + [f for f in rest if f.status == "pass"]
    order = grave + rest
    shown = order[: max(BRIEF_FINDINGS, len(grave))]
    if grave:
        shown = [f for f in shown if f.status != "pass"]
    lines = Text()
    for i, f in enumerate(shown):
        if i:
            lines.append("\n")
        mark = "✗ " if f.problem and f.status != "fail" else MARK[f.status]
        style = "red" if f.problem else STYLE[f.status]
        lines.append(mark + visible(f.text), style=style)
    if len(order) > len(shown):
        lines.append(f"\n… {len(order) - len(shown)} more finding(s): --verbose", style="dim")
    return Panel(lines, title=safe_text(hl.title, "bold"), title_align="left")


def _full(report: Report) -> list[Any]:
    parts: list[Any] = [headline_panel(report.headline)]
    for s in report.sections:
        if isinstance(s, Statements) and (s.lead or s.scope != "full"):
            parts.append(statements(s))
        elif isinstance(s, Table) and s.scope != "full" and s.has_data():
            parts.append(table(s))
    return parts


def _brief(report: Report) -> list[Any]:
    """The headline, the thresholds, what failed; the rest counted."""
    parts: list[Any] = [brief_headline_panel(report.headline)]
    hidden_tables = warnings = 0
    for s in report.sections:
        if isinstance(s, Table) and s.has_data():
            if s.id == "thresholds":
                parts.append(table(s))
            elif s.scope != "full":
                hidden_tables += 1
        elif isinstance(s, Statements) and (s.lead or s.scope != "full"):
            failed = [(st, line) for st, line in s.lines if st == "fail"]
            if failed:
                parts.append(statements(Statements(s.id, s.title, tuple(failed), lead=s.lead)))
            warnings += sum(1 for st, _ in s.lines if st == "warn")
    more = []
    if warnings:
        more.append(f"{warnings} warning(s)")
    if hidden_tables:
        more.append(f"{hidden_tables} table(s)")
    if more:
        parts.append(
            Text(f"{' and '.join(more)} more in the report (--verbose shows them here)", "dim")
        )
    return parts


def render_report(report: Report, console: Console, *, verbose: bool = False) -> None:
    """Print the report: a calm summary (headline, thresholds, failures; the rest counted),
    or with ``verbose`` the full brief: headline with evidence, lead statements, then
    every section meant for the terminal."""
    parts = _full(report) if verbose else _brief(report)
    parts.extend(safe_text(n) for n in report.notes)
    console.print(Group(*parts))


__all__ = ["brief_headline_panel", "headline_panel", "render_report", "statements", "table"]
