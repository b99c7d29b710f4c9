"""The Dask cluster of one trial's agents: started (a scheduler in the controller and one
``dask worker`` process per agent, see :mod:`gridbench.jobflow.run.agent_processes`; an SSHCluster
over the hosts with their venv's python) or connected (a scheduler's address), with
gridbench's version checked on every worker, and the clock-offset probe."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gridbench import __version__
from gridbench.errors import GridbenchError
from gridbench.jobflow.run import clock_sync
from gridbench.jobflow.run.agent_processes import CLOSE_WAIT_S, LocalAgents, TlsFiles
from gridbench.jobflow.run.agent_worker import agent_identity

if TYPE_CHECKING:
    from gridbench.jobflow.specbase.load import AgentsBlock

T = TypeVar("T")
JOIN_TIMEOUT_S = 60.0  # local agents' workers must have joined the scheduler by then
HOSTS_IDLE_CLOSE_S = 30.0  # an SSHCluster's scheduler with no trial this long closes


class AgentPool:
    """The Dask cluster of one trial's agents and its asynchronous client. ``log_dir``:
    where local agents' workers log (``<log_dir>/<agent>/worker.log``)."""

    def __init__(self, block: AgentsBlock, log_dir: Path | None = None) -> None:
        self.block = block
        self.log_dir = log_dir
        self.cluster: Any = None
        self.scheduler: Any = None  # distributed.Scheduler of local agents
        self.local: LocalAgents | None = None
        self.security: Any = None  # distributed.Security of local agents (TLS); else default
        self.tls: TlsFiles | None = None
        self.client: Any = None  # distributed.Client, asynchronous
        self.addresses: list[str] = []
        self.names: list[str] = []  # agent name of each address
        self._dask_level: int | None = None  # Dask's log level before a local scheduler
        self.released = time.monotonic()  # when its last trial ended (the scheduler idles)
        self.identity: dict[str, dict[str, Any]] = {}
        self.ssh_host: dict[str, str] = {}  # worker address -> its entry in hosts

    async def __aenter__(self) -> AgentPool:
        try:
            await self._connect()
            self._name_workers()
            await self._check_versions()
        except BaseException:  # nothing started is left running: scheduler, workers, client
            if self.local is not None:
                self.local.terminate()  # no agent runs yet: nothing to wait for
            await self.__aexit__()
            raise
        self.ssh_host = _ssh_hosts(self.block.hosts or [], self.addresses)
        return self

    async def _connect(self) -> None:
        import distributed

        dd: Any = distributed  # its constructors are untyped (awaitable when asynchronous)
        b = self.block
        try:
            if b.processes:
                address = await self._start_local(b.processes)
            elif b.hosts:
                self.cluster = await dd.SSHCluster(
                    [b.hosts[0], *b.hosts],
                    connect_options=dict(b.ssh_options),
                    # the workers' HTTP (/health, /metrics) unauthenticated: loopback only
                    worker_options={"nthreads": 1, "dashboard_address": "127.0.0.1:0"},
                    # the scheduler on the first host closes when no trial has run for a
                    # while (its workers then exit): a killed controller leaves nothing
                    # running there once its agents have cancelled
                    scheduler_options={
                        "port": 0,
                        "dashboard_address": None,
                        "idle_timeout": HOSTS_IDLE_CLOSE_S,
                    },
                    remote_python=f"{b.venv}/bin/python",
                    asynchronous=True,
                )
                address = self.cluster.scheduler_address
            else:
                address = str(b.scheduler)
            self.client = await dd.Client(
                address, asynchronous=True, timeout="20s", security=self.security
            )
            await self.client.wait_for_workers(b.processes or len(b.hosts or ()) or 1)
        except GridbenchError:
            raise
        except Exception as exc:
            raise GridbenchError(
                f"cannot start or reach the agents' Dask cluster: {type(exc).__name__}: {exc}",
                where="load.agents",
                fix="check the hosts (ssh reachable, venv path), or that the scheduler "
                "address is right and its workers are up",
            ) from None

    def _name_workers(self) -> None:
        """Addresses in agent order: local workers are named after their agent (whose env
        they started with); others are agent-0, agent-1, ... in address order."""
        workers = self.client.scheduler_info()["workers"]
        self.addresses = sorted(workers)
        self.names = [f"agent-{k}" for k in range(len(self.addresses))]
        if self.local is not None:
            index = {n: k for k, n in enumerate(self.local.names)}
            self.addresses.sort(key=lambda a: index[str(workers[a]["name"])])
            self.names = [str(workers[a]["name"]) for a in self.addresses]

    async def _start_local(self, n: int) -> str:
        """A scheduler here and ``n`` agent workers; its address once all have joined."""
        import distributed

        dd: Any = distributed
        # the scheduler runs in the controller's process: its INFO lines are not the user's
        self._dask_level = logging.getLogger("distributed").level
        logging.getLogger("distributed").setLevel(logging.ERROR)
        # TLS with a throw-away certificate: the loopback port is open to every local user
        self.security = dd.security.Security.temporary()
        self.tls = TlsFiles(self.security.tls_ca_file, self.security.tls_worker_key)
        self.scheduler = await dd.Scheduler(
            host="127.0.0.1",
            port=0,
            protocol="tls",
            security=self.security,
            dashboard=False,
            dashboard_address="127.0.0.1:0",
            # its scratch (lock files) in the private folder, not TMPDIR/dask-scratch-space
            # where every run left it (found by the fault matrix); removed with the keys
            local_directory=str(self.tls.scratch),
        )
        self.local = LocalAgents([f"agent-{k}" for k in range(n)], self.log_dir)
        self.local.start(self.scheduler.address, self.block.env, self.tls)
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while len(self.scheduler.workers) < n:
            self.local.check()
            if time.monotonic() > deadline:
                tails = "\n".join(f"{m}: {self.local.tail(m, 600)}" for m in self.local.names)
                raise GridbenchError(
                    f"{n - len(self.scheduler.workers)} of {n} agent workers did not join "
                    f"within {JOIN_TIMEOUT_S:g}s:\n{tails}",
                    where="load.agents.processes",
                    fix="see the workers' logs above (is the machine overloaded?)",
                )
            await asyncio.sleep(0.05)
        return str(self.scheduler.address)

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()
        if self.scheduler is not None:  # its workers close with it, then exit
            with contextlib.suppress(Exception):
                await self.scheduler.close()
        if self.local is not None:
            await asyncio.to_thread(self.local.wait, CLOSE_WAIT_S + 5)
        if self.tls is not None:
            self.tls.remove()
        if self._dask_level is not None:
            logging.getLogger("distributed").setLevel(self._dask_level)

    async def _check_versions(self) -> None:
        assert self.client is not None
        try:
            ids = await self.client.run(agent_identity)
        except Exception as exc:  # e.g. gridbench is not importable on a worker
            raise GridbenchError(
                f"an agent cannot run gridbench: {type(exc).__name__}: {exc}",
                where="load.agents",
                fix=f"install gridbench {__version__} into the venv the agents run",
            ) from None
        for addr, ident in sorted(ids.items()):
            if ident.get("version") != __version__:
                raise GridbenchError(
                    f"the agent on {ident.get('host')} ({addr}) runs gridbench "
                    f"{ident.get('version')}, the controller {__version__}",
                    where=f"load.agents ({ident.get('host')})",
                    fix=f"install gridbench {__version__} into {ident.get('python')}'s "
                    "venv on that host (pip install gridbench==" + __version__ + ")",
                )
        self.identity = ids

    async def reusable(self) -> bool:
        """Whether the next trial can run on this cluster: every agent's worker still there
        and idle (a lost or hung agent's worker would hold the next trial's share)."""
        if self.client is None:
            return False
        if self.block.hosts and time.monotonic() - self.released > HOSTS_IDLE_CLOSE_S / 2:
            return False  # its scheduler may close (idle) while the next trial sets up
        try:
            async with asyncio.timeout(10):
                alive = set(await self.client.nthreads())
                busy = await self.client.processing()
        except Exception:
            return False
        return alive == set(self.addresses) and not any(busy.get(a) for a in self.addresses)

    async def call(self, addr: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the event loop of the worker at ``addr``."""
        assert self.client is not None
        out = await self.client.run(fn, *args, workers=[addr], on_error="raise")
        result: T = out[addr]
        return result

    async def offset(self, addr: str, probes: int = clock_sync.DEFAULT_PROBES) -> Any:
        """The NTP-style offset estimate of the agent at ``addr``."""

        async def exchange() -> tuple[int, int]:
            return await self.call(addr, clock_sync.agent_half)

        return await clock_sync.measure(exchange, probes)


def _ssh_hosts(hosts: list[str], addresses: list[str]) -> dict[str, str]:
    """Which ``hosts`` entry each worker runs on (by the IP its address shows)."""
    by_ip: dict[str, str] = {}
    for h in hosts:
        with contextlib.suppress(OSError):
            by_ip[socket.gethostbyname(h)] = h
    out = {}
    for a in addresses:
        ip = a.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
        if ip in by_ip:
            out[a] = by_ip[ip]
    return out


class AgentPools:
    """The agents' clusters of one experiment: started at the first trial that needs one
    and kept for the next (starting workers takes seconds), restarted when an agent was lost
    or hangs; :meth:`close` ends them all."""

    def __init__(self) -> None:
        self._pools: dict[str, AgentPool] = {}

    async def get(self, block: AgentsBlock, log_dir: Path | None) -> AgentPool:
        """The running cluster of ``block`` (started, or restarted, as needed)."""
        key = block.model_dump_json()
        pool = self._pools.get(key)
        if pool is not None and not await pool.reusable():
            del self._pools[key]
            await pool.__aexit__()
            pool = None
        if pool is None:
            pool = await AgentPool(block, log_dir).__aenter__()
            self._pools[key] = pool
        return pool

    async def close(self) -> None:
        """End every cluster (local agents' workers exit once their scheduler closes)."""
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.__aexit__()
