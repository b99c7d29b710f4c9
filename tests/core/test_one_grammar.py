"""One grammar for every family (issue 21, items 2 and 3): ``gridbench validate|plan|run
SPEC`` finds the spec's family from the spec (``kind:`` or its keys), a spec handed to
another family's command is one error naming what it is, and ``-v`` works anywhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.errors import SpecError
from gridbench.io.load import load_io_spec_text
from gridbench.jobflow.spec.load import load_spec_text

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


def gb(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(tmp), capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    return p


@pytest.mark.parametrize(
    ("verb", "example", "says"),
    [
        ("validate", "io-local-quick.yaml", "valid io spec"),
        ("validate", "net-loopback-quick.yaml", "valid net spec"),
        ("validate", "study-ahe.yaml", "study"),
        ("plan", "net-loopback-quick.yaml", "dry run"),
        ("plan", "study-ahe.yaml", "P01"),
        ("validate", "batch-local.yaml", "ok"),
    ],
)
def test_the_top_level_verbs_find_the_family(
    tmp_path: Path, verb: str, example: str, says: str
) -> None:
    p = gb(tmp_path, verb, f"examples/{example}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert says in p.stdout


def test_a_family_without_the_verb_names_the_ones_it_has(tmp_path: Path) -> None:
    p = gb(tmp_path, "run", "examples/study-ahe.yaml")
    assert p.returncode == 2
    assert "is a study spec, and study has no 'run'" in p.stderr
    assert "gridbench study serve examples/study-ahe.yaml" in p.stderr


@pytest.mark.parametrize(
    ("command", "example", "noun"),
    [
        (["io", "validate"], "batch-local.yaml", "a job-flow spec"),
        (["net", "validate"], "io-local-quick.yaml", "a storage spec"),
        (["study", "validate"], "net-loopback-quick.yaml", "a messaging spec"),
    ],
)
def test_another_family_s_spec_is_one_error(
    tmp_path: Path, command: list[str], example: str, noun: str
) -> None:
    p = gb(tmp_path, *command, f"examples/{example}")
    assert p.returncode == 2
    assert f"this is {noun}" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) <= 4, p.stderr  # not one line per foreign key


def test_the_job_flow_loader_names_a_foreign_spec() -> None:
    text = (EX / "io-local-quick.yaml").read_text()
    with pytest.raises(SpecError, match="this is a storage spec, not a job-flow spec") as err:
        load_spec_text(text, "q.yaml")
    assert "gridbench io validate q.yaml" in (err.value.fix or "")


def test_kind_names_the_family() -> None:
    text = (EX / "batch-local.yaml").read_text()
    spec, data = load_spec_text(text + "kind: jobflow\n", "b.yaml")
    assert spec.name == "batch-local" and "kind" not in data
    with pytest.raises(SpecError, match="says kind: 'io'"):
        load_spec_text(text + "kind: io\n", "b.yaml")
    io_text = (EX / "io-local-quick.yaml").read_text()
    assert load_io_spec_text(io_text + "kind: io\n", "q.yaml")[0].name == "local-quick"


def test_verbose_is_taken_after_the_command(tmp_path: Path) -> None:
    p = gb(tmp_path, "validate", "examples/batch-local.yaml", "--verbose")
    assert p.returncode == 0, p.stderr


def test_emoji_codes_in_the_users_words_stay_text(tmp_path: Path) -> None:
    """Rich turns ':fire:' into an emoji: a message quoting the user must not."""
    p = gb(tmp_path, "validate", "examples/batch-local.yaml", "--set", "backend.type=a:fire:b")
    assert p.returncode == 2 and "unknown backend 'a:fire:b'" in p.stderr, p.stderr
    p = gb(tmp_path, "list", "--results", str(tmp_path / ":smile:"))
    assert ":smile:" in p.stdout and "\U0001f604" not in p.stdout, p.stdout


def test_cross_field_and_union_errors_name_the_set_that_gave_the_value(tmp_path: Path) -> None:
    """A check across fields names the --set values it read (once only the file's line);
    a value no member of a union takes is one line for its own field (once a second line
    for 'thresholds.0.point.int', a pydantic tag)."""
    p = gb(tmp_path, "io", "validate", "examples/io-local-quick.yaml", "--set", "baseline=zzz")
    assert p.returncode == 2
    assert p.stderr.startswith(
        "error: examples/io-local-quick.yaml (with --set baseline): field '(top level)': "
        "baseline 'zzz' is not a target"
    ), p.stderr
    p = gb(tmp_path, "validate", "examples/local-sleep-ramp.yaml", "--set", "sweep.rate=[]")
    assert p.returncode == 2 and "(with --set sweep.rate)" in p.stderr, p.stderr
    threshold = '[{metric: latency.overall.p99, op: "<", value: 1, point: zz}]'
    p = gb(tmp_path, "validate", "examples/batch-local.yaml", "--set", f"thresholds={threshold}")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "point.int" not in p.stderr, p.stderr
    assert "--set thresholds: field 'thresholds.0.point': Input should be a valid integer" in (
        p.stderr
    )
    assert "; or Input should be 'all' or 'any'" in p.stderr


@pytest.mark.parametrize(
    ("reports", "says"),
    [
        ("[]", "no monitoring-report source given"),
        ("['ce=http://a/', 'ce=http://b/']", "tier 'ce' is given more than once"),
        ("['ce=ftp://x/']", "only http://, https:// or local directories"),
    ],
)
def test_collector_report_errors_name_the_spec_field(
    tmp_path: Path, reports: str, says: str
) -> None:
    """The report parser is ingest's: in a spec its errors name collectors.<i>.reports,
    never ingest's --reports flag."""
    p = gb(
        tmp_path, "validate", "examples/edgi-site.yaml", "--set", f"collectors.0.reports={reports}"
    )
    assert p.returncode == 2
    assert f"examples/edgi-site.yaml: collectors.0.reports: {says}" in p.stderr, p.stderr
    assert "--reports" not in p.stderr


def test_reference_grid_overrides_name_the_spec_field(tmp_path: Path) -> None:
    """backend.options.grid is the spec's: its errors name that field, not the preset."""
    p = gb(
        tmp_path,
        *("validate", "examples/retry-reference.yaml", "--set"),
        "backend.options.grid.ce.concurrency=abc",
    )
    assert p.returncode == 2
    assert "backend.options.grid.ce.concurrency: Input should be a valid integer" in p.stderr
    assert "preset" not in p.stderr and "docs/reference-grid.md" in p.stderr, p.stderr
