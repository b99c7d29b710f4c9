"""The agents' connectivity check (``gridbench check`` and the dashboard's agents page).

For a spec whose open load has ``load.agents`` as a block, one :class:`AgentCheck` per agent,
each a list of :class:`~gridbench.jobflow.experiment.check.Step`:

1. ``ssh`` (hosts only): the host answers over SSH with ``ssh_options`` and its venv's python
   prints gridbench's version. Checked per host before any cluster starts, so one host that
   is down is one failed row, and the others are still checked;
2. ``gridbench version``: the agent's, as :class:`AgentPool` reads it, equals the controller's;
3. ``clock offset``: the four-timestamp estimate (offset ± bound, ms) and the host's own sync
   state (chronyc);
4. ``backend on that host``: :func:`gridbench.jobflow.experiment.check.check` run on the
   agent itself, which builds that host's backend and submits one tiny job.

Every step is time-boxed: a host that hangs fails its step, it does not hang the check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench import __version__
from gridbench.errors import GridbenchError
from gridbench.jobflow.experiment.check import Step, check

if TYPE_CHECKING:
    from gridbench.jobflow.run.agent_pool import AgentPool
    from gridbench.jobflow.spec.model import ExperimentSpec
    from gridbench.jobflow.specbase.load import AgentsBlock

SSH_TIMEOUT_S = 20.0  # connect, log in and run python on one host
POOL_TIMEOUT_S = 90.0  # start the agents' cluster (local workers may take a while to join)
OFFSET_TIMEOUT_S = 10.0
BACKEND_SLACK_S = 15.0  # beyond the job's own time-out: building the backend, connecting
VERSION_CODE = "import gridbench; print(gridbench.__version__)"
#: The step names, in order: the columns of the CLI's and the dashboard's tables.
STEP_NAMES = ("ssh", "gridbench version", "clock offset", "backend on that host")


@dataclass
class AgentCheck:
    """One agent's row: its name (``-`` when it never started), host, Dask address, steps."""

    agent: str
    host: str
    address: str
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every step passed."""
        return all(s.ok for s in self.steps)

    def step(self, name: str) -> Step | None:
        """The step called ``name``, if it was run."""
        return next((s for s in self.steps if s.name == name), None)


def agents_block(spec: ExperimentSpec) -> AgentsBlock:
    """The spec's ``load.agents`` block, or a GridbenchError saying there is none."""
    block = spec.load.remote_agents
    if block is None:
        raise GridbenchError(
            "the spec's load has no agents block: there are no agents to check",
            where="load.agents",
            fix="give load.agents as a block (processes, hosts or scheduler; docs/spec.md), "
            "or use 'gridbench check' for the backend alone",
        )
    return block.resolved()  # inventory names -> addresses (docs/hosts.md)


async def check_agents(spec: ExperimentSpec, *, job_timeout_s: float = 20.0) -> list[AgentCheck]:
    """Check every agent of ``spec``'s ``load.agents`` block (see the module's docstring);
    a GridbenchError when the spec has no such block."""
    block = agents_block(spec)
    listed = list(block.hosts or [])
    rows: list[AgentCheck] = []
    ssh: dict[str, Step] = {}
    versions: dict[str, str] = {}
    if block.hosts:
        hosts = list(dict.fromkeys(block.hosts))
        answers = await asyncio.gather(*(_ssh(block, h) for h in hosts))
        for host, (step, version) in zip(hosts, answers, strict=True):
            ssh[host], versions[host] = step, version
        for host in hosts:
            if not ssh[host].ok:  # never started: the ssh step and what it failed on
                rows.append(AgentCheck("-", host, "", [ssh[host]]))
            elif versions[host] != __version__:
                # the pool would refuse it, and with it every host: this row says so alone
                bad = _mismatch(host, versions[host], block)
                rows.append(AgentCheck("-", host, "", [ssh[host], bad]))
        good = [h for h in block.hosts if ssh[h].ok and versions[h] == __version__]
        if not good:
            return rows
        block = block.model_copy(update={"hosts": good})
    with tempfile.TemporaryDirectory(prefix="gridbench-agent-check-") as tmp:
        rows += await _pool_rows(spec, block, ssh, Path(tmp), job_timeout_s)
    order = {h: k for k, h in reversed(list(enumerate(listed)))}  # a host's first place
    rows.sort(key=lambda r: (order.get(r.host, len(order)), r.agent))
    return rows


async def _ssh(block: AgentsBlock, host: str) -> tuple[Step, str]:
    """Log in to ``host`` and run its venv's python (no shell: one quoted argv); the step
    and the gridbench version it printed ("" if none)."""
    import asyncssh

    t0 = time.perf_counter()
    python = f"{block.venv}/bin/python"
    try:
        async with asyncio.timeout(SSH_TIMEOUT_S):
            async with asyncssh.connect(host, **block.ssh_options) as conn:
                r = await conn.run(shlex.join([python, "-c", VERSION_CODE]), check=False)
    except TimeoutError:
        return Step(
            "ssh",
            False,
            f"{host}: no answer within {SSH_TIMEOUT_S:g} s",
            "is the host up and its sshd reachable from here (firewall, port)?",
            time.perf_counter() - t0,
        ), ""
    except (OSError, asyncssh.Error) as exc:
        return Step(
            "ssh",
            False,
            f"{host}: cannot log in: {type(exc).__name__}: {exc}"[:400],
            "check the host name, that sshd runs there, and agents.ssh_options "
            "(port, username, client_keys, known_hosts)",
            time.perf_counter() - t0,
        ), ""
    took = time.perf_counter() - t0
    out = str(r.stdout or "").strip()
    if r.exit_status != 0 or not out:
        err = str(r.stderr or "").strip().splitlines()
        return Step(
            "ssh",
            False,
            f"{host}: {python} failed (exit {r.exit_status}): {err[-1] if err else ''}"[:400],
            f"install gridbench {__version__} into the venv {block.venv} on {host}",
            took,
        ), ""
    version = out.splitlines()[-1][:40]
    detail = f"{host}: logged in; {python} runs gridbench {version}"
    return Step("ssh", True, detail, seconds=took), version


def _mismatch(host: str, version: str, block: AgentsBlock) -> Step:
    return Step(
        "gridbench version",
        False,
        f"{host} runs gridbench {version}, the controller {__version__}",
        f"install gridbench {__version__} into {block.venv} on {host} "
        f"(pip install gridbench=={__version__})",
    )


async def _pool_rows(
    spec: ExperimentSpec,
    block: AgentsBlock,
    ssh: dict[str, Step],
    log_dir: Path,
    job_timeout_s: float,
) -> list[AgentCheck]:
    """Start (or connect) the agents' cluster and check each agent in it."""
    from gridbench.jobflow.run.agent_pool import AgentPool

    pool = AgentPool(block, log_dir if block.processes else None)
    try:
        async with asyncio.timeout(POOL_TIMEOUT_S):
            await pool.__aenter__()
    except (GridbenchError, TimeoutError) as exc:
        detail = (
            exc.message
            if isinstance(exc, GridbenchError)
            else f"the agents' cluster did not start within {POOL_TIMEOUT_S:g} s"
        )
        fix = (
            exc.fix
            if isinstance(exc, GridbenchError)
            else "is the machine overloaded? for a scheduler: are its workers up?"
        )
        failed = Step("gridbench version", False, detail[:1500], fix or "")
        return [AgentCheck("-", h, "", [*_ssh_steps(ssh, h), failed]) for h in _targets(block)]
    try:
        checks = [
            _one(pool, spec, addr, name, ssh, job_timeout_s)
            for addr, name in zip(pool.addresses, pool.names, strict=True)
        ]
        return list(await asyncio.gather(*checks))
    finally:
        await pool.__aexit__()


def _targets(block: AgentsBlock) -> list[str]:
    """What the rows of a cluster that did not start are named after."""
    if block.hosts:
        return list(dict.fromkeys(block.hosts))
    if block.processes:
        return [f"local process {k}" for k in range(block.processes)]
    return [str(block.scheduler)]


def _ssh_steps(ssh: dict[str, Step], host: str | None) -> list[Step]:
    return [ssh[host]] if host is not None and host in ssh else []


async def _one(
    pool: AgentPool,
    spec: ExperimentSpec,
    addr: str,
    name: str,
    ssh: dict[str, Step],
    job_timeout_s: float,
) -> AgentCheck:
    ident = pool.identity.get(addr, {})
    ssh_host = pool.ssh_host.get(addr)
    row = AgentCheck(name, ssh_host or str(ident.get("host") or "?"), addr)
    row.steps += _ssh_steps(ssh, ssh_host)
    version = ident.get("version")  # the pool refused a mismatch; say what was found
    row.steps.append(
        Step(
            "gridbench version",
            version == __version__,
            f"gridbench {version} ({ident.get('python')} on {ident.get('host')})",
            "" if version == __version__ else f"install gridbench {__version__} there",
        )
    )
    row.steps.append(await _offset(pool, addr))
    env = dict(pool.block.env.get(name, {})) if not pool.block.processes else {}
    row.steps.append(await _backend(pool, spec, addr, env, job_timeout_s))
    return row


async def _offset(pool: AgentPool, addr: str) -> Step:
    from gridbench.jobflow.run.agent_worker import host_clock_state

    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(OFFSET_TIMEOUT_S):
            est = await pool.offset(addr)
    except TimeoutError:
        return Step(
            "clock offset",
            False,
            f"the agent did not answer 32 clock probes within {OFFSET_TIMEOUT_S:g} s",
            "is the agent's host overloaded, or the network to it congested?",
        )
    except Exception as exc:
        return Step("clock offset", False, f"{type(exc).__name__}: {exc}"[:400], "")
    took = time.perf_counter() - t0
    detail = f"{est.offset_ns / 1e6:+.3f} ms ± {est.bound_ns / 1e6:.3f} ms"
    sync: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        async with asyncio.timeout(5.0):
            sync = await pool.call(addr, host_clock_state)
    if sync.get("available"):
        state = "synchronised" if sync.get("synchronised") else "NOT synchronised"
        detail += f"; chrony: {state}, stratum {sync.get('stratum')}"
    elif sync:
        detail += f"; chrony: unavailable ({str(sync.get('reason'))[:80]})"
    return Step("clock offset", True, detail, seconds=took)


def agent_backend_check(
    spec: ExperimentSpec, job_timeout_s: float, env: dict[str, str]
) -> list[Step]:
    """On the agent: :func:`gridbench.jobflow.experiment.check.check` in its own event loop
    (a Dask task in the worker's thread, as a trial's share runs), with the agent's ``env``
    set first."""
    os.environ.update(env)
    return asyncio.run(check(spec, job_timeout_s=job_timeout_s))


async def _backend(
    pool: AgentPool, spec: ExperimentSpec, addr: str, env: dict[str, str], job_timeout_s: float
) -> Step:
    assert pool.client is not None
    t0 = time.perf_counter()
    fut = pool.client.submit(
        agent_backend_check,
        spec,
        job_timeout_s,
        env,
        workers=[addr],
        allow_other_workers=False,
        pure=False,
    )
    limit = job_timeout_s + spec.timeouts.submit + BACKEND_SLACK_S
    try:
        async with asyncio.timeout(limit):
            steps: list[Step] = await fut
    except TimeoutError:
        with contextlib.suppress(Exception):
            await fut.cancel()
        return Step(
            "backend on that host",
            False,
            f"no answer from the agent's backend check within {limit:g} s",
            "run 'gridbench check SPEC' on that host to see which step hangs",
            time.perf_counter() - t0,
        )
    except Exception as exc:
        return Step(
            "backend on that host",
            False,
            f"the check failed on the agent: {type(exc).__name__}: {exc}"[:400],
            "run 'gridbench check SPEC' on that host",
            time.perf_counter() - t0,
        )
    took = time.perf_counter() - t0
    bad = next((s for s in steps if not s.ok), None)
    if bad is not None:
        return Step("backend on that host", False, f"{bad.name}: {bad.detail}", bad.fix, took)
    return Step(
        "backend on that host", True, f"{spec.backend.type}: {steps[-1].detail}", seconds=took
    )
