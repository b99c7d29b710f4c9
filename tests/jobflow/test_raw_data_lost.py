"""Missing raw data is damage, for every family (issue 22.5): a real run of job flow (on
the reference grid), storage (local fio) and messaging (loopback), whose raw files are
then deleted or emptied, is refused by ``analyze`` and ``report`` with one error naming
the lost file, and its metrics.json is left as it was (never a valid-looking smaller
result). The study's answer log has its own test (test_study_analysis)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from family_runs import copy_run, gb
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.trial_log import read_trial_log


def _copy(run: Path, tmp: Path) -> Path:
    """A copy of the session's run in a results root of its own, to damage."""
    return copy_run(run, tmp / "results")


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


@pytest.mark.parametrize("fmt", ["arrows", "csv"])
def test_jobflow_run_with_its_event_log_gone_or_emptied(
    jobflow_run: Path, tmp_path: Path, fmt: str
) -> None:
    run = _copy(jobflow_run, tmp_path)
    trial = run / "trials" / "p00-t00"  # the first of the sweep's 2 trials
    events = trial / f"events.{fmt}"
    if fmt == "csv":  # a run of older gridbench: the same events as events.csv
        read_trial_log(trial).write_csv(events)
        (trial / "events.arrows").unlink()
    _analyses(run)  # intact, the same copy analyses: what follows is the damage alone
    counted = json.loads((trial / "trial.json").read_text())["events"]
    assert counted > 0
    if fmt == "csv":
        header = events.read_text(encoding="utf-8").splitlines()[0]
        events.write_text(header + "\n", encoding="utf-8")  # emptied: the header alone
    else:
        events.unlink()
        ArrowEventLog(events).close()  # emptied: the schema alone
    _refused(run, f"trials/p00-t00/events.{fmt}: trial p00-t00's event log holds only 0 events")
    events.unlink()
    _refused(run, "events.arrows: trial p00-t00's event log is missing", ("analyze", "report"))


def test_jobflow_run_whose_log_was_cut_after_the_trial(jobflow_run: Path, tmp_path: Path) -> None:
    """A log cut to part of what trial.json counted (a torn copy, a truncation after the
    trial ended) is damage too, not a valid-looking trial with fewer jobs; events added
    after the trial (a collector's late report, cleanup's stamps) only add, so the check
    is a floor."""
    run = _copy(jobflow_run, tmp_path)
    trial = run / "trials" / "p00-t00"
    counted = json.loads((trial / "trial.json").read_text())["events"]
    events = read_trial_log(trial)
    assert events.height >= counted > 4
    (trial / "events.arrows").unlink()
    with ArrowEventLog(trial / "events.arrows") as log:  # all but the last two events
        log.write_frame(events.head(counted - 2))
    _refused(run, f"event log holds only {counted - 2} events (trial.json counted {counted}")
    with ArrowEventLog(trial / "events.arrows") as log:  # a later writer's segment adds
        log.write_frame(events.tail(events.height - counted + 2))
    _analyses(run)


def test_jobflow_run_with_a_trial_folder_gone(jobflow_run: Path, tmp_path: Path) -> None:
    run = _copy(jobflow_run, tmp_path)
    shutil.rmtree(run / "trials" / "p01-t00")
    _refused(run, "2 finished trial(s) but only 1 trial folder(s)")


def test_io_run_with_a_raw_fio_output_or_its_rows_gone(io_run: Path, tmp_path: Path) -> None:
    run = _copy(io_run, tmp_path)
    _analyses(run)
    recorded = json.loads((run / "experiment.json").read_text())["raw_files"]
    raw = sorted(n for n in recorded if n.startswith("raw/") and n.endswith(".json"))
    assert len(raw) == 4 and recorded["rows.jsonl"] > 0, recorded
    (run / raw[1]).unlink()
    _refused(run, raw[1], ("analyze", "report"))
    shutil.copy(io_run / raw[1], run / raw[1])  # restored: what follows is the rows alone
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
