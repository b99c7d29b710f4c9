"""gridbench.bigtable draws ``gridbench list``'s table as rich's ``Table`` draws it, in a
fraction of rich's time: without colour (a file, a pipe, a log) character for character,
whatever the cells hold (spaces, brackets, backslashes, wide and zero-width characters,
emoji codes) and whatever the width; in colour, the same text."""

from __future__ import annotations

import io
import random
import re

import pytest
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gridbench.bigtable import BigTable

STYLES = ("", "green", "red", "yellow", "bold")
ALPHABET = "abcdefghij  -_./:0123 [ ] \\ é中😀\u200b"
HEADINGS = ("id", "name", "kind", "target", "variant", "status", "trials", "verdict", "created")


def console(width: int, *, colour: bool = False, emoji: bool = False) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        emoji=emoji,
        color_system="truecolor" if colour else None,
        force_terminal=colour,
    )


def by_rich(c: Console, title: str, heads: list[str], rows: list[list[tuple[str, str]]]) -> str:
    """What ``gridbench list`` printed before: rich's Table of markup cells."""
    t = Table(title=title)
    for h in heads:
        t.add_column(h, overflow="fold")
    for row in rows:
        t.add_row(*(f"[{s}]{escape(x)}[/]" if s and x else escape(x) for x, s in row))
    c.print(t)
    assert isinstance(c.file, io.StringIO)
    return c.file.getvalue()


def by_bigtable(c: Console, title: str, heads: list[str], rows: list[list[tuple[str, str]]]) -> str:
    c.print(BigTable(title, heads, rows))
    assert isinstance(c.file, io.StringIO)
    return c.file.getvalue()


def random_table(rng: random.Random) -> tuple[str, list[str], list[list[tuple[str, str]]]]:
    def text() -> str:
        n = rng.choice([0, 1, 2, 3, 5, 8, 13, 21, 34, 60])
        return "".join(rng.choice(ALPHABET) for _ in range(n))

    n = rng.randint(1, 10)
    heads = [rng.choice([*HEADINGS, "reps", "a b c"]) for _ in range(n)]
    rows = [[(text(), rng.choice(STYLES)) for _ in range(n)] for _ in range(rng.randint(1, 6))]
    return "experiments in " + escape(text()), heads, rows


@pytest.mark.parametrize("seed", range(8))
def test_without_colour_it_is_rich_s_table_character_for_character(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        title, heads, rows = random_table(rng)
        width = rng.choice([10, 20, 30, 40, 60, 80, 100, 120, 200, 300])
        emoji = rng.random() < 0.2
        a = by_rich(console(width, emoji=emoji), title, heads, rows)
        b = by_bigtable(console(width, emoji=emoji), title, heads, rows)
        assert a == b, (width, heads, rows)


def test_a_list_of_runs_is_rich_s_at_every_width() -> None:
    rows = [
        [
            (f"20260101T0000{i:02d}Z-local-sleep-ramp-{i}", ""),
            ("local-sleep-ramp", ""),
            ("jobflow" if i % 2 else "io", ""),
            ("local" if i % 2 else "a, b", ""),
            ("open" if i % 2 else "storage vs a", ""),
            ("complete" if i % 3 else "failed", "green" if i % 3 else "red"),
            (f"{i % 4}/3", ""),
            ("pass" if i % 3 else "fail (invalid trials)", "green" if i % 3 else "red"),
            ("2026-01-01T00:00:00+00:00", ""),
        ]
        for i in range(40)
    ]
    for width in range(20, 240, 7):
        a = by_rich(console(width), "experiments in /srv/results", list(HEADINGS), rows)
        b = by_bigtable(console(width), "experiments in /srv/results", list(HEADINGS), rows)
        assert a == b, width


def test_in_colour_the_text_is_the_same_and_the_styles_are_there() -> None:
    rows = [[("run-1", ""), ("complete", "green"), ("fail", "red")]]
    plain = by_bigtable(console(60), "t", ["id", "status", "verdict"], rows)
    coloured = by_bigtable(console(60, colour=True), "t", ["id", "status", "verdict"], rows)
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    assert "\x1b[32mcomplete" in coloured and "\x1b[31mfail" in coloured  # green, red
    assert "\x1b[1mid" in coloured  # the header is bold


def test_what_it_leaves_to_rich_is_rich_s() -> None:
    """A cell with a line break or a tab, and a terminal too narrow for the columns."""
    rows = [[("two\nlines", ""), ("a\ttab", "green")]]
    for width in (8, 40):
        a = by_rich(console(width), "t", ["x", "y"], rows)
        assert a == by_bigtable(console(width), "t", ["x", "y"], rows)
    wide = [[(f"cell-{i}", "") for i in range(12)]]
    heads = [f"h{i}" for i in range(12)]
    assert by_rich(console(30), "t", heads, wide) == by_bigtable(console(30), "t", heads, wide)
