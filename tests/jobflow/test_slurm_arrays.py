"""Bulk submission (``load.bulk``) as Slurm job arrays, through sbatch and slurmrestd,
against the live test cluster; and what bulk does where it cannot apply."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import polars as pl
import pytest

from backend_run import backend_ids, failures, run_with, submit_users, trial
from gridbench.errors import SpecError
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.backends.slurm.parse import parse_squeue_json
from gridbench.jobflow.events.model import Precision
from gridbench.jobflow.spec import load_spec_text
from slurm_cluster import SlurmCluster, rest_options, slurm_fixture  # noqa: F401 (fixture)
from unix_users import accounts_fixture  # noqa: F401 (fixture)

CHAIN = ["submit", "slurm_submit", "slurm_eligible", "slurm_start", "slurm_end", "client_done"]
BATCH = """
name: slurm-arrays
backend: {type: slurm}
job: {command: [sh, -c, "sleep 0.2"]}
load: {model: batch, jobs: 12, submitters: 2, bulk: 5}
timeouts: {status_interval: 0.2s, drain: 60s}
"""


def _check_chain(ev: pl.DataFrame, n: int) -> pl.DataFrame:
    assert failures(ev).height == 0
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == n
    assert wide.select(CHAIN).null_count().sum_horizontal().item() == 0
    for a, b in itertools.pairwise(CHAIN):
        assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    return wide


def test_sbatch_arrays_track_every_task(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = create_backend("slurm", {"conf": str(slurm.conf)})
    assert isinstance(backend, SlurmBackend)
    out = run_with(BATCH, tmp_path, backend)
    assert out.status == "complete"
    ev, info = trial(out)
    _check_chain(ev, 12)
    # 12 jobs in arrays of 5, 5 and 2: three sbatch calls
    assert backend.calls["sbatch"] == 3
    ids = backend_ids(ev)
    arrays = sorted({i.split("_")[0] for i in ids})
    assert len(arrays) == 3
    assert sorted(int(i.split("_")[1]) for i in ids) == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4]
    # every task's submit, start and end come from the controller log at 1 ms
    server = ev.filter(pl.col("source") == "slurmctld")
    assert server.height == 4 * 12
    prec = dict(server.group_by("stage").agg(pl.col("precision_ns").max()).iter_rows())
    assert prec["slurm_start"] == prec["slurm_end"] == Precision.MS
    # the tasks of one array share its one submit line
    sub = ev.filter(pl.col("stage") == "slurm_submit").join(
        ev.filter(pl.col("stage") == "submit_ack").select(
            "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("bid")
        ),
        on="job",
    )
    per_array = sub.group_by(pl.col("bid").str.split("_").list.first()).agg(
        pl.col("t_ns").n_unique()
    )
    assert per_array["t_ns"].to_list() == [1, 1, 1]
    # Slurm agrees: the arrays ran every task
    out_ = slurm.run("squeue", "-h", "-t", "all", "-o", "%F %K %T", "-j", ",".join(arrays))
    states = [line.split() for line in out_.splitlines() if line.strip()]
    assert len(states) == 12 and {s[2] for s in states} == {"COMPLETED"}
    assert info["status_calls"] == info["status_sweeps"]


def test_rest_arrays(slurm: SlurmCluster, tmp_path: Path) -> None:
    token = tmp_path / "jwt"
    token.write_text(slurm.token())
    backend = create_backend("slurm", rest_options(slurm, token))
    assert isinstance(backend, SlurmBackend)
    out = run_with(
        BATCH.replace("jobs: 12", "jobs: 6").replace("bulk: 5", "bulk: 3"), tmp_path / "r", backend
    )
    ev, _ = trial(out)
    _check_chain(ev, 6)
    assert backend.calls["rest submit"] == 2 and backend.calls["sbatch"] == 0


def test_bulk_needs_a_backend_that_can(tmp_path: Path) -> None:
    backend = create_backend("local", {"slots": 2})
    out = run_with(BATCH.replace("type: slurm", "type: local"), tmp_path, backend)  # type: ignore[arg-type]
    assert out.status != "complete"
    _, info = trial(out)
    assert "cannot submit in bulk" in str(info.get("error"))
    assert "load.bulk" in str(info.get("error"))


def test_bulk_only_with_the_batch_model() -> None:
    with pytest.raises(SpecError) as err:
        load_spec_text(
            "name: x\nbackend: {type: local}\nload: {model: open, rate: 1/s, bulk: 10}\n"
            "trial: {jobs: 10}\n"
        )
    assert "load.bulk" in str(err.value) and "model: batch" in str(err.value)


def test_interleaved_users_share_arrays_and_fail_alone(
    slurm: SlurmCluster, accounts: list[str], tmp_path: Path
) -> None:
    alice, _ = accounts
    backend = create_backend("slurm", {"conf": str(slurm.conf)})
    assert isinstance(backend, SlurmBackend)
    out = run_with(
        f"""
name: slurm-array-users
backend: {{type: slurm}}
job: {{command: ["true"]}}
users: [{{name: alice, account: {alice}}}, {{name: ghost, account: gbtest-nobody-here}}]
load: {{model: batch, jobs: 6, submitters: 1, bulk: 6}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
""",
        tmp_path,
        backend,
    )
    ev, _ = trial(out)
    f = failures(ev)
    users = submit_users(ev)
    # ghost's group failed alone; alice's three interleaved jobs went out as one array
    assert sorted(f.join(users, on="job")["user"]) == ["ghost"] * 3
    assert set(f["kind"]) == {"submit_auth"}
    assert backend.calls["sbatch"] == 2  # one per group: ghost's could not start
    acks = backend_ids(ev)
    assert len({a.split("_")[0] for a in acks}) == 1 and len(acks) == 3
    done = ev.filter(pl.col("stage") == "client_done").join(users, on="job")
    assert sorted(done["user"]) == ["alice"] * 3


def test_abort_cancels_array_tasks(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = create_backend("slurm", {"conf": str(slurm.conf)})
    assert isinstance(backend, SlurmBackend)
    out = run_with(
        BATCH.replace('"sleep 0.2"', '"sleep 120"')
        .replace("jobs: 12", "jobs: 4")
        .replace("bulk: 5", "bulk: 4"),
        tmp_path,
        backend,
        abort_when_acked=4,
    )
    assert out.status == "aborted"
    ev, _ = trial(out)
    ids = backend_ids(ev)
    assert len(ids) == 4 and backend.calls["scancel"] == 1
    assert ev.filter(pl.col("stage") == "cancelled").height == 4
    # Slurm agrees (tasks still pending share the array's one record, so read it as
    # gridbench does)
    (array,) = {i.split("_")[0] for i in ids}
    states: list[str] = []
    for _ in range(100):
        jobs = parse_squeue_json(slurm.run("squeue", "--json"), arrays={array})
        whole = jobs.get(f"{array}_*")
        states = [jobs[i].state if i in jobs else whole.state if whole else "?" for i in ids]
        if states == ["CANCELLED"] * 4:
            break
        time.sleep(0.1)
    assert states == ["CANCELLED"] * 4


def test_text_status_path_tracks_jobs_and_arrays(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = create_backend("slurm", {"conf": str(slurm.conf), "squeue_format": "text"})
    assert isinstance(backend, SlurmBackend)
    out = run_with(BATCH.replace("bulk: 5", "bulk: 4"), tmp_path, backend)
    assert out.status == "complete"
    ev, info = trial(out)
    _check_chain(ev, 12)
    assert backend.calls["squeue -O"] == info["status_calls"] == info["status_sweeps"]
    assert backend.calls["squeue --json"] == 0
