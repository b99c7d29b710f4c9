"""Text from data reaches the terminal as text: no Rich markup, no control sequences."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rich.console import Console

from conftest import BIN, cli_env
from gridbench.fmt import safe_markup, visible
from gridbench.report import render_report
from gridbench.sections import (
    Column,
    EvaluationSummary,
    Finding,
    Headline,
    Report,
    Statements,
    Table,
)

#: A name that is Rich markup (a live link, a bare closing tag) and terminal control:
#: clear the screen, set the window title, a bidi override.
HOSTILE = "[link=http://x]x[/link][/]\x1b[2J\x1b]0;title\x07\u202e"
SHOWN = "[link=http://x]x[/link][/]\\x1b[2J\\x1b]0;title\\x07\\u202e"

SPEC = """\
name: "[link=http://x]x[/link][/]\\e[2J\\e]0;title\\a\\u202e"
backend: {type: noop, options: {runtime_s: 0.05}}
load: {model: open, rate: 20/s}
trial: {duration: 0.5s}
timeouts: {status_interval: 0.1s}
"""


def _assert_literal(out: str) -> None:
    # a table title may wrap: compare without the white space rich adds
    assert "".join(SHOWN.split()) in "".join(out.split()), out
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\x07" not in out
    assert "\x1b]8;" not in out  # no hyperlink escape
    assert "\u202e" not in out


def test_helpers_make_controls_visible_and_escape_markup() -> None:
    assert visible("a\tb\nc\x00\x7f\x9b\u2066") == "a\tb\nc\\x00\\x7f\\x9b\\u2066"
    assert safe_markup("[/]\x1b") == "\\[/]\\x1b"
    console = Console(record=True, width=300, color_system=None)
    console.print(f"[bold]{safe_markup(HOSTILE)}[/]")
    assert console.export_text().strip() == SHOWN


def test_report_strings_render_as_literal_text() -> None:
    finding = Finding("fail", HOSTILE, HOSTILE)
    report = Report(
        family="jobflow",
        title=HOSTILE,
        headline=Headline(title=HOSTILE, findings=(finding,)),
        summary=EvaluationSummary((), "", None, (), ()),
        sections=(
            Statements(id="s", title=HOSTILE, lines=(("warn", HOSTILE),), lead=True),
            Table(id="t", title=HOSTILE, columns=(Column("c", HOSTILE),), rows=((HOSTILE,),)),
        ),
        notes=(HOSTILE,),
    )
    console = Console(record=True, width=300, force_terminal=True, color_system="truecolor")
    render_report(report, console, verbose=True)
    out = console.export_text(styles=True)
    _assert_literal(out)
    assert out.count(SHOWN) >= 6


def test_run_and_report_print_a_hostile_name_literally(tmp_path: Path) -> None:
    spec = tmp_path / "hostile.yaml"
    spec.write_text(SPEC)
    env = cli_env(tmp_path / "results")
    for args in (
        ["run", str(spec)],
        ["plan", str(spec)],
        ["report", "latest"],
        ["list"],
        ["show", "latest"],
    ):
        p = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in p.stdout + p.stderr
        assert p.returncode == 0, (args, p.stderr)
        _assert_literal(p.stdout + p.stderr)
