"""Agents on two "hosts": network namespaces on one bridge, each with its own sshd and a
throw-away key, reached through Dask's SSHCluster; then ``gridbench collect`` over scp."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import psutil
import pytest

import gridbench
from conftest import BIN, cli_env
from gridbench.jobflow.events.trial_log import read_event_log, read_trial_log
from gridbench.jobflow.run.agent_pool import HOSTS_IDLE_CLOSE_S
from io_fixtures import free_port, log_tail, stop
from test_runner import run_spec


@dataclass
class Hosts:
    addrs: list[str]
    port: int
    key: Path
    venv: Path


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.fail(f"ip {' '.join(args)} failed: {r.stderr.strip()}")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    """Two namespaces on a bridge (10.233.N.2 and .3; this host is .1), each running sshd."""
    tmp = tmp_path_factory.mktemp("hosts")
    tag = f"{os.getpid() % 10000}"
    octet = 20 + os.getpid() % 200
    bridge = f"gbab{tag}"
    names = [f"gbag{tag}{k}" for k in (1, 2)]
    procs: list[subprocess.Popen[bytes]] = []
    d = tmp / "ssh"
    d.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
        )
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    # the hosts' "venv": the shared venv's python with this checkout first on the path
    venv = tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    src = Path(gridbench.__file__).resolve().parent.parent
    py = venv / "bin" / "python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH={src} exec {Path(sys.executable)} "$@"\n')
    py.chmod(0o755)
    port = free_port()
    addrs = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"10.233.{octet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for k, ns in enumerate(names, start=2):
            addr = f"10.233.{octet}.{k}"
            _ip("netns", "add", ns)
            _ip("link", "add", f"{ns}h", "type", "veth", "peer", "name", f"{ns}p")
            _ip("link", "set", f"{ns}h", "master", bridge)
            _ip("link", "set", f"{ns}h", "up")
            _ip("link", "set", f"{ns}p", "netns", ns)
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            _ip("netns", "exec", ns, "ip", "addr", "add", f"{addr}/24", "dev", f"{ns}p")
            _ip("netns", "exec", ns, "ip", "link", "set", f"{ns}p", "up")
            _ip("netns", "exec", ns, "ip", "route", "add", "default", "via", f"10.233.{octet}.1")
            cfg = d / f"sshd_config_{k}"
            cfg.write_text(
                f"Port {port}\nListenAddress {addr}\nHostKey {d / 'host'}\n"
                f"PidFile {d / f'sshd{k}.pid'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                "Subsystem sftp internal-sftp\n"
            )
            Path("/run/sshd").mkdir(exist_ok=True)
            sshd = shutil.which("sshd") or "/usr/sbin/sshd"
            log = d / f"sshd{k}.log"
            with log.open("wb") as lf:
                procs.append(
                    subprocess.Popen(
                        ["ip", "netns", "exec", ns, sshd, "-D", "-e", "-f", str(cfg)],
                        stdout=lf,
                        stderr=subprocess.STDOUT,
                    )
                )
            _wait_ssh(addr, port, procs[-1], log)
            addrs.append(addr)
        yield Hosts(addrs, port, d / "client", venv)
    finally:
        for p in procs:
            stop(p)
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


def _wait_ssh(addr: str, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    import socket
    import time

    t0 = time.monotonic()
    while True:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited; log tail:\n{log_tail(log)}")
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((addr, port)) == 0:
                return
        if time.monotonic() - t0 > 15:
            pytest.fail(f"sshd not reachable at {addr}:{port}; log tail:\n{log_tail(log)}")
        time.sleep(0.1)


def test_two_hosts_through_sshcluster_then_collect_over_scp(tmp_path: Path, hosts: Hosts) -> None:
    ssh = f'{{port: {hosts.port}, username: root, client_keys: ["{hosts.key}"], known_hosts: null}}'
    out = run_spec(
        f"""
name: two-hosts
backend: {{type: noop, options: {{runtime_s: 0.1}}}}
load: {{model: open, rate: 20/s, agents: {{hosts: [{hosts.addrs[0]}, {hosts.addrs[1]}],
  venv: "{hosts.venv}", ssh_options: {ssh}, workdir: "{tmp_path}/remote"}}}}
trial: {{duration: 2s}}
timeouts: {{status_interval: 0.1s}}
""",
        tmp_path,
    )
    assert out.status == "complete", out.trials
    tdir = out.run.path / "trials" / "p00-t00"
    info = json.loads((tdir / "trial.json").read_text())
    ev = read_trial_log(tdir)
    assert ev.filter(pl.col("stage") == "intended")["job"].n_unique() == 40
    assert set(ev["agent"].unique()) == {"agent-0", "agent-1"}
    ips = {a["address"].split("//")[1].rsplit(":", 1)[0] for a in info["agents"].values()}
    assert ips == set(hosts.addrs)  # one agent on each namespace
    for a in info["agents"].values():
        assert abs(a["clock_offset_ns"]) < 10_000_000 and a["clock_uncertainty_ns"] < 10_000_000
    exp = json.loads((out.run.path / "experiment.json").read_text())
    logs = exp["agents"]["logs"]["p00-t00"]
    assert {v["ssh_host"] for v in logs.values()} == set(hosts.addrs)
    # collect over scp: nothing new to merge, the copies land under RUN/agents/
    env = cli_env(tmp_path)
    r = subprocess.run(
        [str(BIN), "collect", str(out.run.path)], env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert ": 0 events merged" in r.stdout and f"{hosts.addrs[1]}:" in r.stdout
    for name in ("agent-0", "agent-1"):
        # the agent's log is in the trial log's format (events.arrows by default)
        copy = read_event_log(out.run.path / "agents" / name / "p00-t00.events.arrows")
        assert copy.height == ev.filter(pl.col("agent") == name).height


def test_agents_on_hosts_outlive_a_killed_controller_and_cancel(
    tmp_path: Path, hosts: Hosts
) -> None:
    """kill -9 of the controller (its SSH sessions to the hosts drop with it): the agents
    hear nothing more, stop submitting and cancel every job they had submitted."""
    import signal

    from gridbench.jobflow.run.outstanding import outstanding_jobs
    from test_agents import _agent_logs, _run_background, _wait_for

    ssh = f'{{port: {hosts.port}, username: root, client_keys: ["{hosts.key}"], known_hosts: null}}'
    proc, run, err = _run_background(
        f"""
name: controller-killed-hosts
backend: {{type: noop, options: {{runtime_s: 60}}}}
load: {{model: open, rate: 10/s, agents: {{hosts: [{hosts.addrs[0]}, {hosts.addrs[1]}],
  venv: "{hosts.venv}", ssh_options: {ssh}, workdir: "{tmp_path}/remote",
  heartbeat: 1s, on_controller_loss: cancel}}}}
trial: {{duration: 30s}}
timeouts: {{status_interval: 0.2s, drain: 5s, settle: 0s}}
""",
        tmp_path,
    )
    before = {p.pid for p in _dask_on(hosts)}
    try:
        logs = _wait_for(lambda: len(_agent_logs(run)) == 2 and _agent_logs(run), 90, "agents", err)
        paths = [
            Path(v["home"]) / v["path"] if not v["path"].startswith("/") else Path(v["path"])
            for v in logs.values()
        ]
        _wait_for(lambda: all(p.exists() and p.stat().st_size > 2000 for p in paths), 30, "events")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

        def cancelled_all() -> bool:
            evs = [read_event_log(p, store=False) for p in paths]
            return all(
                e.filter(pl.col("stage") == "cancelled").height > 0
                and outstanding_jobs(e).height == 0
                for e in evs
            )

        _wait_for(cancelled_all, 40, "the agents' cancels in their own logs")
        # ... then their scheduler, idle, closes, and every agent process on the hosts exits
        remote = [p for p in _dask_on(hosts) if p.pid not in before]
        assert remote, "no agent processes found on the hosts"
        _, alive = psutil.wait_procs(remote, timeout=HOSTS_IDLE_CLOSE_S + 40)
        assert not alive, [" ".join(p.cmdline())[:200] for p in alive]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in _dask_on(hosts):  # whatever the agents' sessions left running
            if p.pid not in before:
                with contextlib.suppress(psutil.Error):
                    p.kill()


def _dask_on(hosts: Hosts) -> list[psutil.Process]:
    """Dask processes serving the hosts' addresses (SSHCluster's scheduler and workers)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or ())
        if "distributed.cli.dask_spec" in line and any(a in line for a in hosts.addrs):
            out.append(p)
    return out
