"""Failures against the number of reserved nodes (issue 40; the seed's 000 §4.6.3): the
retry model's jobs run inside a real Slurm reservation of N nodes (``scontrol create
reservation nodecnt=N``) on a 4-node cluster, each job needing a whole node (8 tasks) for
4 s; the jobs beyond N wait, and as a second wave cannot end within the 7 s drain they are
cancelled and retried (Slurm starts a first wave up to 2 s after submission here, so the
drain leaves it room, and a second wave ends at 8 s at the earliest), so the first
attempt's failure rate is 1 - N/M and the time to success falls as N grows. Every
reservation is gone after the run, and one left by a killed run is deleted by
``gridbench cleanup``."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN
from gridbench.errors import SpecError
from gridbench.jobflow.spec import load_spec_text
from slurm_cluster import SlurmCluster, slurm4_fixture  # noqa: F401 (the fixture slurm4)

M = 4


def _spec(cluster: SlurmCluster, sweep: str = "[1, 2, 4]") -> str:
    return f"""
name: reserved
backend: {{type: slurm, options: {{conf: {cluster.conf}}}}}
job: {{command: [sleep, "4"], runtime: 4s, tasks: 8}}
load: {{model: retry, jobs: {M}, retries: 4, reserve_nodes: 1}}
sweep: {{reserve_nodes: {sweep}}}
trials: 1
timeouts: {{status_interval: 0.2s, drain: 7s}}
"""


def _gridbench(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GRIDBENCH_RESULTS=str(root / "results"), COLUMNS="200")
    p = subprocess.run(
        [str(BIN), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


def _reservations(cluster: SlurmCluster) -> str:
    return cluster.run("scontrol", "show", "reservation", check=False)


def test_failures_and_time_to_success_against_reserved_nodes(
    slurm4: SlurmCluster, tmp_path: Path
) -> None:
    (tmp_path / "spec.yaml").write_text(_spec(slurm4))
    p = _gridbench(["run", str(tmp_path / "spec.yaml")], tmp_path)
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-2000:]
    (run,) = list((tmp_path / "results").iterdir())
    m: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    by_n = {}
    for point in m["points"]:
        (t,) = point["trials"]
        info = json.loads((run / "trials" / t["trial_id"] / "trial.json").read_text())
        n = info["reservation"]["nodes"]
        by_n[n] = t["model"]
    assert sorted(by_n) == [1, 2, 4]
    for n, model in by_n.items():
        # N of the M whole-node jobs run at once: the rest wait, are cancelled, retried
        assert model["first_failure_rate"] == pytest.approx(1 - n / M), (n, model)
        assert model["attempts_used"] == M // n and model["never_succeeded"] == 0, (n, model)
        assert model["time_to_all_success_s"] is not None
    # more nodes reserved: sooner all succeeded (each extra attempt waits out the drain)
    t1, t2, t4 = (by_n[n]["time_to_all_success_s"] for n in (1, 2, 4))
    assert t1 > t2 > t4, (t1, t2, t4)
    assert by_n[1]["time_to_success_s"] > by_n[4]["time_to_success_s"]
    # the failure rate against N is fitted over the sweep, and the table shows it
    assert "reserve_nodes" in json.dumps(m["growth"]), m["growth"]
    assert "time to success s" in p.stdout or "retry" in p.stdout
    # every reservation was deleted at its trial's end
    assert "gridbench-" not in _reservations(slurm4), _reservations(slurm4)


def test_a_reservation_left_behind_is_deleted_by_cleanup(
    slurm4: SlurmCluster, tmp_path: Path
) -> None:
    (tmp_path / "spec.yaml").write_text(_spec(slurm4, "[2]"))
    env = dict(os.environ, GRIDBENCH_RESULTS=str(tmp_path / "results"))
    proc = subprocess.Popen(
        [str(BIN), "run", str(tmp_path / "spec.yaml")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # kill -9 once the reservation exists
        deadline = time.monotonic() + 60
        while "gridbench-" not in _reservations(slurm4):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    assert "gridbench-" in _reservations(slurm4)
    (run,) = list((tmp_path / "results").iterdir())
    p = _gridbench(["cleanup", str(run), "--yes"], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    # deleted: Slurm refuses while a job runs in it, so the killed trial's jobs went too
    assert "gridbench-" not in _reservations(slurm4), _reservations(slurm4)
    assert "deleting gridbench-" in p.stdout, p.stdout


def test_reserve_nodes_needs_a_backend_that_reserves(tmp_path: Path) -> None:
    text = (
        "name: r\nbackend: {type: reference}\njob: {runtime: 0.1s}\n"
        "load: {model: retry, jobs: 2, reserve_nodes: 1}\n"
    )
    p = _gridbench_check(text, tmp_path)
    assert p.returncode == 2 and "cannot reserve nodes" in p.stderr, p.stdout + p.stderr
    with pytest.raises(SpecError, match="reserve_nodes"):
        load_spec_text(text.replace("reserve_nodes: 1", "reserve_nodes: 0"), "s.yaml")


def _gridbench_check(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "spec.yaml").write_text(text)
    return _gridbench(["run", str(tmp_path / "spec.yaml")], tmp_path)
