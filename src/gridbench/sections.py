"""Typed report data: what a family's metrics say, in a form every renderer draws.

A family turns its metrics into a :class:`Report`: a headline, the evaluation summary and
an ordered list of sections (tables, charts, statements). The terminal, the HTML report,
CSV/JSON export and the dashboard all render the same :class:`Report`, so no renderer
knows one family's metrics and no family knows how a page is drawn.

Every text here is plain (unescaped): renderers escape for their own medium.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack

#: A raw table value: what CSV and JSON get. Text shown to people may differ (``Table.text``).
Cell = str | int | float | bool | None
Status = Literal["pass", "fail", "warn", "info"]
#: Where a section is drawn: everywhere, only in the full report (the HTML page and the
#: dashboard) or only in the brief one (the terminal summary, which may show a compact form
#: of what the full report shows at length).
Scope = Literal["all", "full", "brief"]
#: How a row reads: a summary of the rows above it (bold), a heading row for the rows that
#: follow, or the first row of a new group (a rule above it).
RowStyle = Literal["total", "group", "group-start"]


@dataclass(frozen=True, slots=True)
class ValidityRule:
    """A rule a family applies before it trusts a figure (shown in reports and docs; a
    family's ``validity_rules``, also importable from :mod:`gridbench.family` and
    :mod:`gridbench.schema`)."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class Column:
    """One table column: its key (CSV header), its label and whether it holds numbers."""

    key: str
    label: str = ""
    numeric: bool = False

    @property
    def title(self) -> str:
        """The label, or the key when no label was given."""
        return self.label or self.key


def _filled(cell: Any) -> bool:
    return cell is not None and not (isinstance(cell, float) and math.isnan(cell))


@dataclass(frozen=True, slots=True)
class Table:
    """A table: raw rows for export, and optionally the text to show for each cell.

    ``id`` is the anchor in the HTML page and, when ``export`` is set, the CSV file stem
    (``tables/<id>.csv``). ``text`` has the shape of ``rows`` when given; renderers show
    it instead of formatting the raw values themselves.
    """

    id: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    text: tuple[tuple[str, ...], ...] | None = None
    note: str = ""
    export: bool = True
    #: rows whose status colours the row (e.g. a failed threshold); same length as rows
    row_status: tuple[Status | None, ...] | None = None
    #: how each row reads (total, group heading, start of a group); same length as rows
    row_style: tuple[RowStyle | None, ...] | None = None
    #: cells that state a verdict (drawn as a badge or in the status colour); rows' shape
    cell_status: tuple[tuple[Status | None, ...], ...] | None = None
    scope: Scope = "all"
    #: drawn folded away (details a reader opens on demand)
    collapsed: bool = False

    def __post_init__(self) -> None:
        width = len(self.columns)
        for rows in (self.rows, self.text or (), self.cell_status or ()):
            for r in rows:
                if len(r) != width:
                    raise ValueError(f"table {self.id!r}: a row has {len(r)} cells, not {width}")
        for name, per_row in (
            ("text", self.text),
            ("row_status", self.row_status),
            ("row_style", self.row_style),
            ("cell_status", self.cell_status),
        ):
            if per_row is not None and len(per_row) != len(self.rows):
                raise ValueError(f"table {self.id!r}: {name} and rows differ in length")

    def has_data(self) -> bool:
        """Whether any row holds a figure: a table whose numeric columns are all empty
        (a per-component table for a load model without those stages) says nothing, and
        renderers leave it out rather than draw a grid of dashes."""
        numeric = [j for j, c in enumerate(self.columns) if c.numeric]
        if not self.rows:
            return False
        if not numeric:
            return True
        return any(_filled(r[j]) for r in self.rows for j in numeric)

    def cell_text(self, i: int, j: int) -> str:
        """What to show for row ``i``, column ``j``."""
        if self.text is not None:
            return self.text[i][j]
        return format_cell(self.rows[i][j])

    def records(self) -> list[dict[str, Cell]]:
        """The rows as dicts keyed by column key (CSV and JSON export)."""
        keys = [c.key for c in self.columns]
        return [dict(zip(keys, r, strict=True)) for r in self.rows]

    @classmethod
    def from_records(
        cls,
        id: str,
        title: str,
        records: Sequence[Mapping[str, Any]],
        columns: Sequence[Column | str] | None = None,
        **kw: Any,
    ) -> Table:
        """A table from dict rows; the columns default to the keys of the first row."""
        cols = tuple(
            c if isinstance(c, Column) else Column(c)
            for c in (columns if columns is not None else (list(records[0]) if records else []))
        )
        rows = tuple(tuple(_cell(r.get(c.key)) for c in cols) for r in records)
        if not any(c.numeric for c in cols) and rows:
            cols = tuple(
                Column(c.key, c.label, numeric=all(_is_number(r[j]) for r in rows))
                for j, c in enumerate(cols)
            )
        return cls(id=id, title=title, columns=cols, rows=rows, **kw)


@dataclass(frozen=True, slots=True)
class Chart:
    """A chart as a plotly figure document (``{"data": [...], "layout": {...}}``)."""

    id: str
    title: str
    figure: Mapping[str, Any]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Statements:
    """A titled list of sentences (model fits, notes, warnings)."""

    id: str
    title: str
    lines: tuple[tuple[Status, str], ...]
    scope: Scope = "all"
    #: key results a reader needs right under the headline (before the evaluation summary)
    lead: bool = False


Section = Table | Chart | Statements


@dataclass(frozen=True, slots=True)
class Finding:
    """One sentence of a headline or outcome, with its status. ``problem``: the figures
    cannot be taken as they stand (a void comparison, invalid trials, an aborted or
    interrupted run); such a finding is ranked with the failures, before every warning,
    in every summary (:func:`ranked`)."""

    status: Status
    text: str
    evidence: str = ""
    problem: bool = False


def ranked(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with the failures and problems first (in their order), then the rest
    (in theirs): what makes a result untrustworthy is never below a warning."""
    first = [f for f in findings if f.status == "fail" or f.problem]
    return first + [f for f in findings if not (f.status == "fail" or f.problem)]


@dataclass(frozen=True, slots=True)
class Headline:
    """What a reader must see first: each finding stated once, and the overall verdict."""

    title: str
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> Status:
        """fail if any finding failed, else warn if any warned, else pass (or info)."""
        kinds = {f.status for f in self.findings}
        for k in ("fail", "warn", "pass"):
            if k in kinds:
                return k
        return "info"


@dataclass(frozen=True, slots=True)
class EvaluationSummary:
    """IEEE 829 in four questions: what was tested, how it was configured (the spec as YAML
    and its declared plan), what passed or failed, and what is left open."""

    tested: tuple[tuple[str, str], ...]
    spec_yaml: str
    plan: Table | None
    outcome: tuple[Finding, ...]
    left_open: tuple[str, ...]
    not_tested: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    """Everything a family reports about one run, ready for any renderer."""

    family: str
    title: str
    headline: Headline
    summary: EvaluationSummary
    sections: tuple[Section, ...]
    #: extra lines for the terminal under the headline (e.g. where the files are)
    notes: tuple[str, ...] = field(default=())
    #: one line under the title: what kind of data this is ("gridbench.metrics/1 · ...")
    meta: str = ""
    #: tables written to CSV and report.json only, never drawn (the raw data at full width,
    #: when the sections show it in another shape)
    exports: tuple[Table, ...] = field(default=())
    #: the analysed metrics document, carried into report.json as is
    data: Mapping[str, Any] = field(default_factory=dict)

    def tables(self) -> list[Table]:
        """The table sections, in order."""
        return [s for s in self.sections if isinstance(s, Table)]

    def charts(self) -> list[Chart]:
        """The chart sections, in order."""
        return [s for s in self.sections if isinstance(s, Chart)]

    def exported(self) -> list[Table]:
        """Every table written to CSV and report.json: the exported sections, then
        ``exports``. ValueError when two share an id (they would share a file)."""
        out = [t for t in self.tables() if t.export] + list(self.exports)
        seen: set[str] = set()
        for t in out:
            if t.id in seen:
                raise ValueError(f"two exported tables have the id {t.id!r}")
            seen.add(t.id)
        return out


@dataclass(frozen=True, slots=True)
class Shown:
    """A cell whose text is not the default text of its raw value, or that states a
    verdict (``status``: drawn as a badge or in the status colour)."""

    raw: Cell
    text: str
    status: Status | None = None


class TableOptions(TypedDict, total=False):
    """What a built table may set beyond its cells (the fields of :class:`Table`)."""

    note: str
    export: bool
    row_status: tuple[Status | None, ...] | None
    row_style: tuple[RowStyle | None, ...] | None
    scope: Scope
    collapsed: bool


def shown_table(
    id: str,
    title: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[Any]],
    *,
    default: Callable[[Any], str] | None = None,
    **kw: Unpack[TableOptions],
) -> Table:
    """A table from rows of cells, each a :class:`Shown` or a raw value (shown as
    ``default`` gives it, :func:`format_cell` without one): the raw rows, their text and
    the cells' statuses (None when no cell states one) in one pass."""
    show = format_cell if default is None else default
    raw: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    status: list[tuple[Status | None, ...]] = []
    for r in rows:
        raw.append(tuple(c.raw if isinstance(c, Shown) else _cell(c) for c in r))
        text.append(tuple(c.text if isinstance(c, Shown) else show(c) for c in r))
        status.append(tuple(c.status if isinstance(c, Shown) else None for c in r))
    return Table(
        id=id,
        title=title,
        columns=tuple(columns),
        rows=tuple(raw),
        text=tuple(text),
        cell_status=tuple(status) if any(any(s) for s in status) else None,
        **kw,
    )


#: One column of a table built from records: the column, and its cell of a record (a raw
#: value or a :class:`Shown`).
Field = tuple[Column, Callable[[Any], Any]]


@dataclass(frozen=True, slots=True)
class RecordLook:
    """How a :func:`record_table` shows its records beyond their fields: each record's
    row ``style`` and ``status``, and the text of a raw cell (``default``;
    :func:`format_cell` without one)."""

    style: Callable[[Any], RowStyle | None] | None = None
    status: Callable[[Any], Status | None] | None = None
    default: Callable[[Any], str] | None = None


def record_table(
    id: str,
    title: str,
    records: Sequence[Any],
    fields: Sequence[Field],
    *,
    look: RecordLook | None = None,
    **kw: Unpack[TableOptions],
) -> Table | None:
    """A table of ``records``, one column per :data:`Field` (declared once, as data);
    None when there are no records. ``look`` gives each record's row style and status."""
    if not records:
        return None
    look = look or RecordLook()
    if look.style is not None:
        kw["row_style"] = tuple(look.style(r) for r in records)
    if look.status is not None:
        kw["row_status"] = tuple(look.status(r) for r in records)
    cells = ([f(r) for _, f in fields] for r in records)
    return shown_table(id, title, [c for c, _ in fields], cells, default=look.default, **kw)


def listed(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The objects in the list under ``key``, nothing else (metrics.json is foreign input:
    a part of another shape reads as empty)."""
    v = data.get(key)
    return [x for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


def rep_mean(rep: Any) -> float | None:
    """The mean of a rep or stats object (``{"mean": ...}``) as a float; None when there
    is none."""
    v = rep.get("mean") if isinstance(rep, Mapping) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def part(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``data[key]`` when it is an object, else empty."""
    v = data.get(key)
    return v if isinstance(v, Mapping) else {}


def _is_number(v: Cell) -> bool:
    return v is None or (isinstance(v, int | float) and not isinstance(v, bool))


def _cell(v: Any) -> Cell:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


def format_cell(v: Cell) -> str:
    """The default text of a raw value: 4 significant digits, '' for missing."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return ""
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)
