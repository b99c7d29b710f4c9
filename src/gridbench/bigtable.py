"""A table of many rows for the terminal, drawn as rich draws its ``Table`` (the same
column widths, folding, borders and title), in a fraction of rich's time: rich measures
and renders each cell through its general machinery, about a millisecond a row, which
made ``gridbench list`` of a thousand runs take seconds.

The table is rich's default one: a title, a heavy-headed box, one space of padding each
side, every column left-justified and folded (``overflow="fold"``). Each cell is plain
text (already :func:`gridbench.fmt.visible`) with a style name for its colour. Without
colour (a file, a pipe, a CI log) the output is rich's character for character
(tests/core/test_bigtable.py draws both); on a terminal the same layout carries the
styles. A cell with a line break or a tab, or a column narrower than three cells, is
drawn by rich itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from rich.box import HEAVY_HEAD
from rich.cells import cell_len, set_cell_size
from rich.markup import escape
from rich.segment import Segment
from rich.style import Style

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.table import Table

#: one cell: its plain text and the style of the text ("" for none)
Cell = tuple[str, str]

_PAD = 1  # rich's default padding: one cell each side


def _widest(text: str) -> int:
    """The cells of the widest line of ``text``."""
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _widths(columns: Sequence[Sequence[str]], available: int) -> list[int]:
    """rich's ``Table._calculate_column_widths`` for columns of text that may wrap. Of
    rich's measurement of a cell (a ``Padding`` of one cell each side around ``Text``)
    only the most cells it takes counts, and within ``limit`` cells that is its widest
    line and the padding, or ``limit``: rich's arithmetic (normalize, with_maximum),
    worked out."""
    from rich._ratio import ratio_reduce
    from rich.table import Table

    widest = [max(_widest(t) for t in texts) for texts in columns]

    def maximum(most: int, limit: int) -> int:
        return 0 if limit < 1 else min(most + 2 * _PAD, limit)

    widths = [maximum(most, available) or 1 for most in widest]
    if sum(widths) > available:
        widths = Table._collapse_widths(widths, [True] * len(widths), available)
        if sum(widths) > available:
            excess = sum(widths) - available
            widths = ratio_reduce(excess, [1] * len(widths), widths, widths)
        widths = [maximum(most, w) or 0 for most, w in zip(widest, widths, strict=True)]
    return widths


def _wrapped(text: str, width: int) -> list[str]:
    """The lines of ``text`` in ``width`` cells, each padded to it: rich's ``Text.wrap``
    with ``overflow="fold"``, justified left."""
    from rich._wrap import divide_line

    if cell_len(text) <= width:
        pieces = [text]
    else:
        offsets = [0, *divide_line(text, width, fold=True), len(text)]
        pieces = [text[a:b] for a, b in pairwise(offsets)]
    lines = []
    for piece in pieces:
        if len(piece) > width:  # rstrip_end: trailing space past the width goes
            stripped = len(piece) - len(piece.rstrip())
            if stripped:
                piece = piece[: len(piece) - min(stripped, len(piece) - width)]
        size = cell_len(piece)
        if size > width:
            piece = set_cell_size(piece, width)
        elif size < width:
            piece += " " * (width - size)
        lines.append(piece)
    return lines


def _markup(text: str, style: str) -> str:
    """A cell as rich markup: ``text`` escaped, in ``style``."""
    return f"[{style}]{escape(text)}[/]" if style and text else escape(text)


def _as_shown(console: Console, text: str, style: str) -> str:
    """What rich shows of the cell's markup (:func:`_markup`): the text itself, but for a
    few backslashes before brackets and at the end, which rich's escape keeps or adds, and
    emoji codes when the console shows them."""
    if "[" not in text and "\\" not in text and (":" not in text or not console._emoji):
        return text
    return console.render_str(_markup(text, style), highlight=False).plain


def _styled_line(
    left: str,
    divider: str,
    right: str,
    cells: Sequence[str],
    styles: Sequence[Style | None],
    base: Style | None,
) -> Iterable[Segment]:
    """One line of a row in colour: runs of unstyled text merged into one segment each,
    a cell's text in its style (on ``base``, the header's), its padding in ``base``."""
    run: list[str] = [left]
    for i, (shown, style) in enumerate(zip(cells, styles, strict=True)):
        if i:
            run.append(divider)
        text = shown.rstrip(" ")
        own = style if style is not None and text else None
        if base is not None:
            own = base + own if own is not None else base
        if own is None and base is None:
            run.append(f" {shown} ")
            continue
        if base is None:
            run.append(" ")
        else:
            yield Segment("".join(run))
            run = []
            yield Segment(" ", base)
        yield Segment("".join(run))
        run = []
        yield Segment(text, own)
        if base is None:
            run.append(f"{shown[len(text) :]} ")
        else:
            yield Segment(f"{shown[len(text) :]} ", base)
    run.append(right)
    yield Segment("".join(run))


class BigTable:
    """A rich renderable: ``title`` (markup) over ``headings`` and ``rows`` of cells."""

    def __init__(self, title: str, headings: Sequence[str], rows: Sequence[Sequence[Cell]]):
        self.title = title
        self.headings = list(headings)
        self.rows = rows

    def _rich_table(self) -> Table:
        """The same table as rich's own ``Table`` (for what :class:`BigTable` leaves to it)."""
        from rich.table import Table

        t = Table(title=self.title)
        for h in self.headings:
            t.add_column(h, overflow="fold")
        for row in self.rows:
            t.add_row(*(_markup(text, style) for text, style in row))
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        heads = [console.render_str(h, highlight=False).plain for h in self.headings]
        rows = [[(_as_shown(console, t, style), style) for t, style in row] for row in self.rows]
        columns = [[h, *(row[i][0] for row in rows)] for i, h in enumerate(heads)]
        if any("\n" in t or "\t" in t for col in columns for t in col):
            yield self._rich_table()
            return
        extra = len(heads) + 1  # the box's edges and dividers
        widths = _widths(columns, options.max_width - extra)
        if min(widths) < 2 * _PAD + 1:
            yield self._rich_table()
            return
        box = HEAVY_HEAD.substitute(options, safe=True)
        table_width = sum(widths) + extra
        title = console.render_str(self.title, style="table.title", highlight=False)
        yield from console.render(
            title, options.update(width=table_width, highlight=False, height=None, justify="center")
        )
        plain = console.color_system is None or console.no_color
        header = console.get_style("table.header")
        new_line = Segment.line()
        yield Segment(box.get_top(widths))
        yield new_line
        edges = (
            (box.head_left, box.head_vertical, box.head_right),
            (box.mid_left, box.mid_vertical, box.mid_right),
            (box.foot_left, box.foot_vertical, box.foot_right),
        )
        count = len(rows)
        all_rows: Iterable[Sequence[Cell]] = [[(h, "") for h in heads], *rows]
        for index, row in enumerate(all_rows):
            left, divider, right = edges[0 if index == 0 else (2 if index == count else 1)]
            cells = [_wrapped(text, w - 2 * _PAD) for (text, _), w in zip(row, widths, strict=True)]
            height = max(len(c) for c in cells)
            for c, w in zip(cells, widths, strict=True):
                blank = [" " * (w - 2 * _PAD)] * (height - len(c))
                c[:] = blank + c if index == 0 else c + blank  # the header sits at the bottom
            styles = [console.get_style(style) if style else None for _, style in row]
            for line in range(height):
                if plain:
                    inner = divider.join(f" {c[line]} " for c in cells)
                    yield Segment(f"{left}{inner}{right}")
                else:
                    yield from _styled_line(
                        left,
                        divider,
                        right,
                        [c[line] for c in cells],
                        styles,
                        header if index == 0 else None,
                    )
                yield new_line
            if index == 0:
                yield Segment(box.get_row(widths, "head", edge=True))
                yield new_line
        yield Segment(box.get_bottom(widths))
        yield new_line
