"""The sge backend against a live Grid Engine cell (tests/sge_cluster.py), through the runner.

No mocks: every job goes through qsub, sge_qmaster and sge_execd, and every server stamp
comes from the cell's accounting file.

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
Grid Engine has (queue length, rejects, jobs under each user's account).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest

from backend_run import failures, run_with, submit_users, trial
from gridbench.jobflow.backends.base import JobRequest, JobState, SubmitError
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.sge.backend import SgeBackend
from gridbench.jobflow.events.model import Precision
from sge_cluster import SgeCell  # the fixture sge comes from conftest.py: one cell per session

pytestmark = pytest.mark.e2e
SERVER = ["sge_submit", "sge_start", "sge_end"]
S = Precision.S


def backend_for(cell: SgeCell, **options: object) -> SgeBackend:
    b = create_backend("sge", {"env": cell.env, **options})
    assert isinstance(b, SgeBackend)
    return b


async def test_status_queue_length_and_rejects(sge: SgeCell) -> None:
    b = backend_for(sge)
    await b.open()
    bid = await b.submit(JobRequest("gb-direct", ("true",)))
    held = sge.run("qsub", "-terse", "-h", "-b", "y", "-o", "/dev/null", "-j", "y", "true")
    held_id = held.strip()
    try:
        assert await b.queue_length() is not None
        assert (await b.queue_length() or 0) >= 1  # at least the held job
        sweeps = 0
        for _ in range(100):
            st = await b.status([bid, "999999"])
            sweeps += 1
            if bid in st and st[bid].state.terminal:
                break
            await asyncio.sleep(0.1)
        assert st[bid].state is JobState.DONE and "999999" not in st
        assert b.calls["qstat -xml"] == sweeps  # one per sweep
        assert b.calls["qstat -xml -u *"] == 2
        ev = await b.server_events()
        assert [(e.stage, e.precision_ns) for e in ev] == [
            ("sge_submit", S),
            ("sge_start", S),
            ("sge_end", S),
        ]
        bad = backend_for(sge, queue="nosuch.q")
        with pytest.raises(SubmitError) as info:
            await bad.submit(JobRequest("gb-bad", ("true",)))
        assert info.value.kind == "submit_rejected"
        assert "unknown queue" in info.value.message
    finally:
        sge.run("qdel", held_id, check=False)
        await b.close()


def test_jobs_of_each_user_run_under_their_account(sge: SgeCell, tmp_path: Path) -> None:
    from unix_users import unix_accounts

    with unix_accounts("alice", "bob") as (alice, bob):
        backend = backend_for(sge)
        out = run_with(
            f"""
name: sge-accounts
backend: {{type: sge}}
job: {{command: ["true"]}}
users: [{{name: alice, account: {alice}}}, {{name: bob, account: {bob}}}]
load: {{model: open, rate: 20/s}}
trial: {{jobs: 4}}
timeouts: {{status_interval: 0.3s, drain: 40s}}
""",
            tmp_path,
            backend,
        )
        ev, _ = trial(out)
        assert failures(ev).height == 0
        acks = ev.filter(pl.col("stage") == "submit_ack").select(
            "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("bid")
        )
        users = submit_users(ev)
        want = {"alice": alice, "bob": bob}
        for job, bid, user in acks.join(users, on="job").iter_rows():
            owner = [
                line.split()[1]
                for line in sge.run("qacct", "-j", bid).splitlines()
                if line.startswith("owner")
            ]
            assert owner == [want[user]], job
