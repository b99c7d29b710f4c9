"""``gridbench validate`` warns when a spec sets a staging size (``job.input_size`` ...)
that its backend would silently ignore, naming the field, which backends stage and the
fix; a backend configured to move the field gets no warning (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.cli import main

NOOP = "backend: {type: noop}\n"
BARE_GRID = "backend: {type: reference}\n"
STAGING_GRID = (
    "backend: {type: reference, options: {grid: {bridge: {stage_out: {bandwidth_bps: 1000000}}}}}\n"
)
COMMAND_DOWNLOAD = """backend:
  type: command
  options:
    submit: {argv: [/bin/echo, "{name}"], pattern: '(\\S+)'}
    status: {argv: [/bin/echo, "{id} done"], pattern: '(?P<id>\\S+) (?P<state>\\S+)'}
    states: {done: done}
    download: {argv: [/bin/cp, /etc/hostname, "{download_dir}"]}
"""


def validate(path: Path, backend: str, job: str, capsys: pytest.CaptureFixture[str]) -> str:
    """``gridbench validate`` in-process; its standard error (the warnings), one line."""
    path.write_text(
        f"name: v\n{backend}job: {job}\nload: {{model: open, rate: 1/s}}\ntrial: {{jobs: 1}}\n"
    )
    code = main(["validate", str(path)])
    out = capsys.readouterr()
    assert code == 0 and "is a valid spec" in " ".join(out.out.split()), (out.out, out.err)
    assert "Traceback" not in out.err
    return " ".join(out.err.split())  # the terminal wraps long lines


def warned(text: str) -> list[str]:
    return [
        f
        for f in ("input_size", "input_files", "output_size", "output_files")
        if "warning: " in text and f"job.{f}:" in text
    ]


@pytest.mark.parametrize(
    ("backend", "job", "want", "why"),
    [
        (
            NOOP,
            "{input_size: 1M, output_files: 3}",
            ["input_size", "output_files"],
            "the noop backend does not stage data",
        ),
        (
            BARE_GRID,
            "{output_size: 1M}",
            ["output_size"],
            "the reference backend as configured does not move it",
        ),
        (
            STAGING_GRID,
            "{output_size: 1M, input_size: 2k}",
            ["input_size"],
            "the reference backend as configured does not move it",
        ),
        (
            COMMAND_DOWNLOAD,
            "{output_size: 1M, input_files: 2}",
            ["input_files"],
            "the command backend as configured does not move it",
        ),
    ],
)
def test_an_ignored_staging_field_is_a_warning_with_its_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    job: str,
    want: list[str],
    why: str,
) -> None:
    text = validate(tmp_path / "spec.yaml", backend, job, capsys)
    assert warned(text) == want, text
    assert why in text
    assert f"fix: drop job.{want[0]}" in text and "upload template" in text
    assert "ce.stage_in" in text and "docs/backends.md" in text


def test_a_backend_that_moves_the_field_gets_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    assert validate(spec, STAGING_GRID, "{output_size: 1M, output_files: 2}", capsys) == ""
    assert validate(spec, COMMAND_DOWNLOAD, "{output_size: 1M}", capsys) == ""
    assert validate(spec, NOOP, "{runtime: 1s}", capsys) == ""


def test_run_warns_before_it_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"name: v\n{NOOP}job: {{output_size: 1M}}\nload: {{model: open, rate: 20/s}}\n"
        "trial: {jobs: 2}\ntimeouts: {status_interval: 0.1s}\n"
    )
    code = main(["run", str(spec), "-y", "--results", str(tmp_path / "results")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    assert "warning: " in err and "job.output_size: the noop backend does not stage data" in err
