"""Agents on two hosts of the session's lab (``gridbench lab up``: network namespaces on
one bridge, each with its own sshd and the lab's throw-away key; tests/lab_fixtures.py),
reached through Dask's SSHCluster, named from the lab's inventory as a user would; then
``gridbench collect`` over scp."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import psutil
import pytest

from conftest import BIN, cli_env
from gridbench.jobflow.events.trial_log import read_event_log, read_trial_log
from gridbench.jobflow.run.agent_pool import HOSTS_IDLE_CLOSE_S
from lab_fixtures import Lab
from test_runner import run_spec


@dataclass
class Hosts:
    addrs: list[str]
    port: int
    key: Path
    venv: Path
    names: list[str]  # the hosts' names in the inventory
    inventory: Path


@pytest.fixture(scope="module")
def hosts(lab: Lab) -> Hosts:
    """Hosts 1 and 2 of the session's lab (this controller is .1 on the lab's bridge)."""
    one, two = lab.host(1), lab.host(2)
    assert one.python and one.python.endswith("/bin/python"), one.python
    return Hosts(
        [one.address, two.address],
        int(one.ssh.get("port", 22)),
        lab.key,
        Path(one.python).parent.parent,  # the lab's hosts run this controller's venv
        [one.name, two.name],
        lab.inventory,
    )


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

    # the hosts by name from the lab's inventory (their addresses, ssh options with the
    # lab's known_hosts, and venv come from it), as a user names them
    proc, run, err = _run_background(
        f"""
name: controller-killed-hosts
backend: {{type: noop, options: {{runtime_s: 60}}}}
load: {{model: open, rate: 10/s, agents: {{inventory: "{hosts.inventory}",
  hosts: [{hosts.names[0]}, {hosts.names[1]}], workdir: "{tmp_path}/remote",
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
