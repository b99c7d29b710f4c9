"""Building report tables from rows: each cell a raw value (what CSV and JSON would get)
and the text people read, in the job-flow report's number formats (on
:func:`gridbench.sections.shown_table`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from gridbench.fmt import fmt_val
from gridbench.jobflow.report.model import Row
from gridbench.sections import (
    Cell,
    Column,
    RecordLook,
    RowStyle,
    Scope,
    Shown,
    Status,
    Table,
    TableOptions,
    record_table,
    shown_table,
)


def cell(v: Any) -> Cell:
    """A raw table value (anything else as its str)."""
    return v if v is None or isinstance(v, str | int | float | bool) else str(v)


def col(label: str, numeric: bool = False) -> Column:
    """A display column keyed by its label."""
    return Column(label, label, numeric)


def table(
    id: str,
    title: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[Any]],
    **kw: Unpack[TableOptions],
) -> Table:
    """A display table (not exported: the raw data goes out through the export tables).

    A cell is a :class:`Shown` or a raw value, shown as :func:`gridbench.fmt.fmt_val`
    formats it ('–' when missing)."""
    kw.setdefault("export", False)
    return shown_table(id, title, columns, rows, default=_text, **kw)


@dataclass(frozen=True, slots=True)
class Spec:
    """One column of a table built from rows: its label, whether it holds numbers, and
    its cell — the row's value under a key (shown through ``fmt`` when given, else as
    :func:`table` shows a raw value) or a function of the row (a raw value or a
    :class:`Shown`)."""

    label: str
    value: str | Callable[[Row], Any]
    numeric: bool = False
    fmt: Callable[[Any], str] | None = None

    def cell(self, r: Row) -> Any:
        """This column's cell of row ``r``."""
        if not isinstance(self.value, str):
            return self.value(r)
        v = r[self.value]
        return v if self.fmt is None else Shown(v, self.fmt(v))


def spec_table(
    id: str,
    title: str,
    rows: Sequence[Row],
    spec: Sequence[Spec],
    *,
    style: Callable[[Row], RowStyle | None] | None = None,
    status: Callable[[Row], Status | None] | None = None,
    **kw: Unpack[TableOptions],
) -> Table | None:
    """A display table of ``rows``, one column per :class:`Spec`; None when there are no
    rows. ``style`` and ``status`` give each row's style and status."""
    cols = [(col(s.label, s.numeric), s.cell) for s in spec]
    kw.setdefault("export", False)
    look = RecordLook(style=style, status=status, default=_text)
    return record_table(id, title, rows, cols, look=look, **kw)


@dataclass(frozen=True)
class TableDef:
    """A table of the report as data: its id, title, where its rows come from and its
    columns; calling it with the metrics builds the :class:`Table` (None without rows)."""

    id: str
    title: str
    rows: Callable[[Mapping[str, Any]], Sequence[Row]]
    spec: Sequence[Spec]
    note: str = ""
    style: Callable[[Row], RowStyle | None] | None = None
    status: Callable[[Row], Status | None] | None = None
    scope: Scope = "all"
    collapsed: bool = False

    def __call__(self, metrics: Mapping[str, Any]) -> Table | None:
        return spec_table(
            self.id,
            self.title,
            self.rows(metrics),
            self.spec,
            style=self.style,
            status=self.status,
            note=self.note,
            scope=self.scope,
            collapsed=self.collapsed,
        )


def _text(v: Any) -> str:
    return v if isinstance(v, str) else fmt_val(v)


def export(id: str, rows: list[Row]) -> Table:
    """A raw table for CSV and report.json (every row's keys as columns)."""
    return Table.from_records(id, id, rows)


def trial_cell(r: Row) -> Shown:
    """The trial column of a closed model's table: the trial, or its point's pooled row."""
    if r["level"] == "point":
        return Shown(None, f"{r['point'] or 'point'} (all trials)")
    return Shown(cell(r["trial_id"]), str(r["trial_id"]) + ("" if r["valid"] else " (invalid)"))


def level_style(r: Row) -> RowStyle | None:
    """'total' for a pooled per-point row."""
    return "total" if r["level"] == "point" else None
