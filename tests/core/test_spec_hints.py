""" "Did you mean" for unknown spec keys and values, in every family's spec, with file and
line (issue 21.3), through ``gridbench validate`` as a user types it; and a spec value
naming an agent that does not exist is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.cli import main

JOBFLOW = """\
name: jf
backend: {type: reference, options: {preset: batched}}
job: {runtime: 1s}
load: {model: open, rate: 5/s}
trial: {duration: 2s}
"""
IO = """\
name: st
targets:
  - {name: a, path: /tmp}
baseline: a
iozone: {file_size: 1M, record_size: 64k, tests: [write, read]}
"""
NET = """\
name: nt
environments: [host]
pingpong: {transports: [tcp], sizes: {list: [1k]}, tests: 2, round_trips: 2}
"""
STUDY = Path(__file__).parents[2] / "examples" / "study-ahe.yaml"


def _validate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("base", "old", "new", "line", "meant"),
    [
        # unknown keys: at the top, in a block, in a tagged union's member
        (JOBFLOW, "trial:", "trail:", 5, "field 'trail': Extra inputs are not permitted; "
         "did you mean 'trial'?"),
        (JOBFLOW, "rate: 5/s", "rat: 5/s", 4, "field 'load.rat'"),
        (JOBFLOW, "rate: 5/s", "rat: 5/s", 4, "did you mean 'rate'?"),
        (IO, "iozone:", "iozon:", 5, "did you mean 'iozone'?"),
        (IO, "record_size", "recordsize", 5, "did you mean 'record_size'?"),
        (NET, "round_trips", "roundtrips", 3, "did you mean 'round_trips'?"),
        # unknown enumerated values (literal errors, a validator's own list, list items)
        (JOBFLOW, "model: open", "model: opne", 4, "did you mean 'open'?"),
        (IO, "tests: [write, read]", "tests: [write, raed]", 5, "did you mean 'read'?"),
        (NET, "environments: [host]", "environments: [hots]", 2, "did you mean 'host'?"),
        (NET, "transports: [tcp]", "transports: [tpc]", 3, "did you mean 'tcp'?"),
    ],
)  # fmt: skip
def test_a_near_miss_names_what_was_meant_with_file_and_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    base: str,
    old: str,
    new: str,
    line: int,
    meant: str,
) -> None:
    assert old in base
    err = _validate(tmp_path, base.replace(old, new, 1), capsys)
    assert f"spec.yaml:{line}: " in err and meant in err, err


def test_a_study_spec_gets_the_same_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = STUDY.read_text(encoding="utf-8")
    assert "\nparticipants:" in text
    err = _validate(tmp_path, text.replace("\nparticipants:", "\nparticipant:", 1), capsys)
    assert "did you mean 'participants'?" in err, err
    line = text[: text.index("\nparticipants:")].count("\n") + 2
    assert f"spec.yaml:{line}: " in err, err


def test_no_hint_for_a_word_near_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _validate(tmp_path, JOBFLOW + "zzzzqqq: 1\n", capsys)
    assert "field 'zzzzqqq': Extra inputs are not permitted" in err and "did you mean" not in err


def test_agents_env_for_an_agent_that_does_not_exist_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = "agents: {processes: 2, env: {agent-2: {LD_PRELOAD: x}}}"
    err = _validate(tmp_path, JOBFLOW.replace("rate: 5/s", f"rate: 5/s, {block}"), capsys)
    assert "spec.yaml:4: " in err, err
    assert "agents.env names agent-2, which does not exist: the agents are agent-0, agent-1" in err
    spec = tmp_path / "ok.yaml"
    spec.write_text(JOBFLOW.replace("rate: 5/s", f"rate: 5/s, {block.replace('-2', '-1')}"))
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err
