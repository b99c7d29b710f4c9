"""Reading a foreign CSV export for ``gridbench study import``: bounded, strict UTF-8 (a
BOM is fine), headers renamed onto the generic layout, cells read as answers and ids,
and every problem collected with its CSV row (the header is row 1) and column, to be
reported together."""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gridbench.errors import GridbenchError

#: A survey export of a few hundred participants is kilobytes; this is a generous bound.
MAX_CSV_BYTES = 16 * 1024 * 1024
#: participant pseudonyms (as the spec's Ident)
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
#: Problems listed in the message; the rest are counted.
SHOWN_PROBLEMS = 20


class ImportProblems(GridbenchError):
    """A CSV with problems: ``problems`` holds every (row, column, problem)."""

    def __init__(self, path: str, problems: list[tuple[int, str, str]]) -> None:
        lines = [_cut(f"row {r}, column {c}: {p}") for r, c, p in problems[:SHOWN_PROBLEMS]]
        if len(problems) > SHOWN_PROBLEMS:
            lines.append(f"... and {len(problems) - SHOWN_PROBLEMS} more")
        n = len(problems)
        super().__init__(
            f"{n} problem{'s' if n != 1 else ''} in the CSV; nothing was imported:\n    "
            + "\n    ".join(lines),
            where=path,
            fix="correct those cells (or the spec's import: mapping, docs/study.md) and "
            "import again",
        )
        self.problems = problems


#: Longest problem line shown: a cell may be a whole file's worth (an unclosed quote).
SHOWN_CHARS = 200


def _cut(line: str) -> str:
    """``line`` at most :data:`SHOWN_CHARS` long, a cut one ending in its length."""
    if len(line) <= SHOWN_CHARS:
        return line
    return f"{line[:SHOWN_CHARS]}... (cut: {len(line):,} characters in all)"


@dataclass
class Problems:
    """Problems found so far in one file."""

    path: str
    found: list[tuple[int, str, str]] = field(default_factory=list)

    def add(self, row: int, column: str, problem: str) -> None:
        """One problem at CSV ``row`` (header = 1) and ``column`` (as the file names it)."""
        self.found.append((row, column, problem))

    def raise_if_any(self) -> None:
        """Raise :class:`ImportProblems` listing every problem, rows in order."""
        if self.found:
            raise ImportProblems(self.path, sorted(self.found, key=lambda p: p[0]))


@dataclass(frozen=True)
class CsvTable:
    """A CSV's data rows keyed by generic column names."""

    columns: tuple[str, ...]  # generic names, in file order
    headers: Mapping[str, str]  # generic name -> the header in the file
    rows: tuple[tuple[int, dict[str, str]], ...]  # (CSV row number, generic name -> cell)
    renamed: Mapping[str, str]  # generic name -> export header, as the spec maps them

    def label(self, col: str) -> str:
        """How to name generic column ``col`` in a message: the file's header, with the
        generic name beside it when the spec renamed it."""
        header = self.headers.get(col) or self.renamed.get(col, col)
        return header if header == col else f"{header!r} ({col})"


def _read_text(path: Path) -> str:
    """The file's text: at most :data:`MAX_CSV_BYTES`, strict UTF-8, a BOM dropped."""
    try:
        with path.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_CSV_BYTES:
                raise GridbenchError(
                    f"the CSV is larger than {MAX_CSV_BYTES // 2**20} MiB",
                    where=str(path),
                    fix="a survey export is small: check that this is the right file",
                )
            data = fh.read(MAX_CSV_BYTES + 1)
    except FileNotFoundError:
        raise GridbenchError(
            "file not found", where=str(path), fix="give the CSV export's path"
        ) from None
    except IsADirectoryError:
        raise GridbenchError(
            "a directory, not a CSV file", where=str(path), fix="give the CSV file"
        ) from None
    if len(data) > MAX_CSV_BYTES:
        raise GridbenchError(
            "the CSV grew while it was read", where=str(path), fix="import a finished export"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GridbenchError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
            where=f"{path}: line {line}",
            fix="export the CSV as UTF-8 (most survey tools offer it), or convert it: "
            "iconv -f latin1 -t utf-8",
        ) from None
    return text.removeprefix("\ufeff")


def _check_delimiter(header: list[str], delimiter: str, path: Path) -> None:
    """A header read as one column that holds another usual separator: the wrong
    delimiter (one clear error instead of every column reported missing)."""
    if len(header) != 1:
        return
    other = next((d for d in (",", ";", "\t", "|") if d != delimiter and d in header[0]), None)
    if other is not None:
        raise GridbenchError(
            f"the header is one column: the file seems separated by {other!r}, not {delimiter!r}",
            where=f"{path}: line 1",
            fix=f"set import.delimiter: {other!r} in the spec (it applies to every CSV the "
            "import reads)",
        )


def read_csv(path: Path, delimiter: str, rename: Mapping[str, str]) -> CsvTable:
    """Read ``path`` with ``delimiter``; headers named in ``rename`` (generic name ->
    export header) take their generic name. A bad header raises :class:`ImportProblems`;
    rows with more cells than the header are reported the same way."""
    text = _read_text(path)
    problems = Problems(str(path))
    back = {header: generic for generic, header in rename.items()}
    # strict: a quote never closed is an error, not the rest of the file read as one cell
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    done_line = 0  # the last line of the last row read whole
    rows: list[tuple[int, dict[str, str]]] = []
    columns: list[str] = []
    headers: dict[str, str] = {}
    try:
        header, first = next(reader, None), 2
        while header is not None and not any(c.strip() for c in header):
            header, first = next(reader, None), first + 1  # blank lines above the header
        if header is None:
            raise GridbenchError(
                "the CSV is empty", where=str(path), fix="give the export with its header row"
            )
        _check_delimiter(header, delimiter, path)
        done_line = reader.line_num  # the header (and any blank lines above it)
        first_at: dict[str, int] = {}
        for i, raw in enumerate(header, 1):
            name = raw.strip()
            generic = back.get(name, name)
            if not name:
                continue
            if generic in first_at:
                problems.add(
                    first - 1,
                    repr(name),
                    f"a second column named {generic!r} (first: column {first_at[generic]})",
                )
                continue
            first_at[generic] = i
            columns.append(generic)
            headers[generic] = name
        keys = [back.get(h.strip(), h.strip()) for h in header]
        for n, cells in enumerate(reader, first):
            if not any(c.strip() for c in cells):
                continue  # blank lines (a trailing newline, a spacer row)
            if len(cells) > len(keys) and any(c.strip() for c in cells[len(keys) :]):
                problems.add(
                    n, f"{len(keys) + 1}", f"the row has {len(cells)} cells, the header {len(keys)}"
                )
            rows.append((n, {k: c.strip() for k, c in zip(keys, cells, strict=False) if k}))
            done_line = reader.line_num
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise GridbenchError(
                f"a quoted cell is never closed: its quote opens on line {done_line + 1} "
                "or after, and the file ends inside it",
                where=f"{path}: line {done_line + 1}",
                fix="close the quote (or remove the stray one) on that row",
            ) from None
        raise GridbenchError(
            f"not readable as CSV: {exc}",
            where=f"{path}: line {reader.line_num}",
            fix=f"check the quoting near that line (delimiter {delimiter!r}: import.delimiter)",
        ) from None
    problems.raise_if_any()
    return CsvTable(tuple(columns), headers, tuple(rows), dict(rename))


def whole(text: str, low: int, high: int) -> int | str:
    """An answer on a low..high scale, or the problem with it."""
    try:
        value = float(text)
    except ValueError:
        return f"{text!r} is not a number (give a whole number {low}..{high})"
    if not math.isfinite(value) or value != int(value):
        return f"{text!r} is not a whole number {low}..{high}"
    if not low <= value <= high:
        return f"{text!r} is out of range (give {low}..{high})"
    return int(value)


class CellReader:
    """Cells of one CSV read as answers and ids; problems go to ``problems``. Columns in
    ``reversed`` were exported on a flipped scale and are flipped back."""

    def __init__(
        self, table: CsvTable, problems: Problems, reversed_cols: Iterable[str] = ()
    ) -> None:
        self.table, self.problems = table, problems
        self.reversed = set(reversed_cols)

    def scale(self, row: int, cells: dict[str, str], col: str, high: int = 5) -> int | None:
        """A 1..high answer of generic column ``col`` (None when blank or bad)."""
        text = cells.get(col, "")
        if not text:
            return None
        got = whole(text, 1, high)
        if isinstance(got, str):
            self.problems.add(row, self.table.label(col), got)
            return None
        return high + 1 - got if col in self.reversed else got

    def ident(self, row: int, cells: dict[str, str], col: str, allowed: Iterable[str]) -> str:
        """A participant or tool id ('' after reporting a problem)."""
        text = cells.get(col, "")
        allowed = list(allowed)
        if not text:
            self.problems.add(row, self.table.label(col), f"no {col} given")
        elif not _IDENT.fullmatch(text):
            self.problems.add(
                row,
                self.table.label(col),
                f"{text!r} is not a valid {col} id (a letter, then letters, digits, _ or -; "
                "at most 40)",
            )
        elif allowed and text not in allowed:
            self.problems.add(
                row,
                self.table.label(col),
                f"unknown {col} {text!r} (the spec has {', '.join(allowed)})",
            )
        else:
            return text
        return ""
