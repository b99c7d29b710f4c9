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


def test_a_run_that_fails_says_where_it_stopped_not_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cliargs, "LOG_EVERY_S", 0.0)
    u, out = ui()
    with pytest.raises(RuntimeError), cliargs.step_progress(u, "io", 3) as step:
        step("a: write")
        raise RuntimeError("target refused")
    got = [LINE.match(x) for x in out.getvalue().splitlines()]
    assert [(m.group(1), m.group(2)) for m in got if m] == [("0", "a: write"), ("1", "stopped")]


def test_lines_are_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cliargs, "LOG_EVERY_S", 3600.0)
    u, out = ui()
    with cliargs.step_progress(u, "io", 3) as step:
        for msg in ("a", "b", "c"):
            step(msg)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].endswith("0/3 (0 s) a") and lines[1].endswith("done")


def test_a_job_flow_run_into_a_log_prints_timestamped_progress(tmp_path: Any) -> None:
    """gridbench run with its output in a file (not a terminal): a line per trial start
    and end, and the running trial's counters every few seconds, as it goes."""
    import subprocess

    from conftest import BIN, cli_env

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: log-progress\nbackend: {type: noop}\njob: {command: [/bin/true]}\n"
        "load: {model: open, rate: 20/s}\ntrial: {duration: 11s}\n"
    )
    log = tmp_path / "out.log"
    with log.open("w") as fh:
        p = subprocess.run(
            [str(BIN), "run", str(spec), "--yes"],
            env=cli_env(tmp_path / "results"),
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
    text = log.read_text()
    assert p.returncode == 0, text[-3000:]
    lines = [x for x in text.splitlines() if re.match(r"^\d\d:\d\d:\d\d trials \d+/1 ", x)]
    assert any("trial p00-t00 started" in x for x in lines), text[-3000:]
    assert any("submitting: done" in x for x in lines), lines  # counters while it runs
    assert lines[-1].endswith("done 220 · failed 0") or "complete" in lines[-1], lines
