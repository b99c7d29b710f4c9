"""The host's sync state (run/host_clock.py) from a real chronyc: a private chronyd that
answers, a daemon that is not there, and no chronyc at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clock_fixtures import PrivateChronyd
from gridbench.jobflow.analysis.clocks import sync_text
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.run.host_clock import TRACKING_FIELDS, chrony_tracking, parse_tracking
from gridbench.jobflow.spec import load_spec_text, make_plan


@pytest.fixture(scope="module")
def chronyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateChronyd]:
    d = PrivateChronyd(tmp_path_factory.mktemp("chrony"))
    d.start()
    yield d
    d.stop()


def test_tracking_of_a_running_chronyd(chronyd: PrivateChronyd) -> None:
    got = chrony_tracking(["-h", str(chronyd.socket)])
    assert got["available"] is True, got
    assert set(got) >= {name for name, _ in TRACKING_FIELDS}
    # `local stratum 8` with no sources: chronyd serves its own clock at stratum 8
    assert got["stratum"] == 8
    assert got["reference_id"] == "7F7F0101"  # 127.127.1.1: the local reference
    assert got["leap_status"] == "Normal"
    assert got["synchronised"] is True
    assert isinstance(got["system_time_s"], float)
    assert sync_text(got).startswith("synchronised, stratum 8, offset ")


def test_a_daemon_that_does_not_answer_is_recorded_as_unavailable(tmp_path: Path) -> None:
    got = chrony_tracking(["-h", str(tmp_path / "no-such.sock")], timeout_s=10)
    assert got["available"] is False
    assert got["reason"].startswith("chronyc failed (exit 1): ")
    assert "daemon" in got["reason"]
    assert sync_text(got) == f"unavailable: {got['reason']}"


def test_no_chronyc_is_recorded_as_unavailable() -> None:
    got = chrony_tracking(chronyc="gridbench-no-such-chronyc")
    assert got == {
        "available": False,
        "source": "chronyc",
        "reason": "gridbench-no-such-chronyc is not installed (Debian package chrony)",
    }


def test_output_that_is_not_tracking_csv_names_what_is_wrong() -> None:
    assert "printed 2 fields, expected 14" in parse_tracking("a,b\n")["reason"]
    line = "7F7F0101,,x,1.0,0,0,0,0,0,0,0,0,0,Normal"
    assert parse_tracking(line)["reason"] == "chronyc -c tracking: stratum is not a int: 'x'"
    assert parse_tracking("")["reason"] == "chronyc printed nothing"
    unsync = "00000000,,0,0.0,0,0,0,0,0,0,1,1,0,Not synchronised"
    assert parse_tracking(unsync)["synchronised"] is False


def test_a_trial_records_the_controllers_sync_state(tmp_path: Path) -> None:
    spec, data = load_spec_text(
        "name: clock-sync\nbackend: {type: noop}\nload: {rate: 20/s}\ntrial: {jobs: 3}\n"
        "timeouts: {status_interval: 0.05s}\n"
    )
    out = asyncio.run(ExperimentRunner(make_plan(spec, data), data, tmp_path).execute())
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    # what chronyc says on this host right now, recorded as it is (no daemon: the reason)
    expected = chrony_tracking()
    got = info["clock_sync"]
    assert got["available"] == expected["available"]
    if got["available"]:
        assert got["stratum"] == expected["stratum"]
    else:
        assert got["reason"] == expected["reason"]
    m = analyze_run(out.run.path)
    clocks = m["points"][0]["trials"][0]["clocks"]
    assert clocks["controller_sync"] == sync_text(got)
    assert clocks["agents"]["agent-0"]["offset_ns"] == 0
