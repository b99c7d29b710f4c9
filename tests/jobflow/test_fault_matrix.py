"""The kill -9 fault matrix (issue 22, "Tests"): each kind of process gridbench starts is
killed with SIGKILL at a random point of a real short run, then ``gridbench cleanup RUN
--yes`` (the real CLI) must leave

(a) no process whose environment names the run folder (``GRIDBENCH_RUN``), no listening
    socket of one, and nothing in the run's temporary directory (TLS keys, grid config);
(b) every event and raw record flushed before the kill still there, byte for byte, and
    ``gridbench analyze RUN`` ending with a documented exit code, never a traceback;
(c) the run in a finished state (``complete``, ``needs cleanup``, ``crashed`` ...), never
    ``running``.

The random point is a delay drawn from ``random.Random`` seeded by ``GRIDBENCH_FAULT_SEED``
(else the clock): every assertion message names the seed and the delay, so a failure is
rerun with ``GRIDBENCH_FAULT_SEED=<seed> pytest tests/jobflow/test_fault_matrix.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from conftest import BIN, cli_env
from gridbench.states import FINISHED, NEEDS_CLEANUP
from gridbench.store.spawned import RUN_ENV
from test_agents import _wait_for

SEED = int(os.environ.get("GRIDBENCH_FAULT_SEED") or time.time_ns() % 1_000_000)
#: files a run only ever appends to (and io's raw/ files, written once): what was flushed
#: must stay a prefix
APPEND_ONLY = (".csv", ".jsonl", ".arrows")
#: exit codes of ``analyze``: 0 pass, 1 a threshold failed, 2 refused (damage named),
#: 3 the run failed (io), 4 no data
ANALYZE_CODES = (0, 1, 2, 3, 4)

JOBFLOW_GRID = """\
name: fm-{name}
backend: {{type: reference, options: {{preset: batched}}}}
job: {{runtime: {runtime}}}
load: {{model: open, rate: 10/s}}
trial: {{duration: {duration}}}
timeouts: {{status_interval: 0.2s, drain: 3s, settle: 0s}}
"""
JOBFLOW_AGENTS = """\
name: fm-{name}
backend: {{type: noop, options: {{runtime_s: 0.3}}}}
load: {{model: open, rate: 10/s, agents: {{processes: 2, heartbeat: 1s,
  on_controller_loss: cancel}}}}
trial: {{duration: {duration}}}
timeouts: {{status_interval: 0.2s, drain: 3s, settle: 0s}}
"""
NET = """\
name: fm-{name}
environments: [host]
pingpong: {{transports: [tcp], sizes: {{list: [64, 1k]}}, tests: {tests}, round_trips: 50}}
echo: {{enabled: false}}
burst: {{enabled: false}}
transfer: {transfer}
floor: {floor}
test_timeout: 3s
"""
NO_FLOOR = "{sockperf: false, iperf3: false}"
#: the peer side's processes: the controller killed while sockperf's server runs
NET_FLOOR = NET.format(
    name="ctl", tests=50, transfer="{enabled: false}", floor="{iperf3: false, duration: 2s}"
)
NET_PEER = NET.format(name="peer", tests=400, transfer="{enabled: false}", floor=NO_FLOOR)
#: scp's throw-away sshd and its wrapper (ping-pong only to mark the data's start)
NET_SCP = NET.format(
    name="scp", tests=5, transfer="{tools: [scp], size: 1M, repetitions: 8}", floor=NO_FLOOR
)

IO = """\
name: fm-io
targets:
  - {name: a, path: @TMP@/target}
repetitions: 3
cache: direct
iozone: {file_size: 16M, record_size: 4k, tests: [write, read]}
"""


def _cmdline(p: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return p.cmdline()
    return []


def _is_module(module: str) -> Callable[[psutil.Process], bool]:
    return lambda p: module in _cmdline(p)


def _is_sshd(p: psutil.Process) -> bool:
    """The throw-away sshd's listener (its title: ``sshd: /usr/sbin/sshd -D ...``)."""
    title = " ".join(_cmdline(p))
    return title.startswith(("sshd", "/usr/sbin/sshd")) and " -D " in title


def _is_exe(name: str) -> Callable[[psutil.Process], bool]:
    return lambda p: _cmdline(p)[:1] != [] and Path(_cmdline(p)[0]).name == name


def _is_main_fio(p: psutil.Process) -> bool:
    """fio itself, not one of its job processes (killing one of those leaves fio waiting
    for it until the run's fio time-out: a bounded wait, too long for this matrix)."""
    with contextlib.suppress(psutil.Error):
        parent = p.parent()
        return _is_exe("fio")(p) and parent is not None and not _is_exe("fio")(parent)
    return False


def _is_agent(name: str) -> Callable[[psutil.Process], bool]:
    return lambda p: "distributed.cli.dask_worker" in _cmdline(p) and name in _cmdline(p)


@dataclass(frozen=True)
class Kind:
    """One kind of process, the short run that starts it, and how to recognise it."""

    name: str
    spec: str
    command: tuple[str, ...]
    #: None: the controller itself; else a test on the run's processes
    target: Callable[[psutil.Process], bool] | None
    #: the run's raw data must have begun (relative glob under the run folder)
    ready: str
    max_delay: float
    #: the controller outlives the kill and must end by itself within this many seconds
    ends_within: float = 0.0


KINDS = [
    Kind(
        "controller",
        JOBFLOW_GRID.format(name="controller", runtime="30s", duration="30s"),
        ("run",),
        None,
        "trials/*/events*",
        1.5,
    ),
    Kind(
        "reference-grid",
        JOBFLOW_GRID.format(name="grid", runtime="1s", duration="3s"),
        ("run",),
        _is_module("gridbench.jobflow.reference"),
        "trials/*/events*",
        1.5,
        ends_within=60,
    ),
    Kind(
        "agent",
        JOBFLOW_AGENTS.format(name="agent", duration="3s"),
        ("run",),
        _is_agent("agent-1"),
        "agents/agent-1/*events*",
        1.0,
        ends_within=90,
    ),
    Kind(
        "controller-of-agents",
        JOBFLOW_AGENTS.format(name="ctl-agents", duration="30s"),
        ("run",),
        None,
        "agents/*/*events*",
        1.0,
    ),
    Kind("io-controller", IO, ("io", "run"), None, "raw/*.json", 1.0),
    Kind("fio", IO, ("io", "run"), _is_main_fio, "raw/*", 0.3, ends_within=60),
    Kind("net-controller", NET_FLOOR, ("net", "run"), None, "processes.jsonl", 2.0),
    Kind(
        "peer",
        NET_PEER,
        ("net", "run"),
        _is_module("gridbench.messaging.peer"),
        "processes.jsonl",
        0.5,
        ends_within=90,
    ),
    Kind(
        "sshd-wrapper",
        NET_SCP,
        ("net", "run"),
        _is_module("gridbench.messaging.transports.sshd"),
        "processes.jsonl",
        0.5,
        ends_within=90,
    ),
    Kind(
        "sshd",
        NET_SCP,
        ("net", "run"),
        _is_sshd,
        "processes.jsonl",
        0.5,
        ends_within=90,
    ),
]


def run_processes(run: Path) -> list[psutil.Process]:
    """Every live process (not a zombie) whose environment names ``run`` (scans /proc),
    or whose command line does: sshd rewrites its title over its environment, but its
    configuration lies in the run folder."""
    want = str(run.resolve())
    found = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            ours = p.environ().get(RUN_ENV) == want or any(want in a for a in p.cmdline())
            if ours and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


def listening(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.append(f"pid {p.pid} {_cmdline(p)[:3]} listens on {c.laddr}")
    return out


def snapshot(run: Path) -> dict[Path, bytes]:
    """What is on disk now in the run's append-only files (events, records, books)."""
    return {
        f: f.read_bytes()
        for f in sorted(run.rglob("*"))
        if f.is_file() and (f.name.endswith(APPEND_ONLY) or f.parent.name == "raw")
    }


def _gb(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_kill_9_then_cleanup_leaves_nothing_and_loses_nothing(tmp_path: Path, kind: Kind) -> None:
    rng = random.Random(f"{SEED}-{kind.name}")
    delay = rng.uniform(0.0, kind.max_delay)
    say = f"[{kind.name}: GRIDBENCH_FAULT_SEED={SEED}, kill {delay:.3f} s after it was seen]"
    spec = tmp_path / "spec.yaml"
    (tmp_path / "target").mkdir()  # io's target folder
    spec.write_text(kind.spec.replace("@TMP@", str(tmp_path)), encoding="utf-8")
    results = tmp_path / "results"
    scratch = tmp_path / "tmp"  # the run's temporary folders (TLS keys, grid config) go here
    scratch.mkdir()
    env = {**cli_env(results), "TMPDIR": str(scratch)}
    err = tmp_path / "run.err"
    with err.open("wb") as fh:
        ctl = subprocess.Popen(
            [str(BIN), *kind.command, str(spec), *(["--yes"] if kind.command == ("run",) else [])],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    try:
        _kill_phase(ctl, results, err, kind, delay, say, scratch, env)
    finally:
        if ctl.poll() is None:
            os.killpg(ctl.pid, signal.SIGKILL)
            ctl.wait()
        for d in results.iterdir() if results.exists() else []:
            for p in run_processes(d):  # whatever a failure above left running
                with contextlib.suppress(psutil.Error):
                    p.kill()


def _kill_phase(
    ctl: subprocess.Popen[bytes],
    results: Path,
    err: Path,
    kind: Kind,
    delay: float,
    say: str,
    scratch: Path,
    env: dict[str, str],
) -> None:
    def started() -> Path | None:
        assert ctl.poll() is None, f"{say} the run ended early:\n{err.read_text()[-3000:]}"
        runs = [d for d in results.iterdir() if d.is_dir()] if results.exists() else []
        return runs[0] if runs and any(runs[0].glob(kind.ready)) else None

    run = _wait_for(started, 90, f"{say} the run's first data")
    flushed = _kill(ctl, run, kind, delay, say)
    if kind.ends_within:
        try:
            ctl.wait(timeout=kind.ends_within)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{say} the controller did not end after its {kind.name} died")
        assert "Traceback" not in err.read_text(), f"{say}\n{err.read_text()[-3000:]}"
    else:
        ctl.wait(timeout=10)
    _after_the_kill(run, env, flushed, scratch, say)


def _kill(
    ctl: subprocess.Popen[bytes], run: Path, kind: Kind, delay: float, say: str
) -> dict[Path, bytes]:
    """SIGKILL the target ``delay`` s after it is first seen (or, if it ended meanwhile,
    the next one of its kind); what was flushed just before."""
    if kind.target is None:
        time.sleep(delay)
        flushed = snapshot(run)
        os.kill(ctl.pid, signal.SIGKILL)
        return flushed
    test = kind.target
    deadline = time.monotonic() + 60
    first = True
    while time.monotonic() < deadline:
        assert ctl.poll() is None, f"{say} the run ended before its {kind.name} could be killed"
        for p in run_processes(run):
            if not test(p):
                continue
            if first:
                time.sleep(delay)
                first = False
                break
            flushed = snapshot(run)
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGKILL)
                return flushed
        else:
            time.sleep(0.05)
    pytest.fail(f"{say} no {kind.name} process of the run to kill")


def _after_the_kill(
    run: Path, env: dict[str, str], flushed: dict[Path, bytes], scratch: Path, say: str
) -> None:
    # no wait for local agents here: they end with their controller's scheduler connection
    # (after cancelling), or cleanup stops them; either way nothing of the run is left below
    cleaned = _gb(env, "cleanup", str(run), "--yes")
    out = cleaned.stdout + cleaned.stderr
    assert "Traceback" not in out and "internal error" not in out, f"{say}\n{out[-3000:]}"
    status = json.loads((run / "experiment.json").read_text())["status"]
    # a run that ended by itself and left nothing may be refused, as documented (io)
    refused = cleaned.returncode == 2 and "does not apply to" in cleaned.stderr
    assert cleaned.returncode == 0 or (refused and status in FINISHED), (
        f"{say} cleanup failed:\n{out[-3000:]}"
    )
    # (a) nothing of the run runs, listens or lies in its temporary folder
    left = _wait_for_gone(run)
    assert not left, f"{say} still running after cleanup: {[_cmdline(p) for p in left]}\n{out}"
    assert not listening(left), say
    assert not list(scratch.iterdir()), f"{say} left in TMPDIR: {list(scratch.iterdir())}"
    # (b) every byte flushed before the kill is still there
    for f, before in flushed.items():
        assert f.exists(), f"{say} {f} was flushed before the kill and is gone"
        assert f.read_bytes()[: len(before)] == before, f"{say} {f} lost flushed bytes"
    analyzed = _gb(env, "analyze", str(run))
    out = analyzed.stdout + analyzed.stderr
    assert "Traceback" not in out and "internal error" not in out, f"{say}\n{out[-3000:]}"
    assert analyzed.returncode in ANALYZE_CODES, f"{say} analyze:\n{out[-3000:]}"
    # (c) a finished state, as documented in gridbench.states
    status = json.loads((run / "experiment.json").read_text())["status"]
    assert status in FINISHED, f"{say} the run is left {status!r}"
    if status == NEEDS_CLEANUP:
        pytest.fail(f"{say} cleanup left nothing behind, yet the run still needs cleanup")


def _wait_for_gone(run: Path, timeout: float = 10) -> list[psutil.Process]:
    """The run's processes still alive after up to ``timeout`` s (a SIGTERMed one exits)."""
    deadline = time.monotonic() + timeout
    left = run_processes(run)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = run_processes(run)
    return left
