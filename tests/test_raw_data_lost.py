"""Missing raw data is damage, for every family (issue 22.5): a real run of job flow (on
the reference grid), storage (local fio) and messaging (loopback), whose raw files are
then deleted or emptied, is refused by ``analyze`` and ``report`` with one error naming
the lost file, and its metrics.json is left as it was (never a valid-looking smaller
result). The study's answer log has its own test (test_study_analysis)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env

JOBFLOW = """\
name: lost-jf
backend: {type: reference, options: {preset: batched}}
job: {runtime: 0.2s}
load: {model: open, rate: 5/s}
trial: {duration: 2s}
timeouts: {status_interval: 0.2s}
"""
IO = """\
name: lost-io
targets:
  - {{name: a, path: {a}}}
  - {{name: b, path: {b}}}
baseline: a
repetitions: 1
iozone: {{file_size: 1M, record_size: 64k, tests: [write, read]}}
"""
NET = """\
name: lost-net
environments: [host]
pingpong: {transports: [tcp], sizes: {list: [1k, 4k]}, tests: 5, round_trips: 5}
echo: {enabled: false}
burst: {enabled: false}
transfer: {enabled: false}
floor: {sockperf: false, iperf3: false}
"""


def gb(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


def _run(tmp: Path, spec_text: str, *command: str) -> Path:
    spec = tmp / "spec.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    results = tmp / "results"
    p = gb(results, *command, str(spec))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    [run] = [d for d in results.iterdir() if (d / "metrics.json").is_file()]
    return run


@pytest.fixture(scope="module")
def jobflow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("lost-jf"), JOBFLOW, "run")


@pytest.fixture(scope="module")
def io_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("lost-io")
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    return _run(tmp, IO.format(a=tmp / "a", b=tmp / "b"), "io", "run")


@pytest.fixture(scope="module")
def net_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("lost-net"), NET, "net", "run")


def _copy(run: Path, tmp: Path) -> Path:
    """A copy of the shared run in a results root of its own, to damage."""
    dest = tmp / "results" / run.name
    shutil.copytree(run, dest)
    return dest


def _refused(run: Path, lost: str, commands: tuple[str, ...] = ("analyze",)) -> None:
    """``analyze`` (and ``report``, which analyses first) refuse with one message naming
    ``lost``, exit 2, and leave metrics.json byte for byte as it was."""
    before = (run / "metrics.json").read_bytes()
    for command in commands:
        p = gb(run.parent, command, str(run))
        assert p.returncode == 2, (command, p.stdout[-2000:], p.stderr[-2000:])
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr
        assert lost in p.stderr and "lost" in p.stderr, p.stderr
        assert "fix:" in p.stderr, p.stderr
        assert (run / "metrics.json").read_bytes() == before


def _analyses(run: Path) -> None:
    p = gb(run.parent, "analyze", str(run))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_jobflow_run_with_its_event_log_gone_or_emptied(jobflow_run: Path, tmp_path: Path) -> None:
    run = _copy(jobflow_run, tmp_path)
    _analyses(run)  # intact, the same copy analyses: what follows is the damage alone
    events = run / "trials" / "p00-t00" / "events.csv"
    header = events.read_text(encoding="utf-8").splitlines()[0]
    counted = json.loads((events.parent / "trial.json").read_text())["events"]
    assert counted > 0
    events.write_text(header + "\n", encoding="utf-8")  # emptied: the header alone
    _refused(run, "trials/p00-t00/events.csv: trial p00-t00's event log holds no event")
    events.unlink()
    _refused(run, "events.csv: trial p00-t00's event log is missing", ("analyze", "report"))


def test_jobflow_run_with_a_trial_folder_gone(jobflow_run: Path, tmp_path: Path) -> None:
    run = _copy(jobflow_run, tmp_path)
    shutil.rmtree(run / "trials" / "p00-t00")
    _refused(run, "1 finished trial(s) but only 0 trial folder(s)")


def test_io_run_with_a_raw_fio_output_or_its_rows_gone(io_run: Path, tmp_path: Path) -> None:
    run = _copy(io_run, tmp_path)
    _analyses(run)
    recorded = json.loads((run / "experiment.json").read_text())["raw_files"]
    raw = sorted(n for n in recorded if n.startswith("raw/") and n.endswith(".json"))
    assert len(raw) == 4 and recorded["rows.jsonl"] > 0, recorded
    (run / raw[1]).unlink()
    _refused(run, raw[1], ("analyze", "report"))
    shutil.copy(io_run / raw[1], run / raw[1])
    _analyses(run)  # restored, it analyses again
    (run / "rows.jsonl").write_bytes(b"")
    _refused(run, "rows.jsonl holds 0 of the")


def test_an_io_run_recorded_before_the_list_still_needs_its_rows(
    io_run: Path, tmp_path: Path
) -> None:
    run = _copy(io_run, tmp_path)
    exp = json.loads((run / "experiment.json").read_text())
    del exp["raw_files"]
    exp["status"] = "completed"  # the word storage runs recorded then
    (run / "experiment.json").write_text(json.dumps(exp), encoding="utf-8")
    _analyses(run)
    (run / "rows.jsonl").unlink()
    _refused(run, "rows.jsonl is missing")


def test_net_run_with_its_records_emptied_or_gone(net_run: Path, tmp_path: Path) -> None:
    run = _copy(net_run, tmp_path)
    _analyses(run)
    (run / "records.jsonl").write_bytes(b"")
    _refused(run, "records.jsonl holds 0 of the", ("analyze", "report"))
    (run / "records.jsonl").unlink()
    _refused(run, "records.jsonl is missing")
    exp = json.loads((run / "experiment.json").read_text())
    del exp["raw_files"]
    exp["status"] = "done"  # an old run, recorded in the word messaging used then
    (run / "experiment.json").write_text(json.dumps(exp), encoding="utf-8")
    _refused(run, "records.jsonl is missing")


def test_a_recorded_name_never_leads_outside_the_run(net_run: Path, tmp_path: Path) -> None:
    run = _copy(net_run, tmp_path)
    exp = json.loads((run / "experiment.json").read_text())
    exp["raw_files"] = {**exp["raw_files"], "../../elsewhere": 5, "/etc/passwd": 1}
    (run / "experiment.json").write_text(json.dumps(exp), encoding="utf-8")
    _analyses(run)  # foreign names are ignored, not checked (nor followed)
