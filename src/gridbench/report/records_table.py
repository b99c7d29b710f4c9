"""Tables of records for the command line (``list``, ``history``, ``compare``) that never
break what a reader copies: an id or a value is printed whole at any width.

In a terminal, a table whose ``whole`` columns (ids, values, verdicts) are never wrapped
or cut; the other columns wrap. When even that cannot fit (the ids alone are wider than
the terminal), each record is printed as a short block: its first whole column on a line
of its own, the rest below. Outside a terminal (a pipe, a file, CI) one record a line,
the fields separated by tabs under a header line: nothing is wrapped, and ``cut`` or
``column -t`` read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: the narrowest a wrapped column may become before a table is given up for blocks
MIN_WRAPPED = 6


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its heading, and whether its cells must stay whole (an id, a value)."""

    heading: str
    whole: bool = False
    justify: Literal["left", "right"] = "left"


def _plain(cell: str) -> str:
    """A cell's text without its markup (cells are markup-safe strings)."""
    return Text.from_markup(cell).plain


def print_records(
    out: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
) -> None:
    """Print ``rows`` (markup-safe cells) under ``columns`` (see the module)."""
    if not out.is_terminal:  # written as they are: rich would expand the tabs
        lines = [_plain(title)] if title else []
        lines.append("\t".join(c.heading for c in columns))
        lines += ["\t".join(_plain(cell).replace("\t", " ") for cell in row) for row in rows]
        out.file.write("".join(line + "\n" for line in lines))
        out.file.flush()
        return
    widths = [
        max([len(c.heading), *(Text.from_markup(r[i]).cell_len for r in rows)], default=0)
        for i, c in enumerate(columns)
    ]
    t = Table(
        title=title or None, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
        collapse_padding=True, show_edge=False,
    )  # fmt: skip
    for c, w in zip(columns, widths, strict=True):
        if c.whole:
            t.add_column(c.heading, no_wrap=True, min_width=w, max_width=w, justify=c.justify)
        else:
            t.add_column(
                c.heading, min_width=min(w, MIN_WRAPPED), overflow="fold", justify=c.justify
            )
    for row in rows:
        t.add_row(*row)
    least = sum(w if c.whole else min(w, MIN_WRAPPED) for c, w in zip(columns, widths, strict=True))
    if least + 2 * (len(columns) - 1) > out.width:  # two spaces between columns
        _blocks(out, columns, rows, title)
        return
    out.print(t)


def _blocks(
    out: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str
) -> None:
    """Each record as a block: its first whole column alone on a line, then one line per
    other field (none wrapped by us: a line wider than the terminal is the terminal's to
    fold, never a copied id's)."""
    first = next((i for i, c in enumerate(columns) if c.whole), 0)
    if title:
        out.print(title, soft_wrap=True)
    for row in rows:
        out.print(f"[bold]{row[first]}[/]", soft_wrap=True)
        for i, (c, cell) in enumerate(zip(columns, row, strict=True)):
            if i != first and _plain(cell).strip():
                out.print(f"  [dim]{c.heading}:[/] {cell}", soft_wrap=True)
