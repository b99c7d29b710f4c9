"""The psij backend with PSI/J's slurm executor against the live test cluster.

PSI/J runs sbatch, squeue and scancel with the process environment, so the cluster's
SLURM_CONF and MUNGE_SOCKET are set in os.environ for each test (monkeypatch restores them).

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
this executor has (sbatch's refusal).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend_run import failures, run_with, trial
from gridbench.jobflow.backends.psij.backend import PsijBackend
from psij_run import psij_backend
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
