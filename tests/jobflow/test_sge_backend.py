"""The sge backend against a live Grid Engine cell (tests/sge_cluster.py), through the runner.

No mocks: every job goes through qsub, sge_qmaster and sge_execd, and every server stamp
comes from the cell's accounting file.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import polars as pl
import pytest

from backend_run import failures, run_with, submit_users, trial
from gridbench.errors import BackendError
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


def test_jobs_end_with_ordered_accounting_stamps(sge: SgeCell, tmp_path: Path) -> None:
    backend = backend_for(sge)
    out = run_with(
        """
name: sge-basic
backend: {type: sge}
job: {command: [sleep, "1.1"]}
load: {model: open, rate: 20/s}
trial: {jobs: 8}
timeouts: {status_interval: 0.3s, drain: 40s}
""",
        tmp_path,
        backend,
    )
    assert out.status == "complete"
    ev, info = trial(out)
    assert failures(ev).height == 0
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == 8
    chain = ["submit", *SERVER, "client_done"]
    assert wide.select(chain).null_count().sum_horizontal().item() == 0
    for a, b in itertools.pairwise(SERVER):
        assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    assert (wide["sge_end"] <= wide["client_done"]).all()
    # whole seconds, truncated: the server's submit is less than a second before qsub's call
    assert (wide["submit"] - wide["sge_submit"] < S).all()
    assert (wide["sge_end"] - wide["sge_start"] >= S).all()  # each job slept 1.1 s
    server = ev.filter(pl.col("source") == "sge_qmaster")
    assert server.height == 3 * 8  # one stamp per job and stage, never two
    assert set(server["precision_ns"]) == {S}
    assert set(server["attrs"].str.json_path_match("$.from")) == {"accounting"}
    stages = {s["name"]: s["precision_ns"] for s in info["chain"]["stages"]}
    assert stages == {
        "submit": Precision.US,
        "sge_submit": S,
        "sge_start": S,
        "sge_end": S,
        "client_done": 300_000_000,  # polled: declared at the status interval (issue 14)
    }
    # one qstat -xml per status sweep, never a per-job lookup (no qacct at all)
    assert backend.calls["qstat -xml"] == info["status_calls"] == info["status_sweeps"]
    assert backend.calls["qsub"] == 8
    assert set(backend.calls) <= {"qsub", "qstat -xml", "qstat -xml (open)", "qstat -xml -u *"}
    # the accounting file names these jobs
    lines = sge.accounting.read_text().splitlines()
    names = {ln.split(":")[4] for ln in lines if not ln.startswith("#") and ln.count(":") > 12}
    assert set(ev["job"].unique()) <= names


def test_failing_command_is_job_failed(sge: SgeCell, tmp_path: Path) -> None:
    backend = backend_for(sge)
    out = run_with(
        """
name: sge-fail
backend: {type: sge}
job: {command: [sh, -c, "echo a b; exit 3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.3s, drain: 30s}
""",
        tmp_path,
        backend,
    )
    ev, _ = trial(out)
    f = failures(ev)
    assert f["kind"].to_list() == ["job_failed"] * 2
    assert set(f["message"]) == {"exit status 3"}
    ends = ev.filter(pl.col("stage") == "sge_end")
    assert ends.height == 2  # a failed job still has its server stamps


def test_abort_cancels_with_qdel(sge: SgeCell, tmp_path: Path) -> None:
    backend = backend_for(sge)
    out = run_with(
        """
name: sge-abort
backend: {type: sge}
job: {command: [sleep, "120"]}
load: {model: open, rate: 50/s}
trial: {jobs: 4}
timeouts: {status_interval: 0.3s}
""",
        tmp_path,
        backend,
        abort_when_acked=4,
    )
    assert out.status == "aborted"
    ev, _ = trial(out)
    acks = ev.filter(pl.col("stage") == "submit_ack")
    ids = acks["attrs"].str.json_path_match("$.backend_id").to_list()
    cancelled = ev.filter(pl.col("stage") == "cancelled")
    assert sorted(cancelled["job"]) == sorted(acks["job"])
    assert len(ids) == 4 and backend.calls["qdel"] == 1
    left: list[str] = []
    for _ in range(100):  # qdel of a running job takes effect within a second or two
        left = [i for i in sge.job_ids() if i in ids]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


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


async def test_open_without_qmaster_is_a_backend_error(tmp_path: Path) -> None:
    """No daemon on the port: open() says so, with where= and a fix (no cell needed)."""
    from sge_cluster import free_port

    b = create_backend("sge", {"env": {"SGE_QMASTER_PORT": str(free_port())}})
    with pytest.raises(BackendError) as info:
        await b.open()
    assert info.value.where == "qstat -xml (open)"
    assert "qstat failed (exit 1)" in info.value.message
    assert "unable to send message to qmaster" in info.value.message
    assert info.value.fix is not None and "sge_qmaster" in info.value.fix


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
