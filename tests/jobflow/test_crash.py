"""kill -9 in the middle of a trial: what was flushed is there, analyze and cleanup work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import polars as pl
import psutil

from conftest import BIN, cli_env
from gridbench.jobflow.backends.reference import GRID_TMP_PREFIX
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.store.spawned import sweep_orphaned

SPEC = """\
name: crash
backend: {type: reference, options: {preset: batched}}
job: {runtime: 60s}
load: {model: open, rate: 10/s}
trial: {duration: 60s}
timeouts: {status_interval: 0.2s}
"""


def _wait_for(pred, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_kill_9_then_analyze_and_cleanup(tmp_path: Path) -> None:
    spec = tmp_path / "crash.yaml"
    spec.write_text(SPEC)
    results = tmp_path / "results"
    env = cli_env(results)
    env["TMPDIR"] = str(tmp_path)  # the embedded grid's folder (its stderr) where we find it
    proc = subprocess.Popen(
        [str(BIN), "run", str(spec), "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        exp_file = _wait_for(lambda: next(results.glob("*/experiment.json"), None), 30, "run dir")
        run = exp_file.parent
        events = run / "trials" / "p00-t00" / "events.arrows"  # the default format
        _wait_for(lambda: json.loads(exp_file.read_text()).get("backend_runtime"), 30, "grid")
        acked = pl.col("stage") == "submit_ack"
        _wait_for(lambda: events.exists() and read_trial_log(events.parent).filter(acked).height
                  >= 20, 30, "20 acknowledged jobs")  # fmt: skip
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    runtime = json.loads(exp_file.read_text())["backend_runtime"]
    grid_url, grid_pid = runtime["options"]["url"], runtime["pid"]
    assert psutil.pid_exists(grid_pid), "the embedded grid should outlive the killed client"
    # held open: cleanup removes the folder, and a failure should show the grid's side
    grid_dir = next(tmp_path.glob(f"gridbench-grid-{proc.pid}-*"))
    grid_err = (grid_dir / "grid.stderr").open("rb")
    # another run's cleanup sweeps the temporary folders of killed controllers: the one
    # of this grid, which outlives its controller, is kept while the grid runs (it was
    # taken once, and the grid answered 500 to the cancel below)
    assert sweep_orphaned(GRID_TMP_PREFIX, tmp_path) == []
    assert (grid_dir / "reports").is_dir()
    try:
        ev = read_trial_log(events.parent)
        acked = ev.filter(pl.col("stage") == "submit_ack")
        ids = acked["attrs"].str.json_path_match("$.backend_id").to_list()
        assert len(ids) >= 20
        # every acknowledged job in the log exists on the grid: nothing flushed was invented
        states = httpx.post(f"{grid_url}/jobs/status", json={"ids": ids}).json()["jobs"]
        assert set(states) == set(ids)
        assert all(s["state"] in ("queued", "running") for s in states.values())
        # at most the last flush batch (0.1 s at 10/s, plus the call in progress) is missing
        on_grid = httpx.get(f"{grid_url}/queue").json()["total"]
        assert 0 <= on_grid - len(ids) <= 5

        a = subprocess.run(
            [str(BIN), "analyze", str(run), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert a.returncode in (0, 1), a.stderr
        metrics = json.loads(a.stdout)
        trial = metrics["points"][0]["trials"][0]
        assert trial["jobs"]["submitted"] >= len(ids)

        c = subprocess.run(
            [str(BIN), "cleanup", str(run), "--yes"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert c.returncode == 0, c.stderr + grid_err.read()[-3000:].decode(errors="replace")
        assert f"cancelled {len(ids)} jobs" in c.stdout
        _wait_for(
            lambda: (
                not psutil.pid_exists(grid_pid)
                or psutil.Process(grid_pid).status() == psutil.STATUS_ZOMBIE
            ),
            15,
            "grid stop",
        )
        ev2 = read_trial_log(events.parent)
        assert ev2.filter(pl.col("stage") == "cancelled").height == len(ids)
        assert json.loads(exp_file.read_text())["status"] == "crashed"
        again = subprocess.run(
            [str(BIN), "cleanup", str(run), "--dry-run"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "0 outstanding jobs" in again.stdout
    finally:
        grid_err.close()
        if psutil.pid_exists(grid_pid):
            os.kill(grid_pid, signal.SIGKILL)


def test_kill_9_local_jobs_are_stopped_by_cleanup(tmp_path: Path) -> None:
    spec = tmp_path / "local.yaml"
    spec.write_text(
        "name: crash-local\nbackend: {type: local, options: {slots: 3}}\n"
        "job: {command: [/bin/sleep, '57.5']}\nload: {model: open, rate: 10/s}\n"
        "trial: {duration: 30s}\ntimeouts: {status_interval: 0.2s}\n"
    )
    results = tmp_path / "results"
    env = cli_env(results)
    proc = subprocess.Popen([str(BIN), "run", str(spec)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        events = _wait_for(lambda: next(results.glob("*/trials/p00-t00/events.arrows"), None), 30,
                           "events")  # fmt: skip
        started = pl.col("stage") == "local_start"
        _wait_for(lambda: read_trial_log(events.parent).filter(started).height >= 3, 30,
                  "three running jobs")  # fmt: skip
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    starts = read_trial_log(events.parent).filter(pl.col("stage") == "local_start")
    pids = [int(p) for p in starts["attrs"].str.json_path_match("$.pid").to_list()]
    assert all(psutil.pid_exists(p) for p in pids), "jobs run in their own session"
    run = events.parent.parent.parent
    try:
        c = subprocess.run([str(BIN), "cleanup", str(run), "--yes"], env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        assert c.returncode == 0, c.stderr

        def all_gone() -> bool:
            alive = [p for p in pids if psutil.pid_exists(p)]
            return all(psutil.Process(p).status() == psutil.STATUS_ZOMBIE for p in alive)

        _wait_for(all_gone, 15, "jobs stopped")
    finally:
        for p in pids:
            if psutil.pid_exists(p):
                os.kill(p, signal.SIGKILL)


def test_cleanup_refuses_a_live_run(tmp_path: Path) -> None:
    spec = tmp_path / "live.yaml"
    spec.write_text(SPEC.replace("name: crash", "name: live"))
    results = tmp_path / "results"
    env = cli_env(results)
    proc = subprocess.Popen([str(BIN), "run", str(spec), "--yes"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        exp_file = _wait_for(lambda: next(results.glob("*/experiment.json"), None), 30, "run")
        _wait_for(lambda: json.loads(exp_file.read_text()).get("runner"), 30, "runner record")
        c = subprocess.run([str(BIN), "cleanup", str(exp_file.parent), "--yes"], env=env,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert c.returncode == 2 and "still in progress" in c.stderr and "--force" in c.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 130
