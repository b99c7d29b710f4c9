"""A run's progress when the output is not a terminal (a file, a CI log): timestamped
lines as it goes, not one bar at the end (issue 21, item 4)."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from gridbench import cliargs

LINE = re.compile(r"^\d\d:\d\d:\d\d io (\d+)/3 \(\d+ s\) (.*)$")


def ui() -> tuple[Any, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    return SimpleNamespace(console=console, err_console=console), out


def test_every_step_is_a_line_when_the_interval_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cliargs, "LOG_EVERY_S", 0.0)
    u, out = ui()
    with cliargs.step_progress(u, "io", 3) as step:
        for msg in ("a: write", "a: read", "b: write \x1b[2J"):
            step(msg)
    lines = out.getvalue().splitlines()
    got = [LINE.match(x) for x in lines]
    assert all(got), lines
    assert [(m.group(1), m.group(2)) for m in got if m] == [
        ("0", "a: write"),
        ("1", "a: read"),
        ("2", "b: write \\x1b[2J"),  # control characters shown, not obeyed
        ("3", "done"),
    ]


def test_lines_are_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cliargs, "LOG_EVERY_S", 3600.0)
    u, out = ui()
    with cliargs.step_progress(u, "io", 3) as step:
        for msg in ("a", "b", "c"):
            step(msg)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].endswith("0/3 (0 s) a") and lines[1].endswith("done")
