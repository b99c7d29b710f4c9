"""The psij backend with PSI/J's local executor.

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
the psij backend has (submit errors, bad options, its configuration, state mapping).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobRequest, JobState, SubmitError
from gridbench.jobflow.backends.psij.backend import map_state
from gridbench.jobflow.backends.psij.options import (
    PsijOptions,
    executor_class,
    import_psij,
    make_config,
)
from psij_run import psij_backend


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
