"""Agents on Dask: two local processes against the reference grid, an agent under
libfaketime through a scheduler the test starts, and kill -9 of an agent and of the
controller mid-trial (collect, analyze and cleanup afterwards; nothing left queued)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import polars as pl
import psutil
import pytest

from conftest import BIN, cli_env
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.events.log import read_events
from gridbench.jobflow.events.trial_log import read_event_log, read_trial_log
from gridbench.jobflow.reference import ReferenceGrid, build_config
from gridbench.jobflow.run.outstanding import outstanding_jobs
from test_runner import run_spec

DASK = Path(sys.executable).with_name("dask")
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
SKEW_S = 2.5
T = TypeVar("T")


def _wait_for(pred: Callable[[], T], timeout: float, what: str, log: Path | None = None) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceGrid]:
    """One reference grid (its own HTTP service) shared by the agents of every test."""
    cfg = build_config(
        "batched",
        overrides={
            "ce": {"service": {"dist": "fixed", "mean": 0.002}},
            "reports": {"dir": str(tmp_path_factory.mktemp("reports"))},
        },
    )
    g = ReferenceGrid(cfg)
    g.start_background()
    yield g
    g.stop()


def _queued(url: str) -> int:
    total: int = httpx.get(f"{url}/queue", timeout=10).json()["total"]
    return total


class DaskCluster:
    """A ``dask scheduler`` and two ``dask worker`` processes; worker 1 runs under
    libfaketime, +2.5 s."""

    def __init__(self, root: Path, worker_envs: list[dict[str, str]] | None = None) -> None:
        self.root = root
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        skewed = {"LD_PRELOAD": str(FAKETIME_LIB), "FAKETIME": f"+{SKEW_S}"}
        self.worker_envs = [{}, skewed] if worker_envs is None else worker_envs
        self.worker_ports = [_free_port() for _ in self.worker_envs]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def _start(self, argv: list[str], name: str, env: dict[str, str]) -> None:
        log = self.root / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as fh:
            self.procs.append(subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env))

    def start(self) -> None:
        env = dict(os.environ)
        self._start(
            [
                str(DASK),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-dashboard",
            ],
            "scheduler",
            env,
        )
        for k, wport in enumerate(self.worker_ports):
            # e.g. the skewed agent: its whole process sees the shifted clock
            wenv = {**env, **self.worker_envs[k]}
            self._start(
                [
                    str(DASK),
                    "worker",
                    self.address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--host",
                    "127.0.0.1",
                    "--worker-port",
                    str(wport),
                    "--no-dashboard",
                ],
                f"worker-{k}",
                wenv,
            )

    def wait_ready(self) -> None:
        from distributed import Client

        def two() -> bool:
            for p, log in zip(self.procs, self.logs, strict=True):
                if p.poll() is not None:
                    raise AssertionError(f"{log.name} exited:\n{log.read_text()[-2000:]}")
            try:
                with Client(self.address, timeout="2s") as c:
                    return len(c.scheduler_info()["workers"]) == len(self.worker_ports)
            except OSError:
                return False

        _wait_for(two, 60, "the dask scheduler and two workers", self.logs[-1])

    def stop(self) -> None:
        for p in reversed(self.procs):  # workers first, while their scheduler still answers
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    if not FAKETIME_LIB.exists():
        pytest.fail(f"{FAKETIME_LIB} is missing: apt-get install faketime")
    c = DaskCluster(tmp_path_factory.mktemp("dask"))
    c.start()
    try:
        c.wait_ready()
        yield c
    finally:
        c.stop()


def _trial(run: Path, trial: str = "p00-t00") -> tuple[dict[str, Any], pl.DataFrame]:
    tdir = run / "trials" / trial
    return json.loads((tdir / "trial.json").read_text()), read_trial_log(tdir)


@pytest.mark.parametrize("fmt", ["arrow", "csv"])
def test_two_processes_against_the_reference_grid(
    tmp_path: Path, grid: ReferenceGrid, fmt: str
) -> None:
    out = run_spec(
        f"""
name: two-agents
backend: {{type: reference, options: {{url: "{grid.url}"}}}}
job: {{runtime: 0.1s}}
load: {{model: open, rate: 20/s, agents: {{processes: 2}}}}
trial: {{duration: 2s, event_log: {fmt}}}
timeouts: {{status_interval: 0.2s, drain: 30s, settle: 0s}}
""",
        tmp_path,
    )
    assert out.status == "complete", out.trials
    info, ev = _trial(out.run.path)
    # the agents' CSV lines were merged into the trial's log of the spec's format: parsed
    # into record batches (arrow), or appended as bytes (csv)
    name = {"arrow": "events.arrows", "csv": "events.csv"}[fmt]
    assert sorted(p.name for p in (out.run.path / "trials" / "p00-t00").glob("events*")) == [name]
    intended = ev.filter(pl.col("stage") == "intended")
    assert intended.height == 40 and intended["job"].n_unique() == 40  # every job once
    done = ev.filter(pl.col("stage") == "client_done")
    assert done.height == 40 and done["job"].n_unique() == 40
    assert set(ev["agent"].unique()) == {"agent-0", "agent-1"}
    per_agent = dict(intended.group_by("agent").len().iter_rows())
    assert per_agent == {"agent-0": 20, "agent-1": 20}  # the schedule split evenly
    owns = []
    for name in ("agent-0", "agent-1"):
        a = info["agents"][name]
        # same host: the offset is zero within its bound, and the bound is small
        assert 0 < a["clock_uncertainty_ns"] < 50_000_000
        assert abs(a["clock_offset_ns"]) <= a["offset_before"]["bound_ns"] + 1_000_000
        assert a["offset_after"]["probes"] == 32 and a["drift_ppm"] is not None
        assert a["start_skew_ns"] is not None and abs(a["start_skew_ns"]) < 1_000_000_000
        offsets = ev.filter(pl.col("agent") == name)["clock_offset_ns"].unique().to_list()
        assert offsets == [a["clock_offset_ns"]]
        # the agent's own log, in the trial log's format, survives in the run and holds
        # what was merged (an Arrow one pulled as whole IPC messages and decoded)
        suffix = {"arrow": ".events.arrows", "csv": ".events.csv"}[fmt]
        own_path = out.run.path / "agents" / name / f"p00-t00{suffix}"
        assert a["log"] == str(own_path) and _agent_logs(out.run.path)[name]["path"] == a["log"]
        assert [p.name for p in own_path.parent.glob("p00-t00.*")] == [own_path.name]
        own = read_event_log(own_path)
        assert own.height == a["events"] == ev.filter(pl.col("agent") == name).height
        owns.append(own)
    # the trial's log is exactly the controller's events and the agents' own, each once
    key = ["job", "stage", "t_ns", "agent"]
    mine = ev.filter(~pl.col("agent").is_in(["agent-0", "agent-1"]))
    # (the controller stamps events itself only for a lost agent's jobs: none here)
    union = {*mine.select(key).iter_rows(), *pl.concat(owns).select(key).iter_rows()}
    assert ev.height == len(union) and set(ev.select(key).iter_rows()) == union
    assert _queued(grid.url) == 0
    # the results break down per agent: its share, rate, late/dropped, CPU, submit latency
    m = analyze_run(out.run.path, write=True)
    (t,) = m["points"][0]["trials"]
    by_agent = t["by_agent"]
    assert set(by_agent) == {"agent-0", "agent-1"}
    for name, a in by_agent.items():
        assert a["submitted"] == 20 and a["late"] == 0 and a["dropped"] == 0, a
        assert 8.0 < a["rate_per_s"] < 12.5, a  # 20/s split in two
        assert 0 < a["cpu_s"] < 30 and a["host"] == socket.gethostname()
        assert 0 < a["submit_p50_ms"] <= a["submit_p95_ms"] < 2000
        assert a["submit_p50_ms"] == pytest.approx(
            _submit_p50_ms(ev.filter(pl.col("agent") == name)), rel=1e-6
        )
    from gridbench.jobflow.report import build_report

    report = build_report(m, {})
    [table] = [s for s in report.sections if getattr(s, "id", "") == "agents-load"]
    cells = {c.key: i for i, c in enumerate(table.columns)}
    assert [r[cells["agent"]] for r in table.rows] == ["agent-0", "agent-1"]
    assert [r[cells["submitted"]] for r in table.rows] == [20, 20]


def _submit_p50_ms(ev: pl.DataFrame) -> float:
    wide = ev.filter(pl.col("stage").is_in(["submit", "submit_ack"])).pivot(
        on="stage", index="job", values="t_ns", aggregate_function="first"
    )
    return float((wide["submit_ack"] - wide["submit"]).quantile(0.5) or 0) / 1e6  # type: ignore[operator]


def test_an_agent_under_libfaketime_is_corrected(tmp_path: Path, dask_cluster: DaskCluster) -> None:
    out = run_spec(
        f"""
name: skewed
backend: {{type: noop, options: {{runtime_s: 0.05}}}}
load: {{model: open, rate: 20/s,
  agents: {{scheduler: "{dask_cluster.address}", workdir: "{tmp_path}/agentlogs"}}}}
trial: {{duration: 2s}}
timeouts: {{status_interval: 0.1s}}
""",
        tmp_path,
    )
    assert out.status == "complete", out.trials
    info, ev = _trial(out.run.path)
    by_port = {a["address"].rsplit(":", 1)[1]: a for a in info["agents"].values()}
    plain, skewed = (by_port[str(p)] for p in dask_cluster.worker_ports)
    assert abs(plain["clock_offset_ns"]) < 5_000_000
    # the estimate is within a few ms of the truth, and the bound says so
    assert abs(skewed["clock_offset_ns"] - SKEW_S * 1e9) < 5_000_000
    assert abs(skewed["offset_after"]["offset_ns"] - SKEW_S * 1e9) < 5_000_000
    assert skewed["clock_uncertainty_ns"] < 5_000_000
    # raw stamps of the skewed agent are 2.5 s ahead; corrected, the merged schedule is
    # one schedule: intended times in job order never go back by more than the bounds
    intended = ev.filter(pl.col("stage") == "intended").sort("job")
    assert intended.height == 40
    corrected = (intended["t_ns"] - intended["clock_offset_ns"]).diff().drop_nulls()
    assert corrected.min() > -10_000_000  # type: ignore[operator]
    raw = intended["t_ns"].diff().drop_nulls()
    assert raw.min() < -2_000_000_000  # type: ignore[operator]
    # after correction no latency is negative
    wide = ev.with_columns(c=pl.col("t_ns") - pl.col("clock_offset_ns")).pivot(
        on="stage", index="job", values="c", aggregate_function="first"
    )
    assert (wide["client_done"] - wide["intended"]).min() >= 0  # type: ignore[operator]
    # the merged throughput is that of one schedule at 20/s over 2 s
    span = (wide["intended"].max() - wide["intended"].min()) / 1e9  # type: ignore[operator]
    assert 1.8 < span < 2.1
    # ... and, analysed, equals that of a one-host run of the same total rate, within noise
    one = run_spec(
        """
name: one-host
backend: {type: noop, options: {runtime_s: 0.05}}
load: {model: open, rate: 20/s}
trial: {duration: 2s}
timeouts: {status_interval: 0.1s}
""",
        tmp_path / "one",
    )
    rates = []
    for run in (out.run.path, one.run.path):
        m = analyze_run(run, write=True)
        (t,) = m["points"][0]["trials"]
        assert t["valid"], t["validity"]
        rates.append(t["rates"]["end_to_end_per_s"])
        assert t["throughput"]["client_done"]["count"] == 40
        # a per-agent breakdown for remote agents only (the one-host run has none)
        assert sorted(t.get("by_agent", {})) == (
            [] if run == one.run.path else sorted(info["agents"])
        )
    assert rates[0] == pytest.approx(rates[1], rel=0.15), rates


def _run_background(spec: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    results = tmp_path / "results"
    err = tmp_path / "run.err"
    with open(err, "wb") as fh:
        proc = subprocess.Popen(
            [str(BIN), "run", str(path), "--yes"],
            env=cli_env(results),
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    exp = _wait_for(lambda: next(results.glob("*/experiment.json"), None), 60, "run dir", err)
    return proc, exp.parent, err


def _agent_logs(run: Path, trial: str = "p00-t00") -> dict[str, Any]:
    logs: dict[str, Any] = json.loads((run / "experiment.json").read_text()).get("agents", {})
    return logs.get("logs", {}).get(trial, {})


def _acked(log: Path) -> int:
    """Submissions acknowledged in an agent's log as it is being written."""
    if not log.exists():
        return 0
    ev = read_event_log(log, columns=["stage"], store=False)
    return ev.filter(pl.col("stage") == "submit_ack").height


def test_kill_9_of_an_agent_mid_trial(tmp_path: Path, grid: ReferenceGrid) -> None:
    proc, run, err = _run_background(
        f"""
name: agent-killed
backend: {{type: reference, options: {{url: "{grid.url}"}}}}
job: {{runtime: 0.5s}}
load: {{model: open, rate: 10/s, agents: {{processes: 2}}}}
trial: {{duration: 6s}}
timeouts: {{status_interval: 0.2s, drain: 30s, settle: 0s}}
""",
        tmp_path,
    )
    try:
        logs = _wait_for(lambda: len(_agent_logs(run)) == 2 and _agent_logs(run), 60, "agents", err)
        victim_log = Path(logs["agent-1"]["path"])
        _wait_for(lambda: _acked(victim_log) >= 3, 30, "acknowledged jobs")
        victim = psutil.Process(int(logs["agent-1"]["pid"]))  # the agent's worker process
        assert victim.pid != proc.pid and proc.pid in {p.pid for p in victim.parents()}
        victim.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=120) in (0, 1), err.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    info, ev = _trial(run)
    assert "lost" in info["agents"]["agent-1"] and "lost" not in info["agents"]["agent-0"]
    assert victim_log.exists()  # its log survives
    # every job the lost agent had acknowledged is accounted: ended, cancelled or lost
    assert outstanding_jobs(ev).height == 0
    acked = ev.filter((pl.col("stage") == "submit_ack") & (pl.col("agent") == "agent-1"))
    assert acked.height > 0
    ended = ev.filter(pl.col("stage").is_in(["client_done", "cancelled", "failed"]))
    assert set(acked["job"]) <= set(ended["job"])
    assert _queued(grid.url) == 0
    # the run says so: its state and its metrics name the lost agent
    assert json.loads((run / "experiment.json").read_text())["status"] == "needs cleanup"
    lost = json.loads((run / "metrics.json").read_text())["left_behind"]["agents_lost"]
    assert [a["agent"] for a in lost] == ["agent-1"]


@pytest.mark.parametrize("where", ["scheduler", "processes"])
def test_kill_9_of_the_controller_then_collect_analyze_cleanup(
    tmp_path: Path, grid: ReferenceGrid, where: str, request: pytest.FixtureRequest
) -> None:
    """Agents on a scheduler of their own, and local processes whose scheduler dies with
    the controller: either way they outlive it, cancel, and (local ones) then exit."""
    if where == "scheduler":
        cluster: DaskCluster = request.getfixturevalue("dask_cluster")
        agents = f'scheduler: "{cluster.address}", workdir: "{tmp_path}/agentlogs"'
    else:
        agents = "processes: 2"
    proc, run, err = _run_background(
        f"""
name: controller-killed
backend: {{type: reference, options: {{url: "{grid.url}"}}}}
job: {{runtime: 30s}}
load: {{model: open, rate: 10/s, agents: {{{agents}, heartbeat: 1s, on_controller_loss: cancel}}}}
trial: {{duration: 30s}}
timeouts: {{status_interval: 0.2s, drain: 5s, settle: 0s}}
""",
        tmp_path,
    )
    workers: list[psutil.Process] = []
    try:
        logs = _wait_for(lambda: len(_agent_logs(run)) == 2 and _agent_logs(run), 60, "agents", err)
        paths = [Path(v["path"]) for v in logs.values()]
        if where == "processes":
            workers = [psutil.Process(int(v["pid"])) for v in logs.values()]
        _wait_for(lambda: all(p.exists() and p.stat().st_size > 2000 for p in paths), 30, "events")
        _wait_for(lambda: _queued(grid.url) > 5, 30, "queued jobs")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # the agents notice the silence, stop submitting and cancel what they submitted
        _wait_for(lambda: _queued(grid.url) == 0, 30, "the agents' cancels")
        # ... and local agents' workers then exit by themselves: nothing is left running
        _, alive = psutil.wait_procs(workers, timeout=45)
        assert not alive, [w.cmdline() for w in alive]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for w in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                w.kill()
    env = cli_env(tmp_path / "results")
    first = subprocess.run([str(BIN), "collect", str(run)], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    _, ev = _trial(run)
    assert ev.filter(pl.col("stage") == "cancelled").height > 0
    assert outstanding_jobs(ev).height == 0
    assert all(p.name.endswith(".events.arrows") for p in paths)  # the trial log's format
    for p in paths:  # every agent event is in the trial, once
        own = read_event_log(p)
        assert own.height > 0
        assert own.join(ev, on=["job", "stage", "t_ns", "agent"], how="anti").height == 0
    again = subprocess.run([str(BIN), "collect", str(run)], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and ": 0 events merged" in again.stdout, again.stdout
    assert read_trial_log(run / "trials" / "p00-t00").height == ev.height
    analyzed = subprocess.run(
        [str(BIN), "analyze", str(run)], env=env, capture_output=True, text=True
    )
    assert analyzed.returncode in (0, 1, 4), analyzed.stderr
    assert (run / "metrics.json").exists()
    cleaned = subprocess.run(
        [str(BIN), "cleanup", str(run), "--yes", "--force"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert _queued(grid.url) == 0


def test_pulled_lines_merge_into_a_columnar_trial_log(tmp_path: Path) -> None:
    """What the controller does with each pull of an agent's log when the trial's log is
    events.arrows: the lines parsed and appended as one batch, the same events as the
    agent's CSV; lines that are not the format are one error naming the agent's log."""
    from gridbench.errors import ResultsError
    from gridbench.jobflow.events.columnar import ArrowEventLog
    from gridbench.jobflow.events.log import EventLog, Origin
    from gridbench.jobflow.run.agent_merge import LogMerger

    agent_log = tmp_path / "agent-1.events.csv"
    with EventLog(agent_log) as log:
        for i in range(7):
            log.append(f"j{i}", "submit", 1_000 + i, Origin(agent="agent-1", clock_offset_ns=-5))
            log.append(f"j{i}", "submit_ack", 2_000 + i, attrs={"backend_id": f"b,{i}"})
    raw = agent_log.read_bytes()
    cut = raw.index(b"\n", len(raw) // 2) + 1  # two pulls of complete lines
    trial = tmp_path / "trial"
    with ArrowEventLog(trial / "events.arrows") as elog:
        elog.append("j9", "intended", 10)  # the controller's own pending event
        merger = LogMerger(elog, "agent-1's log")
        merger.add(raw[:cut], True)
        merger.add(raw[cut:], False)
        assert merger.events == 14 and elog.count == 15
        with pytest.raises(ResultsError, match="not valid CSV") as err:
            merger.add(b"j1,submit,not-a-number,client,1,agent-1,0,\n", False)
        assert err.value.where == "agent-1's log"
    merged = read_trial_log(trial)
    assert merged.row(0)[:3] == ("j9", "intended", 10)
    assert merged.slice(1).equals(read_events(agent_log))


def test_live_progress_adds_the_agents_histograms(tmp_path: Path) -> None:
    from gridbench.jobflow.events.clock import AnchoredClock
    from gridbench.jobflow.events.log import EventLog
    from gridbench.jobflow.run.agent_live import LiveRecorder, merge_live
    from gridbench.jobflow.run.observer import TrialProgress

    snaps, blobs = {}, []
    for k, lat_ms in enumerate((10, 30)):
        rec = LiveRecorder(EventLog(tmp_path / f"{k}.csv"), AnchoredClock(), f"agent-{k}")
        prog = TrialProgress("t", 100)
        for i in range(50):
            rec.stamp(f"j{k}-{i}", "submit", 1_000_000_000)
            rec.stamp(f"j{k}-{i}", "submit_ack", 1_000_000_000 + lat_ms * 1_000_000)
        prog.submitted = prog.acknowledged = 50
        snaps[f"agent-{k}"] = rec.snapshot(prog)
        blobs.append(snaps[f"agent-{k}"]["hist"])
        assert rec.snapshot(prog)["hist"] == b""  # a snapshot takes what came since the last
    progress = TrialProgress("t", 200)
    merge_live(progress, snaps, blobs)
    assert progress.submitted == progress.acknowledged == 100
    lat = progress.extra["submit_latency_ms"]
    assert lat["count"] == 100
    assert abs(lat["p50"] - 10) < 0.1 and abs(lat["p99"] - 30) < 0.1
    assert set(progress.extra["agents"]) == {"agent-0", "agent-1"}


def test_a_version_mismatch_is_one_clear_error(tmp_path: Path) -> None:
    """A worker whose gridbench says another version (set by a sitecustomize at start)."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import gridbench\ngridbench.__version__ = '0.0.0-other'\n"
    )
    path = os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])
    cluster = DaskCluster(tmp_path, [{"PYTHONPATH": path}])
    cluster.start()
    try:
        cluster.wait_ready()
        out = run_spec(
            f"""
name: mismatch
backend: {{type: noop}}
load: {{model: open, rate: 10/s, agents: {{scheduler: "{cluster.address}"}}}}
trial: {{jobs: 5}}
""",
            tmp_path,
        )
    finally:
        cluster.stop()
    assert out.status == "failed"
    error = str(out.error)
    assert f"{socket.gethostname()}" in error and "0.0.0-other" in error
    assert "fix: install gridbench" in error, error


def test_an_abort_stops_every_agent(tmp_path: Path, grid: ReferenceGrid) -> None:
    """Ctrl-C (the runner's abort) reaches the agents: they stop submitting and cancel."""
    out = run_spec(
        f"""
name: aborted
backend: {{type: reference, options: {{url: "{grid.url}"}}}}
job: {{runtime: 60s}}
load: {{model: open, rate: 10/s, agents: {{processes: 2}}}}
trial: {{duration: 30s}}
timeouts: {{status_interval: 0.2s, drain: 5s, settle: 0s}}
""",
        tmp_path,
        abort_after=8.0,
    )
    assert out.status == "aborted", out.trials
    info, ev = _trial(out.run.path)
    assert {a["stopped"] for a in info["agents"].values()} == {"stopped"}
    submitted = ev.filter(pl.col("stage") == "submit")
    assert 0 < submitted.height < 300  # stopped well before the schedule's end
    assert ev.filter(pl.col("stage") == "cancelled").height > 0
    assert outstanding_jobs(ev).height == 0
    assert _queued(grid.url) == 0


def test_local_agents_start_with_their_own_env(tmp_path: Path) -> None:
    """A local agent's env is there from its process's first instruction: under
    libfaketime (+2.5 s) its offset is estimated and its events corrected."""
    out = run_spec(
        f"""
name: skewed-process
backend: {{type: noop, options: {{runtime_s: 0.05}}}}
load: {{model: open, rate: 20/s, agents: {{processes: 2,
  env: {{agent-1: {{LD_PRELOAD: "{FAKETIME_LIB}", FAKETIME: "+{SKEW_S}"}}}}}}}}
trial: {{duration: 1s}}
timeouts: {{status_interval: 0.1s}}
""",
        tmp_path,
    )
    assert out.status == "complete", out.trials
    info, ev = _trial(out.run.path)
    assert abs(info["agents"]["agent-0"]["clock_offset_ns"]) < 5_000_000
    assert abs(info["agents"]["agent-1"]["clock_offset_ns"] - SKEW_S * 1e9) < 5_000_000
    wide = ev.with_columns(c=pl.col("t_ns") - pl.col("clock_offset_ns")).pivot(
        on="stage", index="job", values="c", aggregate_function="first"
    )
    assert wide.height == 20
    assert (wide["client_done"] - wide["intended"]).min() >= 0  # type: ignore[operator]


def test_a_local_agent_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    out = run_spec(
        """
name: broken-agent
backend: {type: noop}
load: {model: open, rate: 10/s, agents: {processes: 2,
  env: {agent-1: {PYTHONHOME: /nonexistent}}}}
trial: {jobs: 5}
""",
        tmp_path,
    )
    assert out.status == "failed"
    error = str(out.error)
    assert "agent-1's dask worker exited" in error, error
    assert "PYTHONHOME" in error or "encodings" in error, error  # the log's tail
    assert "load.agents.processes" in error
    log = out.run.path / "agents" / "agent-1" / "worker.log"
    assert log.exists() and log.stat().st_size > 0
    mine = psutil.Process().children(recursive=True)  # the run was in this process
    assert not [p for p in mine if "dask_worker" in " ".join(p.cmdline())]


def test_trials_reuse_the_agents_and_a_lost_one_is_replaced(
    tmp_path: Path, grid: ReferenceGrid
) -> None:
    """Three trials: the first two run on the same agent processes (started once); an agent
    killed after the second makes the third start a fresh pair, and that trial is whole."""
    from gridbench.jobflow.experiment.runner import ExperimentRunner
    from gridbench.jobflow.run.observer import NullObserver
    from gridbench.jobflow.spec import load_spec_text, make_plan

    class KillAfterSecond(NullObserver):
        def __init__(self) -> None:
            self.done = 0

        def trial_finished(self, progress: Any) -> None:
            self.done += 1
            if self.done == 2:  # between trials 2 and 3: the pool must notice and restart
                pid = _agent_logs(run_root, "p00-t01")["agent-1"]["pid"]
                os.kill(int(pid), signal.SIGKILL)
                psutil.wait_procs([psutil.Process(int(pid))], timeout=10)

    spec, data = load_spec_text(
        f"""
name: reuse
backend: {{type: reference, options: {{url: "{grid.url}"}}}}
job: {{runtime: 0.05s}}
load: {{model: open, rate: 20/s, agents: {{processes: 2}}}}
trials: 3
trial: {{duration: 1s}}
timeouts: {{status_interval: 0.1s, drain: 30s, settle: 0s}}
"""
    )
    observer = KillAfterSecond()
    runner = ExperimentRunner(make_plan(spec, data), data, tmp_path, observer=observer)
    run_root = runner.prepare().path
    out = asyncio.run(runner.execute())
    assert out.status == "complete", out.trials
    pids = [{n: v["pid"] for n, v in _agent_logs(run_root, f"p00-t0{k}").items()} for k in range(3)]
    assert pids[0] == pids[1]  # the same two processes: started once for both trials
    assert not set(pids[2].values()) & set(pids[1].values())  # a fresh pair after the loss
    for k in range(3):
        info, ev = _trial(run_root, f"p00-t0{k}")
        assert "lost" not in str(info["agents"]), info["agents"]
        assert ev.filter(pl.col("stage") == "client_done").height == 20
    # nothing is left running once the experiment has ended
    mine = psutil.Process().children(recursive=True)
    assert not [p for p in mine if "dask_worker" in " ".join(p.cmdline())]
    assert _queued(grid.url) == 0


def test_local_agents_speak_tls_that_a_stranger_cannot_join(tmp_path: Path) -> None:
    """The local agents' scheduler listens on loopback, open to every user of a shared
    submit host: it takes only parties holding this run's throw-away certificate."""
    from distributed import Client
    from distributed.security import Security

    from gridbench.jobflow.loads.base import AgentsBlock
    from gridbench.jobflow.run.agent_pool import AgentPool
    from gridbench.jobflow.run.agent_worker import agent_identity

    async def main() -> Path:
        async with AgentPool(AgentsBlock(processes=1), tmp_path) as pool:
            assert pool.tls is not None and pool.scheduler is not None
            address = str(pool.scheduler.address)
            assert address.startswith("tls://127.0.0.1:")
            assert pool.tls.dir.stat().st_mode & 0o777 == 0o700
            assert pool.tls.key.stat().st_mode & 0o777 == 0o600
            # the agent answers the controller, which holds the certificate
            ident = await pool.call(pool.addresses[0], agent_identity)
            assert ident["pid"] != os.getpid()
            # a client speaking plain TCP to that port, or TLS with a certificate of its
            # own, is refused
            plain = address.replace("tls://", "tcp://")
            for addr, security in ((plain, None), (address, Security.temporary())):
                with pytest.raises((OSError, TimeoutError)):
                    await Client(addr, asynchronous=True, timeout="3s", security=security)
            # the key never appears on a command line
            for p in psutil.Process().children(recursive=True):
                assert "PRIVATE KEY" not in " ".join(p.cmdline())
            return pool.tls.dir

    tls_dir = asyncio.run(main())
    assert not tls_dir.exists()  # removed with the cluster


def test_a_local_agent_listens_on_loopback_only(tmp_path: Path) -> None:
    """A Dask worker serves HTTP (/health, /metrics, /sitemap.json) without
    authentication: it must not listen beyond loopback (issue 22, item 3)."""
    from gridbench.jobflow.loads.base import AgentsBlock
    from gridbench.jobflow.run.agent_pool import AgentPool

    async def main() -> list[str]:
        async with AgentPool(AgentsBlock(processes=1), tmp_path) as pool:
            assert pool.addresses
            workers = [
                p
                for p in psutil.Process().children(recursive=True)
                if "dask_worker" in " ".join(p.cmdline())
            ]
            assert len(workers) == 1
            return [
                c.laddr.ip
                for c in workers[0].net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            ]

    listening = asyncio.run(main())
    assert listening, "the worker listens nowhere?"
    assert all(ip in ("127.0.0.1", "::1") for ip in listening), listening
