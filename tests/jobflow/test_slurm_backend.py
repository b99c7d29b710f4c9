"""The slurm backend against live daemons (tests/slurm_cluster.py), through the runner.

No mocks: every job goes through sbatch, slurmctld and slurmd. The only stand-in is a
``squeue`` script that prints broken JSON, to show what a broken reply does.

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
Slurm has (its squeue formats, sacct, zones, a controller going down, bad options).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backend_run import failures, run_with, trial
from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobRequest, JobState
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.backends.slurm.parse import parse_squeue_json
from gridbench.jobflow.events.model import Precision
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan
from slurm_cluster import (  # noqa: F401 (the fixtures slurm, slurm_acct, slurm_private)
    SlurmCluster,
    slurm_acct_fixture,
    slurm_fixture,
    slurm_private_fixture,
)

CHAIN = ["submit", "slurm_submit", "slurm_eligible", "slurm_start", "slurm_end", "client_done"]


def backend_for(cluster: SlurmCluster, **options: object) -> SlurmBackend:
    b = create_backend("slurm", {"conf": str(cluster.conf), **options})
    assert isinstance(b, SlurmBackend)
    return b


def test_rejected_submissions_keep_sbatch_message(slurm: SlurmCluster, tmp_path: Path) -> None:
    backend = backend_for(slurm, sbatch_args=["--partition=nope"])
    out = run_with(
        """
name: slurm-reject
backend: {type: slurm}
load: {model: open, rate: 20/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s, drain: 5s}
""",
        tmp_path,
        backend,
    )
    ev, _ = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["submit_rejected"] * 3
    assert set(f["message"]) == {
        "invalid partition specified: nope; "
        "Batch job submission failed: Invalid partition name specified"
    }


@pytest.mark.parametrize("fmt", ["text", "json"])
async def test_status_resolves_unknown_ids_in_one_call(slurm: SlurmCluster, fmt: str) -> None:
    b = backend_for(slurm, controller_log=None, squeue_format=fmt)
    squeue = "squeue -O" if fmt == "text" else "squeue --json"
    await b.open()
    bid = await b.submit(JobRequest("gb-resolve", ("true",)))
    for _ in range(200):
        st = await b.status([bid, "999998"])
        if bid in st and st[bid].state.terminal:
            break
        await asyncio.sleep(0.05)
    assert st[bid].state is JobState.DONE and "999998" not in st
    assert b.calls["scontrol show job"] == b.calls[squeue]  # one per sweep
    await b.status([bid, "999998", "999999"])  # several unknown: still one call (all jobs)
    assert b.calls["scontrol show job"] == b.calls[squeue]
    ev = await b.server_events()
    assert [(e.stage, e.precision_ns) for e in ev] == [
        ("slurm_submit", Precision.S),
        ("slurm_eligible", Precision.S),
        ("slurm_start", Precision.S),
        ("slurm_end", Precision.S),
    ]
    assert b.stage_chain().stages[1].precision_ns == Precision.S  # no log: whole seconds
    await b.close()


async def test_fetch_output(slurm: SlurmCluster, tmp_path: Path) -> None:
    b = backend_for(slurm, output=str(tmp_path / "%j.out"), time_limit="1")
    await b.open()
    assert b.capabilities().fetch_output
    bid = await b.submit(JobRequest("gb-out", ("echo", "it's a $HOME")))
    for _ in range(200):
        st = await b.status([bid])
        if bid in st and st[bid].state.terminal:
            break
        await asyncio.sleep(0.05)
    assert await b.fetch_output(bid) == b"it's a $HOME\n"  # argv quoted, no shell expansion
    await b.close()


async def test_open_says_what_is_wrong(slurm: SlurmCluster, tmp_path: Path) -> None:
    with pytest.raises(BackendError) as err:
        await backend_for(slurm, conf=str(tmp_path / "none.conf")).open()
    assert err.value.where == "backend.options.conf"
    with pytest.raises(BackendError) as err:
        await backend_for(slurm, partition="nope").open()
    assert err.value.where == "backend.options.partition" and "'nope'" in err.value.message
    # a controller that does not answer: tests/jobflow/test_backend_suite.py
    with pytest.raises(BackendError) as err:
        await backend_for(slurm, controller_log=str(tmp_path / "no.log")).open()
    assert err.value.where == "backend.options.controller_log"
    with pytest.raises(SpecError, match="unknown time zone"):
        create_backend("slurm", {"log_timezone": "Mars/Olympus"})


async def test_malformed_squeue_reply_is_a_clear_error(slurm: SlurmCluster, tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    squeue = fake / "squeue"
    squeue.write_text('#!/bin/sh\necho \'{"jobs": [ {"job_id": 1,\'\n')
    squeue.chmod(0o755)
    b = backend_for(slurm, bin_dir=str(fake), squeue_format="json")
    await b.open()
    with pytest.raises(BackendError) as err:
        await b.status(["1"])
    assert err.value.where == "squeue --json"
    assert err.value.message.startswith("squeue --json did not answer JSON")
    await b.close()
    # the -O format: a line with too few fields names the line and the way out
    squeue.write_text("#!/bin/sh\necho '17|RUNNING|garbage'\n")
    b = backend_for(slurm, bin_dir=str(fake))
    await b.open()
    with pytest.raises(BackendError) as err:
        await b.status(["17"])
    assert err.value.where == "squeue -O"
    assert "17|RUNNING|garbage" in err.value.message
    assert err.value.fix == "set squeue_format: json"
    await b.close()


async def test_squeue_times_are_read_in_the_zone_they_are_printed_in(
    slurm: SlurmCluster,
) -> None:
    """squeue -O prints times in its local zone: with log_timezone set it must print them
    in that zone (TZ), or every record stamp is off by the zones' difference. squeue --json
    (Unix seconds, no zone) is the reference."""
    b = backend_for(slurm, controller_log=None, log_timezone="Asia/Tokyo")
    await b.open()
    bid = await b.submit(JobRequest("gb-tz", ("true",)))
    for _ in range(200):
        if (await b.status([bid]))[bid].state.terminal:
            break
        await asyncio.sleep(0.05)
    got = {e.stage: e.t_ns // 1_000_000_000 for e in await b.server_events()}
    ref = parse_squeue_json(slurm.run("squeue", "--json").encode(), "squeue --json")[bid]
    assert got == {
        "slurm_submit": ref.submit_s,
        "slurm_eligible": ref.eligible_s,
        "slurm_start": ref.start_s,
        "slurm_end": ref.end_s,
    }
    assert b.calls["squeue -O"] >= 1 and b.calls["squeue --json"] == 0
    await b.close()


def test_controller_down_mid_trial(
    slurm_private: SlurmCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """slurmctld stops while jobs run: status calls fail, the trial still ends."""
    cluster = slurm_private
    backend = backend_for(cluster, command_timeout_s=1.5)
    spec, data = load_spec_text(
        """
name: slurm-down
backend: {type: slurm}
job: {command: [sleep, "120"]}
load: {model: open, rate: 50/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s, drain: 2s}
"""
    )
    runner = ExperimentRunner(make_plan(spec, data), data, tmp_path, backend=backend)

    async def main() -> ExperimentOutcome:
        task = asyncio.create_task(runner.execute())
        while backend.accepted < 3:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(cluster.stop_ctld)
        return await task

    out = asyncio.run(main())
    ev, info = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["lost"] * 3
    assert info["status_calls"] > info["status_sweeps"]  # the failed calls
    failed_calls = [r.getMessage() for r in caplog.records if "status call failed" in r.msg]
    assert failed_calls and all("squeue" in m for m in failed_calls)
    assert info["background_queue"]["end"] is None
    assert out.trials[0].status in ("complete", "failed")


async def test_sacct_resolves_jobs_squeue_forgot(slurm_acct: SlurmCluster) -> None:
    """With accounting, jobs the controller no longer lists come from sacct in chunks."""
    cluster = slurm_acct
    b = backend_for(cluster, use_sacct=True, resolve_chunk=2)
    await b.open()
    ids = [await b.submit(JobRequest(f"gb-acct-{i}", ("true",))) for i in range(3)]
    for _ in range(200):  # until the database has caught up (it fills eligible late)
        out = cluster.run("sacct", "-X", "-n", "-P", "-o", "State,Eligible", "-j", ",".join(ids))
        if all(x.startswith("COMPLETED|2") for x in out.split()) and len(out.split()) == 3:
            break
        await asyncio.sleep(0.1)
    await asyncio.to_thread(cluster.stop_ctld)
    await asyncio.to_thread(cluster.start_ctld, clear=True)
    assert cluster.job_ids() == []  # squeue forgot them
    before = b.calls["sacct"]
    st = await b.status(ids)
    assert {i: s.state for i, s in st.items()} == dict.fromkeys(ids, JobState.DONE)
    assert b.calls["sacct"] - before == 2  # 3 ids in chunks of 2
    ev = await b.server_events()
    stamps = {(e.job, e.stage): e for e in ev}
    for i in ids:
        assert stamps[(i, "slurm_submit")].precision_ns == Precision.MS  # the log wins
        e = stamps[(i, "slurm_eligible")]
        assert e.attrs == {"from": "sacct", "same_as": "slurm_submit"}
        assert stamps[(i, "slurm_start")].attrs == {"from": "log"}
    await b.close()
