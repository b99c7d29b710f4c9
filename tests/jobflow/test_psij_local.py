"""The psij backend with PSI/J's local executor, through the real runner."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import polars as pl
import psutil
import pytest

from backend_run import failures, run_with, trial
from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobRequest, JobState, SubmitError
from gridbench.jobflow.backends.psij.backend import map_state
from gridbench.jobflow.backends.psij.options import (
    PsijOptions,
    executor_class,
    import_psij,
    make_config,
)
from gridbench.jobflow.events.model import Precision
from psij_run import acked_ids, assert_chain_ordered, psij_backend


def test_jobs_end_with_ordered_stamps(tmp_path: Path) -> None:
    backend = psij_backend(executor="local")
    out = run_with(
        """
name: psij-local
backend: {type: psij}
job: {command: [sh, -c, "sleep 0.3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 8}
timeouts: {status_interval: 0.1s, drain: 20s}
""",
        tmp_path,
        backend,
    )
    assert out.status == "complete"
    ev, info = trial(out)
    assert failures(ev).height == 0
    wide = assert_chain_ordered(ev, 8)
    assert (wide["psij_end"] - wide["psij_active"] >= 300_000_000).all()  # the sleep
    server = ev.filter(pl.col("source") == "psij")
    assert set(server["precision_ns"]) == {100 * Precision.MS}  # the local reaper's period
    chain = {s["name"]: s["precision_ns"] for s in info["chain"]["stages"]}
    assert chain["psij_end"] == 100 * Precision.MS and chain["submit"] == Precision.US
    ends = server.filter(pl.col("stage") == "psij_end")["attrs"]
    assert set(ends.str.json_path_match("$.psij_state")) == {"COMPLETED"}
    assert set(ends.str.json_path_match("$.exit_code")) == {"0"}


def test_failing_command_is_job_failed(tmp_path: Path) -> None:
    out = run_with(
        """
name: psij-fail
backend: {type: psij}
job: {command: [sh, -c, "exit 3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.1s, drain: 20s}
""",
        tmp_path,
        psij_backend(executor="local"),
    )
    ev, _ = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["job_failed"] * 3
    assert set(f["message"]) == {"exit code 3"}
    ends = ev.filter(pl.col("stage") == "psij_end")["attrs"]
    assert set(ends.str.json_path_match("$.psij_state")) == {"FAILED"}


def test_abort_cancels_running_jobs(tmp_path: Path) -> None:
    backend = psij_backend(executor="local")
    out = run_with(
        """
name: psij-abort
backend: {type: psij}
job: {command: [sleep, "120"]}
load: {model: open, rate: 50/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.1s}
""",
        tmp_path,
        backend,
        abort_when_acked=3,
    )
    assert out.status == "aborted"
    ev, _ = trial(out)
    ids = acked_ids(ev)
    cancelled = ev.filter(pl.col("stage") == "cancelled")
    assert len(ids) == 3 and sorted(cancelled["job"]) == sorted(
        ev.filter(pl.col("stage") == "submit_ack")["job"]
    )
    # the native ids are the pids: PSI/J's reaper kills them
    alive = list(ids)
    for _ in range(100):
        alive = [p for p in ids if psutil.pid_exists(int(p))]
        if not alive:
            break
        time.sleep(0.05)
    assert alive == []


async def test_submit_errors_and_unknown_ids(tmp_path: Path) -> None:
    b = psij_backend(executor="local")
    await b.open()
    with pytest.raises(SubmitError) as err:
        await b.submit(JobRequest("gb-empty"))
    assert err.value.kind == "submit_error"
    # PSI/J starts a launcher script: a missing program fails the job, not the submission
    bid = await b.submit(JobRequest("gb-missing", (str(tmp_path / "no-such-program"),)))
    for _ in range(200):
        st = await b.status([bid])
        if st[bid].state.terminal:
            break
        await asyncio.sleep(0.05)
    assert st[bid].state is JobState.FAILED and st[bid].exit_code == 127
    assert await b.status(["12345678"]) == {}
    with pytest.raises(BackendError) as berr:
        await b.cancel(["12345678"])
    assert berr.value.where == "psij backend" and berr.value.fix
    await b.close()


async def test_open_says_what_is_wrong() -> None:
    with pytest.raises(BackendError) as err:
        await psij_backend(executor="nope").open()
    assert err.value.where == "backend.options.executor"
    assert err.value.fix and "slurm" in err.value.fix and "local" in err.value.fix
    with pytest.raises(BackendError) as err:
        await psij_backend(executor="slurm", config={"no_such_key": 1}).open()
    assert err.value.where == "backend.options.config"
    assert err.value.fix and "queue_polling_interval" in err.value.fix
    with pytest.raises(SpecError, match="poll_interval_s"):
        psij_backend(poll_interval_s=0)
    with pytest.raises(SpecError, match="nope"):
        psij_backend(nope=1)


def test_batch_config_polls_at_the_interval(tmp_path: Path) -> None:
    psij = import_psij()
    o = PsijOptions(executor="slurm", poll_interval_s=0.25, work_directory=str(tmp_path))
    conf = make_config(psij, executor_class(psij, "slurm"), o)
    assert type(conf).__name__ == "SlurmExecutorConfig"
    assert conf.queue_polling_interval == 0.25 and conf.initial_queue_polling_delay == 0.25
    assert conf.work_directory == tmp_path
    conf = make_config(psij, executor_class(psij, "pbs"), o)
    assert type(conf).__name__ == "PBSExecutorConfig" and conf.queue_polling_interval == 0.25


def test_state_mapping() -> None:
    assert map_state("NEW").state is JobState.QUEUED
    assert map_state("QUEUED").state is JobState.QUEUED
    assert map_state("ACTIVE").state is JobState.RUNNING
    assert map_state("COMPLETED", 0).state is JobState.DONE
    failed = map_state("FAILED", 2)
    assert (failed.state, failed.message, failed.exit_code) == (JobState.FAILED, "exit code 2", 2)
    assert map_state("FAILED", 1, "node died").message == "node died"
    assert map_state("CANCELED").state is JobState.CANCELLED
    assert map_state("WEIRD").state is JobState.UNKNOWN
