"""The agents' connectivity check (run/agent_check.py, ``gridbench check``): real local agent
processes against the noop backend and the reference grid, real hosts (network namespaces
with their own sshd) with one that does not resolve and one with no sshd, a venv with
another gridbench version, and a spec without agents."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench import __version__
from gridbench.errors import GridbenchError
from gridbench.jobflow.experiment.agent_check import STEP_NAMES, AgentCheck, check_agents
from gridbench.jobflow.reference import ReferenceGrid
from gridbench.jobflow.spec.load import load_spec_text
from test_agents import grid  # noqa: F401  # the shared reference grid (module fixture)
from test_agents_hosts import Hosts, hosts  # noqa: F401  # the namespace hosts (module fixture)

PROCESSES = """
name: check-agents
backend: {backend}
load: {{model: open, rate: 1/s, agents: {{processes: 2}}}}
trial: {{duration: 1s}}
"""


def _check(text: str) -> list[AgentCheck]:
    spec, _ = load_spec_text(text)
    return asyncio.run(check_agents(spec, job_timeout_s=20))


def _all_ok(rows: list[AgentCheck]) -> None:
    for r in rows:
        assert r.ok, [(s.name, s.detail, s.fix) for s in r.steps]
        assert [s.name for s in r.steps] == [n for n in STEP_NAMES if n != "ssh"]


def _bound_ms(row: AgentCheck) -> float:
    step = row.step("clock offset")
    assert step is not None and " ms ± " in step.detail, row.steps
    return float(step.detail.split(" ± ")[1].split(" ms")[0])


def test_two_processes_against_noop() -> None:
    rows = _check(PROCESSES.format(backend="{type: noop, options: {runtime_s: 0.05}}"))
    assert [r.agent for r in rows] == ["agent-0", "agent-1"]
    _all_ok(rows)
    for r in rows:
        assert r.address.startswith("tls://127.0.0.1:")  # local agents speak TLS
        assert 0 < _bound_ms(r) < 50  # same machine: a small bound
        version = r.step("gridbench version")
        assert version is not None and f"gridbench {__version__}" in version.detail
        backend = r.step("backend on that host")
        assert backend is not None and backend.detail.startswith("noop: job ")


def test_two_processes_against_the_reference_grid(grid: ReferenceGrid) -> None:  # noqa: F811
    backend = f'{{type: reference, options: {{url: "{grid.url}"}}}}'
    rows = _check(PROCESSES.format(backend=backend) + "job: {runtime: 0.1s}\n")
    assert [r.agent for r in rows] == ["agent-0", "agent-1"]
    _all_ok(rows)
    for r in rows:
        assert 0 < _bound_ms(r) < 50
        step = r.step("backend on that host")
        assert step is not None and "done in" in step.detail, step


def test_a_failing_backend_fails_that_step_with_its_fix(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"  # discard port: nothing answers there
    rows = _check(PROCESSES.format(backend=f'{{type: reference, options: {{url: "{url}"}}}}'))
    assert len(rows) == 2
    for r in rows:
        step = r.step("backend on that host")
        assert step is not None and not step.ok and step.detail, r.steps
        version = r.step("gridbench version")
        assert version is not None and version.ok  # only the backend step failed


def test_a_spec_without_an_agents_block_is_a_clear_error() -> None:
    spec, _ = load_spec_text(
        "name: x\nbackend: {type: noop}\nload: {model: open, rate: 1/s, agents: 2}\n"
        "trial: {duration: 1s}\n"
    )
    with pytest.raises(GridbenchError) as err:
        asyncio.run(check_agents(spec))
    assert err.value.where == "load.agents" and "no agents block" in err.value.message
    assert err.value.fix


def _hosts_spec(h: Hosts, names: list[str], venv: Path, tmp: Path) -> str:
    ssh = f'{{port: {h.port}, username: root, client_keys: ["{h.key}"], known_hosts: null}}'
    return f"""
name: check-hosts
backend: {{type: noop, options: {{runtime_s: 0.05}}}}
load: {{model: open, rate: 1/s, agents: {{hosts: [{", ".join(names)}],
  venv: "{venv}", ssh_options: {ssh}, workdir: "{tmp}/remote"}}}}
trial: {{duration: 1s}}
"""


def test_hosts_one_unresolvable_one_without_sshd(hosts: Hosts, tmp_path: Path) -> None:  # noqa: F811
    no_sshd = hosts.addrs[0].rsplit(".", 1)[0] + ".1"  # this host on the bridge: no sshd there
    names = [hosts.addrs[0], "no-such-host.invalid", hosts.addrs[1], no_sshd]
    text = _hosts_spec(hosts, names, hosts.venv, tmp_path)
    rows = _check(text)
    by_host = {r.host: r for r in rows}
    assert [r.host for r in rows] == names  # in the spec's order
    for good in hosts.addrs:
        r = by_host[good]
        assert r.ok, [(s.name, s.detail) for s in r.steps]
        assert [s.name for s in r.steps] == list(STEP_NAMES)
        assert r.agent.startswith("agent-") and good in r.address
        assert _bound_ms(r) < 50
    for bad in ("no-such-host.invalid", no_sshd):
        r = by_host[bad]
        assert not r.ok and r.agent == "-" and [s.name for s in r.steps] == ["ssh"]
        assert f"{bad}: cannot log in" in r.steps[0].detail, r.steps[0]
        assert "sshd" in r.steps[0].fix
    # the CLI prints the agents' table and fails
    spec = tmp_path / "hosts.yaml"
    spec.write_text(text)
    out = subprocess.run(
        [str(BIN), "check", str(spec)],
        env=cli_env(tmp_path / "results"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode != 0, out.stdout + out.stderr
    assert "agents: hosts" in out.stdout and "no-such-host.invalid" in out.stdout
    assert "FAILED" in out.stdout and out.stdout.count("agent-") == 2, out.stdout


def test_a_host_with_another_gridbench_version(hosts: Hosts, tmp_path: Path) -> None:  # noqa: F811
    venv = tmp_path / "old-venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\necho 0.0.1\n")  # what an old install would print
    python.chmod(0o755)
    rows = _check(_hosts_spec(hosts, [hosts.addrs[0]], venv, tmp_path))
    assert len(rows) == 1
    (r,) = rows
    assert [(s.name, s.ok) for s in r.steps] == [("ssh", True), ("gridbench version", False)]
    assert f"runs gridbench 0.0.1, the controller {__version__}" in r.steps[1].detail
    assert f"gridbench=={__version__}" in r.steps[1].fix


def test_cli_check_prints_the_agents_table(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROCESSES.format(backend="{type: noop, options: {runtime_s: 0.05}}"))
    out = subprocess.run(
        [str(BIN), "check", str(spec)],
        env=cli_env(tmp_path / "results"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "connectivity check: noop" in text and "agents: processes" in text
    assert "agent-0" in text and "agent-1" in text
    assert "offset ± bound" in text and text.count(" ms ± ") == 2
    assert "FAILED" not in text
    # and a spec without agents prints no agents' table
    spec.write_text("name: x\nbackend: {type: noop}\nload: {rate: 1/s}\ntrial: {duration: 1s}\n")
    out = subprocess.run(
        [str(BIN), "check", str(spec)], env=cli_env(tmp_path / "results"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0 and "agents:" not in out.stdout, out.stdout
