"""Options and presets of the command backend: validation errors with fixes, merging."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.backends.base import JobState
from gridbench.jobflow.backends.command import presets as command_presets
from gridbench.jobflow.backends.command.options import compile_options, merge
from gridbench.jobflow.backends.registry import available, create_backend

PRESETS = {
    "arc",
    "cream",
    "demo",
    "gram",
    "htcondor",
    "pbs",
    "sge",
    "slurm",
    "unicore",
    "xtreemos",
}
MINIMAL: dict[str, Any] = {
    "submit": {"argv": ["/bin/echo", "{name}"], "pattern": "(?P<id>.+)"},
    "status": {"argv": ["/bin/echo", "{ids}"], "pattern": r"(?P<id>\S+) (?P<state>\S+)"},
}


def required_vars(name: str) -> dict[str, str]:
    raw = command_presets.load(name)
    return {k: "x" for k, v in (raw.get("vars") or {}).items() if v is None}


def test_every_shipped_preset_states_tested_and_written_for_and_compiles() -> None:
    assert set(command_presets.names()) == PRESETS
    infos = {p.name: p for p in command_presets.listing()}
    for name, info in infos.items():
        assert info.written_for, name
        assert info.description, name
        cfg = compile_options({"preset": name, "vars": required_vars(name)})
        assert cfg.preset is not None and cfg.preset.name == name
        assert "submit" in cfg.ops and "status" in cfg.ops
        assert cfg.states, name
        assert set(cfg.states.values()) <= set(JobState)
    # the demo CLI, Slurm (tests/slurm_cluster.py), Grid Engine (tests/sge_cluster.py),
    # GRAM5 (tests/gram_site.py) and ARC (tests/arc_site.py) run here; the rest are untested
    tested = {"demo", "slurm", "sge", "gram", "arc"}
    assert {n for n, i in infos.items() if i.tested} == tested


def test_batched_status_where_the_cli_allows_it() -> None:
    modes = {
        n: compile_options({"preset": n, "vars": required_vars(n)}).ops["status"].mode
        for n in PRESETS
    }
    assert modes["slurm"] == modes["pbs"] == modes["cream"] == modes["unicore"] == "batch"
    assert modes["sge"] == modes["xtreemos"] == "all"  # one listing of the user's jobs
    assert modes["gram"] == "single"  # globus-job-status takes one contact
    assert modes["demo"] == modes["arc"] == modes["htcondor"] == "batch"


def test_command_backend_is_registered() -> None:
    assert available()["command"] == "gridbench.jobflow.backends.command.backend:CommandBackend"
    b = create_backend("command", {"preset": "demo"})
    assert b.name == "command"
    assert b.capabilities().batch_status and b.capabilities().cancel


def test_string_templates_are_rejected_with_a_fix() -> None:
    with pytest.raises(SpecError) as exc:
        compile_options({**MINIMAL, "submit": "sbatch --wrap 'sleep 1'"})
    msg = str(exc.value)
    assert "backend.options.submit" in msg and "argv list" in msg and "never runs a shell" in msg
    with pytest.raises(SpecError, match="argv list"):
        compile_options({**MINIMAL, "cancel": {"argv": "scancel {ids}"}})
    with pytest.raises(SpecError, match="argv list"):
        compile_options({"preset": "slurm", "cancel": "scancel {ids}"})


def test_unknown_placeholder_and_wrong_scope() -> None:
    with pytest.raises(SpecError) as exc:
        compile_options({**MINIMAL, "cancel": ["scancel", "{jobid}"]})
    assert "backend.options.cancel" in str(exc.value) and "{jobid}" in str(exc.value)
    with pytest.raises(SpecError, match=r"\{name\}"):  # {id} does not exist at submit time
        compile_options({**MINIMAL, "submit": {"argv": ["x", "{id}"], "pattern": "."}})


def test_many_job_status_needs_id_and_state_groups() -> None:
    bad = {**MINIMAL, "status": {"argv": ["squeue", "{ids}"], "pattern": r"(\d+) (\w+)"}}
    with pytest.raises(SpecError) as exc:
        compile_options(bad)
    assert "status.pattern" in str(exc.value) and "'id' and 'state'" in str(exc.value)


def test_cancel_by_pattern_is_refused() -> None:
    with pytest.raises(SpecError, match="never cancels by a user-wide pattern"):
        compile_options({**MINIMAL, "cancel": ["scancel", "-u", "me"]})


def test_bad_regex_and_missing_templates() -> None:
    with pytest.raises(SpecError, match="not a valid regular expression"):
        compile_options({**MINIMAL, "submit": {"argv": ["x"], "pattern": "(?P<id>"}})
    with pytest.raises(SpecError) as exc:
        compile_options({"submit": MINIMAL["submit"]})
    assert "preset" in str(exc.value) and "slurm" in str(exc.value)
    with pytest.raises(SpecError, match="unknown preset 'lsf'"):
        compile_options({"preset": "lsf"})


def test_required_preset_variables() -> None:
    with pytest.raises(SpecError) as exc:
        compile_options({"preset": "arc", "vars": {"app": "job.xrsl"}})
    assert "vars.url" in str(exc.value) and "preset 'arc'" in str(exc.value)
    cfg = compile_options({"preset": "arc", "vars": {"app": "job.xrsl", "url": "ce.org"}})
    assert cfg.values == {"url": "ce.org", "app": "job.xrsl"}


def test_builtin_names_cannot_be_variables() -> None:
    with pytest.raises(SpecError, match="built-in placeholder"):
        compile_options({**MINIMAL, "vars": {"id": "x"}})


def test_merge_overrides_one_template_field_and_adds_states() -> None:
    cfg = compile_options(
        {
            "preset": "slurm",
            "vars": {"sbatch_args": ["--partition=debug"]},
            "submit": {"pattern": r"^Submitted batch job (?P<id>\d+)"},
            "cancel": ["/opt/slurm/bin/scancel", "--quiet", "{ids}"],
            "states": {"MYSTATE": "failed"},
            "init": None,
        }
    )
    sub = cfg.ops["submit"]
    assert sub.pattern is not None and sub.pattern.pattern == r"^Submitted batch job (?P<id>\d+)"
    assert sub.argv is not None and sub.argv.raw[0] == "sbatch"  # argv kept from the preset
    assert cfg.ops["cancel"].argv is not None
    assert cfg.ops["cancel"].argv.raw == ("/opt/slurm/bin/scancel", "--quiet", "{ids}")
    assert cfg.states["MYSTATE"] is JobState.FAILED and cfg.states["PENDING"] is JobState.QUEUED
    assert "init" not in cfg.ops
    assert cfg.lists == {"sbatch_args": ["--partition=debug"]}


def test_merge_function() -> None:
    base = {"vars": {"a": "1"}, "submit": {"argv": ["x"], "pattern": "p"}, "timeout_s": 5}
    over = {"vars": {"b": "2"}, "submit": ["y", "{name}"], "timeout_s": 9}
    assert merge(base, over) == {
        "vars": {"a": "1", "b": "2"},
        "submit": {"argv": ["y", "{name}"], "pattern": "p"},
        "timeout_s": 9,
    }


def test_numbers_in_yaml_argv_become_strings() -> None:
    cfg = compile_options({**MINIMAL, "init": ["/bin/sleep", 0.1], "vars": {"n": 3}})
    assert cfg.ops["init"].argv is not None and cfg.ops["init"].argv.raw == ("/bin/sleep", "0.1")
    assert cfg.values["n"] == "3"


def test_preset_from_a_file(tmp_path: Path) -> None:
    p = tmp_path / "mine.yaml"
    p.write_text(
        "tested: false\nwritten_for: mysched 1.0\n"
        "submit: {argv: [myq, submit, '{command}'], pattern: '(?P<id>\\d+)'}\n"
        "status: {argv: [myq, stat, '{ids}'], pattern: '(?P<id>\\d+) (?P<state>\\w+)'}\n"
    )
    cfg = compile_options({"preset": str(p)})
    assert cfg.preset is not None and cfg.preset.written_for == "mysched 1.0"
    p.write_text("submit: {argv: [x]}\n")
    with pytest.raises(SpecError, match="does not state 'tested'"):
        compile_options({"preset": str(p)})
    with pytest.raises(SpecError, match="cannot read preset file"):
        compile_options({"preset": str(tmp_path / "nope.yaml")})
