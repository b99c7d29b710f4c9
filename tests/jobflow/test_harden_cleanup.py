"""Cleanup acts only on what gridbench started, and asks first (issue 15, item 1).

Run folders here are planted by hand, as an attacker with write access to the store
would plant them; cleanup runs as a subprocess (the real CLI).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import BIN, cli_env
from gridbench.jobflow.events.log import EVENTS_FILE, EventLog, Origin
from gridbench.jobflow.run.agent_processes import AGENT_ENV
from gridbench.store.spawned import RUN_ENV


def _plant(results: Path, folder: str, created: str) -> Path:
    run = results / folder
    (run / "trials").mkdir(parents=True)
    (run / "experiment.json").write_text(
        json.dumps({"id": folder, "name": folder, "status": "done", "created": created})
    )
    return run


def _gb(results: Path, *args: str, stdin: str | None = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), input=stdin, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_latest_is_not_taken_from_the_created_field(tmp_path: Path) -> None:
    results = tmp_path / "results"
    # planted first, dated into the future by its file and by its name: neither is believed
    # beyond when the folder appeared
    _plant(results, "29991231T000000Z-planted", "2999-12-31T00:00:00+00:00")
    _plant(results, "20250101T000000Z-older", "2999-01-01T00:00:00+00:00")
    time.sleep(0.05)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + 2))
    _plant(results, f"{stamp}-real", "2020-01-01T00:00:00+00:00")
    p = _gb(results, "show", "latest")
    assert p.returncode == 0, p.stderr
    assert f'"id": "{stamp}-real"' in p.stdout


LOCAL_SPEC = (
    "name: planted\nbackend: {type: local}\njob: {command: [/bin/sleep, '1']}\n"
    "load: {model: open, rate: 1/s}\ntrial: {duration: 1s}\n"
)


def _command_spec(tmp: Path) -> str:
    return f"""
name: planted
backend:
  type: command
  options:
    init: [/usr/bin/touch, "{tmp}/INIT"]
    submit: {{argv: [/bin/echo, "{{command}}"], pattern: '(?P<id>.+)'}}
    status: {{argv: [/bin/echo, "{{ids}}"], pattern: '^(?P<id>\\S+) (?P<state>\\S+)$'}}
    cancel: {{argv: [/usr/bin/touch, "{tmp}/CANCEL-{{ids}}"], ids_join: ","}}
job: {{command: [/bin/true]}}
load: {{model: open, rate: 1/s}}
trial: {{duration: 1s}}
"""


def _crashed_run(
    results: Path, spec: str, jobs: dict[str, dict[str, Any]], runtime: dict[str, Any]
) -> Path:
    """A run folder as a killed run leaves it: jobs acknowledged, never seen to end.
    ``jobs`` maps a backend id to the attrs of its ``local_start`` event ({} for none)."""
    run = _plant(results, PLANTED, "2026-01-01T00:00:00+00:00")
    exp = json.loads((run / "experiment.json").read_text())
    (run / "experiment.json").write_text(
        json.dumps({**exp, "status": "running", "backend_runtime": runtime})
    )
    (run / "spec.yaml").write_text(spec)
    trial = run / "trials" / "p00-t00"
    trial.mkdir()
    with EventLog(trial / EVENTS_FILE) as log:
        for i, (bid, start) in enumerate(jobs.items()):
            log.append(f"j{i}", "submit", 1_000 + i)
            log.append(f"j{i}", "submit_ack", 2_000 + i, attrs={"backend_id": bid})
            if start:
                log.append(f"j{i}", "local_start", 3_000 + i, Origin(source="local"), attrs=start)
    return run


@pytest.fixture
def bystander() -> Iterator[psutil.Process]:
    """A process gridbench never started, leading its own session as a local job does."""
    proc = subprocess.Popen(["/bin/sleep", "60"], start_new_session=True)
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()


PLANTED = "20260101T000000Z-planted"


def _job_of(run: Path) -> subprocess.Popen[bytes]:
    """A local job as gridbench starts it for ``run``: its own session, and the run folder
    in its environment (inherited from the controller, which marks it)."""
    env = {**os.environ, RUN_ENV: str(run.resolve())}
    return subprocess.Popen(["/bin/sleep", "60"], start_new_session=True, env=env)


def _alive(p: psutil.Process) -> bool:
    return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)


def test_without_yes_and_no_terminal_cleanup_shows_the_plan_and_refuses(tmp_path: Path) -> None:
    job = _job_of(tmp_path / "r" / PLANTED)
    try:
        proc = psutil.Process(job.pid)
        started = {"pid": job.pid, "create_time": proc.create_time()}
        run = _crashed_run(tmp_path / "r", LOCAL_SPEC, {"local-1-1": started}, {})
        p = _gb(tmp_path / "r", "cleanup", str(run))  # stdin is a pipe, not a terminal
        assert p.returncode == 2, p.stdout + p.stderr
        assert "needs confirmation" in p.stderr and "--yes" in p.stderr
        assert f"pid {job.pid}: would stop" in p.stdout  # the plan came first
        assert _alive(proc)
        assert json.loads((run / "experiment.json").read_text())["status"] == "running"
    finally:
        job.kill()
        job.wait()


def test_a_planted_pid_with_the_real_start_time_is_left_alone(
    tmp_path: Path, bystander: psutil.Process
) -> None:
    """Anyone can read a process's start time in /proc: a run folder naming it, with the
    right start time and a helper's name, still does not make cleanup signal it."""
    started = {"pid": bystander.pid, "create_time": bystander.create_time()}
    helper = {**started, "cmdline_marker": "sleep"}
    run = _crashed_run(tmp_path / "r", LOCAL_SPEC, {"local-1-1": started}, helper)
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("not provably this run's") >= 2, p.stdout
    assert "stopped leftover processes" not in p.stdout
    assert _alive(bystander)


def test_a_pid_without_its_recorded_start_time_is_left_alone(
    tmp_path: Path, bystander: psutil.Process
) -> None:
    planted = {
        "local-1-1": {"pid": bystander.pid},  # no start time at all
        "local-1-2": {"pid": bystander.pid, "create_time": bystander.create_time() - 5},
        "local-1-3": {"pid": "1; rm -rf /", "create_time": "x"},
    }
    run = _crashed_run(tmp_path / "r", LOCAL_SPEC, planted, {"pid": bystander.pid})
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    acted = p.stdout.split("dry run: nothing was cancelled")[1]  # after the plan
    assert acted.count("not ours (no matching start time), left alone") == 4, p.stdout
    assert "stopped leftover processes" not in p.stdout
    assert _alive(bystander)


def test_a_verified_pid_is_stopped_and_listed(tmp_path: Path) -> None:
    # a local job as gridbench records it: pid and start time, read at spawn
    job = _job_of(tmp_path / "r" / PLANTED)
    try:
        started = {"pid": job.pid, "create_time": psutil.Process(job.pid).create_time()}
        run = _crashed_run(tmp_path / "r", LOCAL_SPEC, {"local-1-1": started}, {})
        p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"stopped leftover processes [{job.pid}]" in p.stdout  # not overwritten
        assert job.wait(timeout=10) == -signal.SIGTERM
    finally:
        job.kill()
        job.wait()


def test_cleanup_never_runs_init_nor_a_cancel_template_not_recorded_at_run_time(
    tmp_path: Path,
) -> None:
    run = _crashed_run(tmp_path / "r", _command_spec(tmp_path), {"77": {}}, {})
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert p.returncode == 3, p.stdout + p.stderr
    assert "may be planted, and is not run" in p.stderr
    assert not (tmp_path / "INIT").exists()
    assert not list(tmp_path.glob("CANCEL-*"))


def test_a_recorded_cancel_template_runs_and_init_still_does_not(tmp_path: Path) -> None:
    spec = _command_spec(tmp_path)
    cancel = ["/usr/bin/touch", f"{tmp_path}/CANCEL-{{ids}}"]
    runtime = {"command": {"templates": {"cancel": cancel}}}
    run = _crashed_run(tmp_path / "r", spec, {"77": {}}, runtime)
    dry = _gb(tmp_path / "r", "cleanup", str(run), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "cancel template (recorded at run time): /usr/bin/touch" in dry.stdout
    assert "CANCEL-{ids}" in dry.stdout and "cancel 1 jobs by id: 77" in dry.stdout
    assert not list(tmp_path.glob("CANCEL-*"))
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "CANCEL-77").exists()
    assert not (tmp_path / "INIT").exists()


def test_at_a_terminal_cleanup_asks_and_a_no_does_nothing(
    tmp_path: Path, bystander: psutil.Process
) -> None:
    started = {"pid": bystander.pid, "create_time": bystander.create_time()}
    run = _crashed_run(tmp_path / "r", LOCAL_SPEC, {"local-1-1": started}, {})
    main, tty = os.openpty()  # stdin is a terminal: cleanup asks
    try:
        os.write(main, b"n\n")
        p = subprocess.run([str(BIN), "cleanup", str(run)], env=cli_env(tmp_path / "r"),
                           stdin=tty, capture_output=True, text=True, timeout=60)  # fmt: skip
    finally:
        os.close(main)
        os.close(tty)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Run and signal what is listed above? [y/N]" in p.stdout
    assert "not confirmed: nothing was done" in p.stdout
    assert _alive(bystander)


def _slurm_spec(options: str) -> str:
    return (
        f"name: planted\nbackend: {{type: slurm, options: {options}}}\n"
        "job: {command: [/bin/true]}\nload: {model: open, rate: 1/s}\ntrial: {duration: 1s}\n"
    )


def test_a_run_folder_cannot_choose_the_programs_cleanup_runs(tmp_path: Path) -> None:
    """A planted run of another backend than command, whose options name a folder of
    client programs: cleanup --yes runs none of them and says which it refused."""
    evil = tmp_path / "evil-bin"
    evil.mkdir()
    for prog in ("scancel", "scontrol", "squeue", "sbatch", "sacct"):
        script = evil / prog
        script.write_text(f"#!/bin/sh\ntouch {tmp_path}/RAN-{prog}\n")
        script.chmod(0o755)
    run = _crashed_run(tmp_path / "r", _slurm_spec(f"{{bin_dir: {evil}}}"), {"17": {}}, {})
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert "Traceback" not in p.stderr, p.stderr
    assert f"{evil}/scancel" in p.stdout + p.stderr and "may be planted" in p.stdout + p.stderr
    assert not list(tmp_path.glob("RAN-*")), "a planted client program ran"


def test_a_run_folder_cannot_hand_loader_variables_to_cleanup(tmp_path: Path) -> None:
    lib = tmp_path / "evil.so"
    spec = _slurm_spec(f"{{env: {{LD_PRELOAD: {lib}}}}}")
    run = _crashed_run(tmp_path / "r", spec, {"17": {}}, {})
    p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
    assert "Traceback" not in p.stderr, p.stderr
    assert "LD_PRELOAD" in p.stdout + p.stderr and "may be planted" in p.stdout + p.stderr
    assert "cancelled 1 jobs" not in p.stdout


def _worker_like(run: Path) -> subprocess.Popen[bytes]:
    """A process with the environment of a local agent's Dask worker of ``run`` (its run
    folder and agent name), left running by a controller that died and hung: a sleep, so
    that only cleanup ends it."""
    env = {**os.environ, RUN_ENV: str(run.resolve()), AGENT_ENV: "agent-0"}
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    return subprocess.Popen(sleep, start_new_session=True, env=env)


def test_a_stray_agent_worker_of_the_run_is_stopped_and_another_runs_left_alone(
    tmp_path: Path,
) -> None:
    """Issue 22 item 2: agents' workers are found by their environment (nothing recorded
    in the run folder chooses them), given time to end, stopped by pid, named in the plan."""
    run = _crashed_run(tmp_path / "r", LOCAL_SPEC, {}, {})
    ours, other = _worker_like(run), _worker_like(tmp_path / "other-run")
    try:
        dry = _gb(tmp_path / "r", "cleanup", str(run))
        assert f"agent agent-0's dask worker, pid {ours.pid}: would stop" in dry.stdout
        assert ours.poll() is None
        p = _gb(tmp_path / "r", "cleanup", str(run), "--yes")
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"stopped leftover processes [{ours.pid}]" in p.stdout, p.stdout
        assert "'gridbench collect RUN' and 'gridbench cleanup RUN' again" in p.stdout
        assert ours.wait(timeout=10) == -signal.SIGTERM
        assert other.poll() is None and str(other.pid) not in p.stdout
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()
