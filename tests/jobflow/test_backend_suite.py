"""One suite of behaviour tests, run against every backend that can run here.

PSI/J's ``tests/test_executor.py`` is the model: the same tests, parametrized over the
backends. Each backend is a ``Case``: how to build it (against a live daemon where it has
one: ``slurm`` from tests/slurm_cluster.py, ``sge`` from conftest.py), the spec's job
snippets, and how to ask the real system whether a job is still queued or running. What
only one backend has (Slurm's millisecond log stamps, SGE's accounting attributes, the
command backend's client processes) is that case's extra check (``check_ok`` ...), so
nothing the per-backend tests asserted is lost.

No mocks: every job goes through the backend's real system.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import psutil
import pytest

from backend_run import failures, trial
from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import Backend, JobRequest
from gridbench.jobflow.backends.command.backend import CommandBackend
from gridbench.jobflow.backends.command.demo import job_state
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.model import Precision
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan
from psij_run import CHAIN as PSIJ_CHAIN
from psij_run import psij_backend
from sge_cluster import SgeCell, free_port  # the fixture sge comes from conftest.py
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (the fixture slurm)

S = Precision.S
PSIJ_POLL_S = 0.5  # PSI/J's slurm executor polls squeue at this interval


# ---------------------------------------------------------------- what a case is made of


@dataclass
class Env:
    """What a case builds its backend from: the live daemon (or None), a scratch folder."""

    system: Any
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    stack: contextlib.ExitStack
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the reference grid's URL


@dataclass
class Ran:
    """One finished run, for a case's extra checks."""

    out: ExperimentOutcome
    ev: pl.DataFrame
    info: dict[str, Any]
    backend: Any
    env: Env
    jobs: int

    @property
    def wide(self) -> pl.DataFrame:
        return self.ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")


Check = Callable[[Ran], None]


@dataclass(frozen=True)
class OpenError:
    """What open() against an absent server must say."""

    make: Callable[[Env], Backend]
    where: str  # exactly; formatted with the Env's extra
    message: tuple[str, ...]  # parts of the message
    fix: str  # a part of the fix
    needs_daemon: bool = False  # the case's daemon must run (to copy its configuration)


@dataclass(frozen=True)
class Case:
    id: str
    type: str  # the spec's backend type
    make: Callable[[Env], Backend]
    chain: tuple[str, ...]  # every job has each stage, once
    alive: Callable[[Env, list[str], pl.DataFrame], list[str]]  # ids not ended as cancelled
    daemon: str | None = None  # the fixture of the live system
    ok_job: str = '{command: [sh, -c, "sleep 0.3"]}'
    jobs: int = 6
    timeouts: str = "status_interval: 0.2s, drain: 30s"
    collectors: str = ""  # a spec line
    orders: tuple[tuple[str, ...], ...] = ()  # stage sequences in time order; () = (chain,)
    status_calls: Callable[[Ran], int] | None = None  # real status queries; None: no batching
    check_ok: Check | None = None
    fail_job: str = '{command: [sh, -c, "echo a b; exit 3"]}'
    fail_messages: frozenset[str] = frozenset({"exit code 3"})
    fail_server_stage: str | None = None  # a failed job still has this server stamp
    check_fail: Check | None = None
    abort_job: str = '{command: [sleep, "120"]}'
    check_abort: Check | None = None
    open_error: OpenError | None = None

    def spec(self, env: Env, name: str, job: str, jobs: int, timeouts: str | None = None) -> str:
        """The spec of a run; ``$TMP`` in the job stands for the test's scratch folder."""
        collectors = f"{self.collectors}\n" if self.collectors else ""
        job = job.replace("$TMP", str(env.tmp))
        return (
            f"name: {name}\nbackend: {{type: {self.type}}}\njob: {job}\n"
            f"load: {{model: open, rate: 20/s}}\ntrial: {{jobs: {jobs}}}\n"
            f"timeouts: {{{timeouts or self.timeouts}}}\n{collectors}"
        )


def param(case: Case) -> Any:
    """A case as a pytest param: a case on a daemon runs in that daemon's xdist group."""
    marks = [pytest.mark.xdist_group(case.daemon)] if case.daemon else []
    return pytest.param(case, id=case.id, marks=marks)


# ---------------------------------------------------------------- running a spec


def acks_counter(backend: Any) -> Callable[[], int]:
    """How many submissions the backend accepted so far (its own counter, else counted)."""
    if hasattr(backend, "accepted"):
        return lambda: int(backend.accepted)
    count = 0
    submit = backend.submit

    async def counted(job: JobRequest) -> str:
        nonlocal count
        bid: str = await submit(job)
        count += 1
        return bid

    backend.submit = counted
    return lambda: count


def run(
    text: str, root: Path, backend: Any, *, abort_when_acked: int | None = None
) -> ExperimentOutcome:
    """Run a spec with this backend; optionally abort once that many jobs were accepted."""
    accepted = acks_counter(backend)
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root, backend=backend)

    async def main() -> ExperimentOutcome:
        task = asyncio.create_task(runner.execute())
        if abort_when_acked is not None:
            while accepted() < abort_when_acked and not task.done():
                await asyncio.sleep(0.05)
            runner.abort()
        return await task

    return asyncio.run(main())


def acked(ev: pl.DataFrame) -> pl.DataFrame:
    """job, backend id of the acknowledged submissions."""
    return ev.filter(pl.col("stage") == "submit_ack").select(
        "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("bid")
    )


def server_stamps(ev: pl.DataFrame, source: str) -> pl.DataFrame:
    return ev.filter(pl.col("source") == source)


def attr(frame: pl.DataFrame, key: str) -> set[str]:
    return set(frame["attrs"].str.json_path_match(f"$.{key}"))


# ---------------------------------------------------------------- asking the real systems


def pids_alive(pids: Sequence[str]) -> list[str]:
    """The pids still running (a zombie has ended)."""
    alive = []
    for p in pids:
        try:
            if psutil.Process(int(p)).status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


def local_alive(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    """The local backend's jobs are processes: their pids are in the local_start stamps."""
    starts = ev.filter(pl.col("stage") == "local_start")
    assert starts.height == len(ids)  # every job had started (4 slots, 4 jobs)
    return pids_alive(starts["attrs"].str.json_path_match("$.pid").to_list())


def psij_local_alive(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    return pids_alive(ids)  # PSI/J's local executor: the native ids are the pids


def slurm_not_cancelled(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    """The ids squeue does not show as CANCELLED (scancel is asynchronous)."""
    cluster: SlurmCluster = env.system
    lines = cluster.run("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i %T")
    states = dict(line.split() for line in lines.splitlines())
    return [i for i in ids if states.get(i) != "CANCELLED"]


def sge_listed(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    """The ids qstat still lists (qdel of a running job takes effect within a second)."""
    cell: SgeCell = env.system
    return [i for i in cell.job_ids() if i in ids]


def demo_not_cancelled(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    """The demo CLI's jobs are folders of its state dir, one per id."""
    state: Path = env.extra["state"]
    return [i for i in ids if job_state(state / i)[0] != "CANCELLED"]


def grid_not_cancelled(env: Env, ids: list[str], ev: pl.DataFrame) -> list[str]:
    r = httpx.post(f"{env.extra['url']}/jobs/status", json={"ids": ids}, timeout=10)
    jobs = r.raise_for_status().json()["jobs"]
    return [i for i in ids if jobs.get(i, {}).get("state") != "cancelled"]


# ---------------------------------------------------------------- the backends


def make_local(env: Env) -> Backend:
    return create_backend("local", {"slots": 4})


def make_reference(env: Env) -> Backend:
    """A grid of its own (batched status updates), started here so that it outlives the
    run: the abort test asks it afterwards what became of the jobs."""
    argv = [sys.executable, "-m", "gridbench.jobflow.reference", "--preset", "batched"]
    argv += ["--port", "0", "--reports-dir", str(env.tmp / "reports")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    env.stack.callback(proc.wait, timeout=10)
    env.stack.callback(proc.terminate)
    assert proc.stdout is not None
    m = re.fullmatch(r"listening on (\S+)\n", proc.stdout.readline())
    assert m, "the reference grid did not start"
    env.extra["url"] = m.group(1)
    b = create_backend("reference", {"url": m.group(1)})
    count_http(b)
    return b


def count_http(b: Any) -> None:
    """Count the HTTP requests the backend sends (``b.http_calls``, by method and path)."""
    b.http_calls = Counter()
    opener = b.open

    async def open_and_count() -> None:
        await opener()

        async def hook(request: httpx.Request) -> None:
            b.http_calls[f"{request.method} {request.url.path}"] += 1

        b.client.event_hooks["request"].append(hook)

    b.open = open_and_count


def make_slurm(env: Env) -> Backend:
    return create_backend("slurm", {"conf": str(env.system.conf)})


def make_sge(env: Env) -> Backend:
    return create_backend("sge", {"env": env.system.env})


def make_command_demo(env: Env) -> Backend:
    env.extra["state"] = state = env.tmp / "state"
    return CommandBackend.from_options({"preset": "demo", "vars": {"state_dir": str(state)}})


def make_command_slurm(env: Env) -> Backend:
    work = env.tmp / "work"
    work.mkdir(exist_ok=True)
    return CommandBackend.from_options(
        {"preset": "slurm", "env": env.system.env, "workdir": str(work)}
    )


def make_command_sge(env: Env) -> Backend:
    work = env.tmp / "work"
    work.mkdir(exist_ok=True)
    return CommandBackend.from_options(
        {"preset": "sge", "env": env.system.env, "workdir": str(work)}
    )


def make_psij_local(env: Env) -> Backend:
    return psij_backend(executor="local")


def make_psij_slurm(env: Env) -> Backend:
    """PSI/J runs sbatch, squeue and scancel with the process environment: the cluster's
    SLURM_CONF and MUNGE_SOCKET go into os.environ for the test (monkeypatch restores them)."""
    for key, value in env.system.env.items():
        env.monkeypatch.setenv(key, value)
    return psij_backend(
        executor="slurm",
        poll_interval_s=PSIJ_POLL_S,
        work_directory=str(env.tmp / "psij"),
        queue="debug",
    )


def absent_url(env: Env) -> str:
    env.extra["url"] = url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    return url


def down_slurm_conf(env: Env) -> str:
    """The cluster's configuration with the controller on a port nothing listens on."""
    cluster: SlurmCluster = env.system
    down = env.tmp / "down.conf"
    text = cluster.conf.read_text()
    down.write_text(text.replace(f"SlurmctldPort={cluster.ctld_port}", "SlurmctldPort=9"))
    return str(down)


# -- the backend-specific checks (what the per-backend tests asserted beyond the suite)


def slurm_ok(r: Ran) -> None:
    ev, info, wide, b, n = r.ev, r.info, r.wide, r.backend, r.jobs
    # ms stamps from the controller log for submit/start/end; eligible at submission
    server = server_stamps(ev, "slurmctld")
    prec = dict(server.group_by("stage").agg(pl.col("precision_ns").max()).iter_rows())
    assert prec == dict.fromkeys(SLURM_CHAIN[1:5], Precision.MS)
    assert (wide["slurm_eligible"] == wide["slurm_submit"]).all()
    assert server.height == 4 * n  # one stamp per job and stage, never two
    # the log's ms stamps and squeue's whole seconds agree
    assert (wide["slurm_end"] - wide["slurm_start"] >= 300_000_000).all()
    chain = {s["name"]: s["precision_ns"] for s in info["chain"]["stages"]}
    assert chain["slurm_start"] == chain["slurm_eligible"] == Precision.MS
    # squeue -O (the default), never --json, never a per-job lookup
    assert b.calls["squeue --json"] == 0 and b.calls["scontrol show job"] == 0
    assert b.calls["sbatch"] == n
    queue = info["background_queue"]  # other modules' jobs may share the cluster
    assert isinstance(queue["start"], int) and queue["end"] == queue["start"]
    # the jobs really ran under their gridbench names
    names = set(r.env.system.run("squeue", "-h", "-t", "all", "-o", "%j").split())
    assert set(ev["job"].unique()) <= names


def sge_ok(r: Ran) -> None:
    ev, info, wide, b, n = r.ev, r.info, r.wide, r.backend, r.jobs
    # whole seconds, truncated: the server's submit is less than a second before qsub's call
    assert (wide["submit"] - wide["sge_submit"] < S).all()
    assert (wide["sge_end"] - wide["sge_start"] >= S).all()  # each job slept 1.1 s
    server = server_stamps(ev, "sge_qmaster")
    assert server.height == 3 * n  # one stamp per job and stage, never two
    assert set(server["precision_ns"]) == {S}
    assert attr(server, "from") == {"accounting"}
    stages = {s["name"]: s["precision_ns"] for s in info["chain"]["stages"]}
    assert stages == {
        "submit": Precision.US,
        "sge_submit": S,
        "sge_start": S,
        "sge_end": S,
        "client_done": 300_000_000,  # polled: declared at the status interval (issue 14)
    }
    # qsub and one qstat -xml per sweep; never qacct, never a per-job lookup
    assert b.calls["qsub"] == n
    assert set(b.calls) <= {"qsub", "qstat -xml", "qstat -xml (open)", "qstat -xml -u *"}
    # the accounting file names these jobs
    lines = r.env.system.accounting.read_text().splitlines()
    names = {ln.split(":")[4] for ln in lines if not ln.startswith("#") and ln.count(":") > 12}
    assert set(ev["job"].unique()) <= names


def local_ok(r: Ran) -> None:
    ends = r.ev.filter(pl.col("stage") == "local_end")
    assert attr(ends, "exit_code") == {"0"} and attr(ends, "status") == {None}
    assert (r.wide["local_end"] - r.wide["local_start"] >= 280_000_000).all()  # the sleep
    assert set(server_stamps(r.ev, "local")["precision_ns"]) == {Precision.US}


def local_fail(r: Ran) -> None:
    ends = r.ev.filter(pl.col("stage") == "local_end")
    assert attr(ends, "exit_code") == {"3"} and attr(ends, "status") == {"failed"}


def reference_ok(r: Ran) -> None:
    chain = {s["name"]: s["precision_ns"] for s in r.info["chain"]["stages"]}
    assert chain["ce_entry"] == chain["bridge_done"] == Precision.MS  # dt_precision: ms
    assert r.backend.http_calls["POST /jobs"] == r.jobs
    done = r.ev.filter(pl.col("stage") == "bridge_done")
    assert attr(done, "status") == {"Finished"}


def reference_fail(r: Ran) -> None:
    done = r.ev.filter(pl.col("stage") == "bridge_done")
    assert done.height == r.jobs and attr(done, "status") == {"Failed"}


def command_ok(r: Ran, preset: str, submits: int, init: bool = True) -> None:
    info = r.info
    cp = info["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == submits  # one submit process per job
    assert cp["calls"] == sum(v["calls"] for v in cp["by_op"].values())
    assert cp["cpu_s"] > 0 and cp["wall_s"] > 0
    rt = r.out.run.read_experiment()["backend_runtime"]["command"]
    assert rt["preset"] == preset and rt["tested"] is True
    if init:  # the preset's init call, once at open
        assert rt["client_processes_at_open"]["by_op"]["init"]["calls"] == 1


def command_demo_ok(r: Ran) -> None:
    command_ok(r, "demo", r.jobs)
    assert r.info["background_queue"] == {"start": 0, "end": 0}  # from the queue template


def command_slurm_ok(r: Ran) -> None:
    command_ok(r, "slurm", r.jobs)
    assert r.info["background_queue"]["end"] == 0


def command_sge_ok(r: Ran) -> None:
    command_ok(r, "sge", r.jobs, init=False)  # the sge preset has no init
    assert not (r.env.tmp / "work" / "PWNED").exists()  # the argument stayed inert
    # each ended job left qstat and was looked up once with qacct
    assert r.info["client_processes"]["by_op"]["finished"]["calls"] >= r.jobs


def command_abort(r: Ran) -> None:
    assert r.info["client_processes"]["by_op"]["cancel"]["calls"] == 1  # one call for all


def command_demo_abort(r: Ran) -> None:
    command_abort(r)
    state: Path = r.env.extra["state"]  # the CLI knows these jobs and no others
    jobs = {p.name for p in state.iterdir() if (p / "argv.json").exists()}
    assert jobs == set(acked(r.ev)["bid"])


def psij_ok(r: Ran, precision: int, state: str = "COMPLETED", code: str = "0") -> None:
    server = server_stamps(r.ev, "psij")
    assert set(server["precision_ns"]) == {precision}
    chain = {s["name"]: s["precision_ns"] for s in r.info["chain"]["stages"]}
    assert chain["psij_queued"] == chain["psij_end"] == precision
    assert chain["submit"] == Precision.US
    ends = server.filter(pl.col("stage") == "psij_end")
    assert attr(ends, "psij_state") == {state} and attr(ends, "exit_code") == {code}


def psij_local_ok(r: Ran) -> None:
    psij_ok(r, 100 * Precision.MS)  # the local reaper's period
    assert (r.wide["psij_end"] - r.wide["psij_active"] >= 300_000_000).all()  # the sleep


def psij_slurm_ok(r: Ran) -> None:
    psij_ok(r, int(PSIJ_POLL_S * S))
    # the jobs really went through Slurm, under their gridbench names, in the partition
    ids = acked(r.ev)["bid"].to_list()
    lines = r.env.system.run("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%j %P %T")
    rows = {tuple(x.split()) for x in lines.splitlines()}
    assert rows == {(job, "debug", "COMPLETED") for job in r.ev["job"].unique()}


def calls_of(key: str) -> Callable[[Ran], int]:
    return lambda r: int(r.backend.calls[key])


def command_status_calls(r: Ran) -> int:
    return int(r.info["client_processes"]["by_op"]["status"]["calls"])


def calls_equal(key: str, want: int) -> Check:
    def check(r: Ran) -> None:
        assert r.backend.calls[key] == want, dict(r.backend.calls)

    return check


SLURM_CHAIN = (
    "submit",
    "slurm_submit",
    "slurm_eligible",
    "slurm_start",
    "slurm_end",
    "client_done",
)
SGE_SERVER = ("sge_submit", "sge_start", "sge_end")
EDGI_CHAIN = (
    "submit",
    "ce_entry",
    "ce_submit",
    "bridge_entry",
    "bridge_submit",
    "bridge_done",
    "ce_done",
    "client_done",
)
COMMAND_CHAIN = ("submit", "submit_ack", "client_done")

LOCAL = Case(
    id="local",
    type="local",
    make=make_local,
    chain=("submit", "local_start", "local_end", "client_done"),
    alive=local_alive,
    timeouts="status_interval: 0.1s, drain: 20s",
    check_ok=local_ok,
    fail_server_stage="local_end",
    check_fail=local_fail,
)
REFERENCE = Case(
    id="reference",
    type="reference",
    make=make_reference,
    chain=EDGI_CHAIN,
    alive=grid_not_cancelled,
    ok_job="{runtime: 0.3s}",
    jobs=5,
    timeouts="status_interval: 0.2s, drain: 30s, settle: 15s",
    collectors="collectors: [{type: edgi, poll: 0.5s}]",
    status_calls=lambda r: int(r.backend.http_calls["POST /jobs/status"]),
    check_ok=reference_ok,
    fail_job="{runtime: 0.1s, fail_fraction: 1.0}",
    fail_messages=frozenset({"requested failure"}),
    fail_server_stage="bridge_done",
    check_fail=reference_fail,
    abort_job="{runtime: 120s}",
    open_error=OpenError(
        lambda env: create_backend("reference", {"url": absent_url(env)}),
        where="{url}",
        message=("the reference grid does not answer",),
        fix="gridbench reference serve",
    ),
)
SLURM = Case(
    id="slurm",
    type="slurm",
    make=make_slurm,
    daemon="slurm",
    chain=SLURM_CHAIN,
    alive=slurm_not_cancelled,
    ok_job='{command: [sh, -c, "echo gridbench; sleep 0.3"]}',
    jobs=12,
    status_calls=calls_of("squeue -O"),
    check_ok=slurm_ok,
    fail_messages=frozenset({"FAILED, exit code 3, reason NonZeroExitCode"}),
    fail_server_stage="slurm_end",
    check_abort=calls_equal("scancel", 1),
    open_error=OpenError(
        lambda env: create_backend("slurm", {"conf": down_slurm_conf(env)}),
        where="scontrol ping",
        message=("is DOWN",),
        fix="slurmctld",
        needs_daemon=True,
    ),
)
SGE = Case(
    id="sge",
    type="sge",
    make=make_sge,
    daemon="sge",
    chain=("submit", *SGE_SERVER, "client_done"),
    # sge_submit is truncated to the second: it may come before the client's submit
    orders=((*SGE_SERVER, "client_done"), ("submit", "client_done")),
    alive=sge_listed,
    ok_job='{command: [sleep, "1.1"]}',
    jobs=8,
    timeouts="status_interval: 0.3s, drain: 40s",
    status_calls=calls_of("qstat -xml"),
    check_ok=sge_ok,
    fail_messages=frozenset({"exit status 3"}),
    fail_server_stage="sge_end",
    check_abort=calls_equal("qdel", 1),
    open_error=OpenError(
        lambda env: create_backend("sge", {"env": {"SGE_QMASTER_PORT": str(free_port())}}),
        where="qstat -xml (open)",
        message=("qstat failed (exit 1)", "unable to send message to qmaster"),
        fix="sge_qmaster",
    ),
)
COMMAND_DEMO = Case(
    id="command-demo",
    type="command",
    make=make_command_demo,
    chain=COMMAND_CHAIN,
    alive=demo_not_cancelled,
    status_calls=command_status_calls,
    check_ok=command_demo_ok,
    fail_messages=frozenset({"FAILED, exit code 3"}),
    check_abort=command_demo_abort,
)
COMMAND_SLURM = Case(
    id="command-slurm",
    type="command",
    make=make_command_slurm,
    daemon="slurm",
    chain=COMMAND_CHAIN,
    alive=slurm_not_cancelled,
    jobs=5,
    timeouts="status_interval: 0.2s, drain: 60s",
    status_calls=command_status_calls,
    check_ok=command_slurm_ok,
    # the preset's squeue -o "%i %T" carries no exit code: the state is the message
    fail_messages=frozenset({"FAILED"}),
    check_abort=command_abort,
    open_error=OpenError(
        lambda env: CommandBackend.from_options(
            {"preset": "slurm", "env": {**env.system.env, "SLURM_CONF": down_slurm_conf(env)}}
        ),
        where="backend command (preset slurm), template init",
        message=("exited with 1", "is DOWN"),
        fix="run it by hand",
        needs_daemon=True,
    ),
)
COMMAND_SGE = Case(
    id="command-sge",
    type="command",
    make=make_command_sge,
    daemon="sge",
    chain=COMMAND_CHAIN,
    alive=sge_listed,
    # execd runs the job with a shell: "$(touch ...)" must reach it as one inert argument
    ok_job='{command: [/bin/sh, -c, "sleep 0.5; exit 0", "$(touch $TMP/work/PWNED)"]}',
    jobs=4,
    timeouts="status_interval: 0.3s, drain: 60s",
    status_calls=command_status_calls,
    check_ok=command_sge_ok,
    check_abort=command_abort,
)
PSIJ_LOCAL = Case(
    id="psij-local",
    type="psij",
    make=make_psij_local,
    chain=PSIJ_CHAIN,
    alive=psij_local_alive,
    jobs=8,
    timeouts="status_interval: 0.1s, drain: 20s",
    check_ok=psij_local_ok,
    fail_server_stage="psij_end",
    check_fail=lambda r: psij_ok(r, 100 * Precision.MS, "FAILED", "3"),
)
PSIJ_SLURM = Case(
    id="psij-slurm",
    type="psij",
    make=make_psij_slurm,
    daemon="slurm",
    chain=PSIJ_CHAIN,
    alive=slurm_not_cancelled,
    timeouts="status_interval: 0.2s, drain: 30s",
    check_ok=psij_slurm_ok,
    fail_server_stage="psij_end",
    check_fail=lambda r: psij_ok(r, int(PSIJ_POLL_S * S), "FAILED", "3"),
)
CASES = [
    LOCAL,
    REFERENCE,
    SLURM,
    SGE,
    COMMAND_DEMO,
    COMMAND_SLURM,
    COMMAND_SGE,
    PSIJ_LOCAL,
    PSIJ_SLURM,
]


# ---------------------------------------------------------------- fixtures


@contextlib.contextmanager
def case_env(
    case: Case, request: pytest.FixtureRequest, tmp: Path, mp: pytest.MonkeyPatch, daemon: bool
) -> Iterator[Env]:
    # A case on a daemon carries its xdist_group mark (param above): the daemon fixture
    # may be asked for by name here without splitting its group across workers.
    system = request.getfixturevalue(case.daemon) if case.daemon and daemon else None
    with contextlib.ExitStack() as stack:
        yield Env(system, tmp, mp, stack)


@pytest.fixture(params=[param(c) for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    c: Case = request.param
    return c


@pytest.fixture
def env(
    case: Case, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    with case_env(case, request, tmp_path, monkeypatch, daemon=True) as e:
        yield e


def finish(case: Case, env: Env, out: ExperimentOutcome, backend: Any, jobs: int) -> Ran:
    ev, info = trial(out)
    return Ran(out, ev, info, backend, env, jobs)


# ---------------------------------------------------------------- the shared behaviour


def test_jobs_end_with_the_stage_chain_in_order(case: Case, env: Env) -> None:
    backend = case.make(env)
    n = case.jobs
    out = run(case.spec(env, f"{case.id}-basic", case.ok_job, n), env.tmp / "results", backend)
    r = finish(case, env, out, backend, n)
    assert out.status == "complete"
    assert failures(r.ev).height == 0
    counts = dict(r.ev.filter(pl.col("stage").is_in(case.chain)).group_by("stage").len().rows())
    assert counts == dict.fromkeys(case.chain, n), counts  # each stage once per job
    wide = r.wide
    assert wide.height == n
    assert wide.select(case.chain).null_count().sum_horizontal().item() == 0
    for order in case.orders or (case.chain,):
        for a, b in itertools.pairwise(order):
            assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    assert r.info["status_calls"] == r.info["status_sweeps"] >= 1
    if case.status_calls is not None:  # one real status query per sweep, never one per job
        assert case.status_calls(r) == r.info["status_calls"]
    if case.check_ok is not None:
        case.check_ok(r)


def test_failing_command_is_job_failed(case: Case, env: Env) -> None:
    backend = case.make(env)
    out = run(case.spec(env, f"{case.id}-fail", case.fail_job, 2), env.tmp / "results", backend)
    r = finish(case, env, out, backend, 2)
    f = failures(r.ev)
    assert f["kind"].to_list() == ["job_failed"] * 2
    assert set(f["message"]) == case.fail_messages
    if case.fail_server_stage is not None:  # a failed job still has its server stamps
        stamped = r.ev.filter(pl.col("stage") == case.fail_server_stage)["job"]
        assert sorted(stamped) == sorted(f.select("job").to_series())
    if case.check_fail is not None:
        case.check_fail(r)


def test_abort_cancels_every_outstanding_job(case: Case, env: Env) -> None:
    backend = case.make(env)
    n = 4
    text = case.spec(env, f"{case.id}-abort", case.abort_job, n, "status_interval: 0.2s")
    out = run(text, env.tmp / "results", backend, abort_when_acked=n)
    r = finish(case, env, out, backend, n)
    assert out.status == "aborted"
    acks = acked(r.ev)
    ids = acks["bid"].to_list()
    assert len(ids) == n
    cancelled = r.ev.filter(pl.col("stage") == "cancelled")
    assert sorted(cancelled["job"]) == sorted(acks["job"])
    left = ids
    deadline = time.monotonic() + 15  # the system agrees, within a bound
    while time.monotonic() < deadline:
        left = case.alive(env, ids, r.ev)
        if not left:
            break
        time.sleep(0.1)
    assert left == [], f"{case.id}: still queued or running: {left}"
    if case.check_abort is not None:
        case.check_abort(r)


OPEN_CASES = [param(c) for c in CASES if c.open_error is not None]


@pytest.mark.parametrize("open_case", OPEN_CASES)
async def test_open_against_an_absent_server_is_one_backend_error(
    open_case: Case, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = open_case.open_error
    assert want is not None
    with case_env(open_case, request, tmp_path, monkeypatch, want.needs_daemon) as env:
        backend = want.make(env)
        with pytest.raises(BackendError) as err:  # anything else fails the test
            await backend.open()
    e = err.value
    assert e.where == want.where.format(**env.extra)
    assert all(part in e.message for part in want.message), e.message
    assert e.fix and want.fix in e.fix, e.fix
    assert e.__cause__ is None  # raised from None: the user sees the message, not a chain
