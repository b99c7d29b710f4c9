"""The psij backend with PSI/J's slurm executor against the live test cluster.

PSI/J runs sbatch, squeue and scancel with the process environment, so the cluster's
SLURM_CONF and MUNGE_SOCKET are set in os.environ for each test (monkeypatch restores them).
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest

from backend_run import failures, run_with, trial
from gridbench.jobflow.backends.psij.backend import PsijBackend
from gridbench.jobflow.events.model import Precision
from psij_run import acked_ids, assert_chain_ordered, psij_backend
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (the fixture slurm)

POLL_S = 0.5


@pytest.fixture(name="slurm_env")
def slurm_env_fixture(slurm: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    """The live cluster, reachable through os.environ for the duration of one test."""
    for key, value in slurm.env.items():
        monkeypatch.setenv(key, value)
    return slurm


def slurm_backend(tmp_path: Path, **options: object) -> PsijBackend:
    opts: dict[str, object] = {
        "executor": "slurm",
        "poll_interval_s": POLL_S,
        "work_directory": str(tmp_path / "psij"),
        "queue": "debug",
    }
    return psij_backend(**{**opts, **options})


def test_jobs_end_with_ordered_stamps(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    out = run_with(
        """
name: psij-slurm
backend: {type: psij}
job: {command: [sh, -c, "sleep 0.3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 6}
timeouts: {status_interval: 0.2s, drain: 30s}
""",
        tmp_path,
        slurm_backend(tmp_path),
    )
    assert out.status == "complete"
    ev, info = trial(out)
    assert failures(ev).height == 0
    assert_chain_ordered(ev, 6)
    server = ev.filter(pl.col("source") == "psij")
    assert set(server["precision_ns"]) == {int(POLL_S * Precision.S)}
    chain = {s["name"]: s["precision_ns"] for s in info["chain"]["stages"]}
    assert chain["psij_queued"] == chain["psij_end"] == int(POLL_S * Precision.S)
    # the jobs really went through Slurm, under their gridbench names, in the partition
    ids = acked_ids(ev)
    lines = slurm_env.run("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%j %P %T")
    rows = {tuple(x.split()) for x in lines.splitlines()}
    assert rows == {(job, "debug", "COMPLETED") for job in ev["job"].unique()}


def test_failing_command_is_job_failed(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    out = run_with(
        """
name: psij-slurm-fail
backend: {type: psij}
job: {command: [sh, -c, "exit 3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.2s, drain: 30s}
""",
        tmp_path,
        slurm_backend(tmp_path),
    )
    ev, _ = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["job_failed"] * 2
    ends = ev.filter(pl.col("stage") == "psij_end")["attrs"]
    assert set(ends.str.json_path_match("$.psij_state")) == {"FAILED"}
    assert set(ends.str.json_path_match("$.exit_code")) == {"3"}


def test_abort_cancels_outstanding_jobs(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    backend = slurm_backend(tmp_path)
    out = run_with(
        """
name: psij-slurm-abort
backend: {type: psij}
job: {command: [sleep, "120"]}
load: {model: open, rate: 50/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s}
""",
        tmp_path,
        backend,
        abort_when_acked=3,
    )
    assert out.status == "aborted"
    ev, _ = trial(out)
    ids = acked_ids(ev)
    cancelled = ev.filter(pl.col("stage") == "cancelled")
    assert len(ids) == 3 and cancelled.height == 3
    states: list[str] = []
    for _ in range(100):  # scancel is asynchronous
        states = slurm_env.run("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%T").split()
        if states == ["CANCELLED"] * 3:
            break
        time.sleep(0.1)
    assert states == ["CANCELLED"] * 3


def test_refused_submissions_keep_sbatch_message(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    out = run_with(
        """
name: psij-slurm-reject
backend: {type: psij}
job: {command: ["true"]}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.2s, drain: 5s}
""",
        tmp_path,
        slurm_backend(tmp_path, queue="nope"),
    )
    ev, _ = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["submit_rejected"] * 2
    assert set(f["message"]) == {
        "sbatch: error: invalid partition specified: nope; "
        "sbatch: error: Batch job submission failed: Invalid partition name specified"
    }
