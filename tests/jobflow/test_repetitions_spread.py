"""Repetitions spread over time (issue 14 item 6, METHODS 1.10): ``schedule`` interleaves
points and trials, pauses between them and spreads their starts over a window; the
report shows each trial's figure against its start time with the background queue."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from gridbench.errors import SpecError
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.report.rows import all_tables
from gridbench.jobflow.spec import load_spec_text, make_plan

SPEC = """\
name: spread
backend: {type: local, options: {slots: 2}}
job: {command: [/bin/true]}
load: {model: probe, operation: submit, count: 2, gap: 0.05s}
sweep: {count: [2, 3]}
trials: 3
schedule: {pause: 0.4s, window: 4s}
timeouts: {status_interval: 0.05s, drain: 20s}
"""

NS = 1_000_000_000


def _trials(run: Path) -> list[dict[str, Any]]:
    """trial.json of every trial, in the order they started (recorded stamps)."""
    infos = [json.loads(p.read_text()) for p in run.glob("trials/*/trial.json")]
    return sorted(infos, key=lambda d: d["started_ns"])


def _run(text: str, root: Path) -> Path:
    spec, data = load_spec_text(text)
    backend = create_backend(spec.backend.type, spec.backend.options)
    runner = ExperimentRunner(make_plan(spec, data), data, root, backend=backend)
    out = asyncio.run(runner.execute())
    assert out.status == "complete", out.error
    return out.run.path


@pytest.fixture(scope="module", name="spread_run")
def spread_run_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(SPEC, tmp_path_factory.mktemp("spread"))


def test_trials_interleave_round_robin(spread_run: Path) -> None:
    order = [t["trial_id"] for t in _trials(spread_run)]
    assert order == ["p00-t00", "p01-t00", "p00-t01", "p01-t01", "p00-t02", "p01-t02"]


def test_pause_and_window_respected_in_recorded_stamps(spread_run: Path) -> None:
    ts = _trials(spread_run)
    first = ts[0]["started_ns"]
    slot = 4.0 / len(ts)
    for k, (prev, cur) in enumerate(itertools.pairwise(ts), start=1):
        assert cur["started_ns"] - prev["ended_ns"] >= 0.4 * NS  # the pause
        assert cur["started_ns"] - first >= k * slot * NS - 1  # its window slot (1 ns: rounding)


def test_report_shows_queue_and_figure_against_start(spread_run: Path) -> None:
    m = analyze_run(spread_run, write=True)
    tod = m["time_of_day"]
    assert tod["quantity"] == "model.single.mean" and tod["label"] == "submission time"
    rows = all_tables(m)["time_of_day"]
    assert [r["trial_id"] for r in rows] == [t["trial_id"] for t in _trials(spread_run)]
    # the local backend reports its queue: recorded at each trial's start and end
    assert all(isinstance(r["queue_start"], float) for r in rows)
    assert all(isinstance(r["queue_end"], float) for r in rows)
    assert all(r["figure"] is not None and r["figure"] > 0 for r in rows)
    assert all(r["start_utc"].endswith("Z") and 0 <= r["hour"] <= 23 for r in rows)
    hours = {int(r["hour"]) for r in rows}
    # the by-hour table appears only when the trials span more than one hour
    assert (len(all_tables(m)["time_of_day_hours"]) > 1) == (len(hours) > 1)


def test_plan_shows_order_and_estimated_end(tmp_path: Path) -> None:
    spec, data = load_spec_text(SPEC)
    plan = make_plan(spec, data)
    d = plan.to_dict()["schedule"]
    assert [o["trial"] for o in d["order"]][:3] == ["p00-t00", "p01-t00", "p00-t01"]
    starts = [o["estimated_start_s"] for o in d["order"]]
    assert starts == sorted(starts) and starts[-1] >= 5 * 4.0 / 6
    assert plan.estimated_seconds > starts[-1]
    f = tmp_path / "s.yaml"
    f.write_text(SPEC)
    out = subprocess.run(
        [str(BIN), "plan", str(f)], env=cli_env(tmp_path), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "estimated end:" in out.stdout and "interleaved" in out.stdout
    assert out.stdout.index("p01-t00") < out.stdout.index("p00-t01")


def test_point_by_point_without_interleave() -> None:
    spec, data = load_spec_text(SPEC.replace("{pause", "{interleave: false, pause"))
    ids = [t.trial_id for t in make_plan(spec, data).trials]
    assert ids[:3] == ["p00-t00", "p00-t01", "p00-t02"]


@pytest.mark.parametrize(
    ("bad", "where"), [("pause: -1s", "schedule.pause"), ("window: 0s", "schedule.window")]
)
def test_bad_schedule_is_a_spec_error(bad: str, where: str) -> None:
    with pytest.raises(SpecError) as exc:
        load_spec_text(SPEC.replace("pause: 0.4s, window: 4s", bad))
    assert where in str(exc.value)


def test_kill_mid_window_leaves_analysable_trials(tmp_path: Path) -> None:
    spec = tmp_path / "long.yaml"
    spec.write_text(SPEC.replace("pause: 0.4s, window: 4s", "pause: 1s, window: 60s"))
    results = tmp_path / "results"
    env = cli_env(results)
    proc = subprocess.Popen(
        [str(BIN), "run", str(spec), "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        done: list[Path] = []
        while time.monotonic() < deadline and len(done) < 2:
            done = [
                p
                for p in results.glob("*/trials/*/trial.json")
                if json.loads(p.read_text() or "{}").get("ended_ns")
            ]
            time.sleep(0.1)
        assert len(done) >= 2, "two trials should end (slots of 10 s)"
        os.kill(proc.pid, signal.SIGKILL)  # in the window's wait for the third trial
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    run = next(results.glob("*/experiment.json")).parent
    a = subprocess.run(
        [str(BIN), "analyze", str(run), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert a.returncode in (0, 1), a.stderr
    m = json.loads(a.stdout)
    ids = sorted(t["trial_id"] for p in m["points"] for t in p["trials"])
    assert ids == ["p00-t00", "p01-t00"]
    assert len(m["time_of_day"]["trials"]) == 2
