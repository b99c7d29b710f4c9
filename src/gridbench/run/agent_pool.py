"""The Dask cluster of one trial's agents: started (a LocalCluster of one-thread processes,
an SSHCluster over the hosts with their venv's python) or connected (a scheduler's
address), with gridbench's version checked on every worker, and the clock-offset probe."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from gridbench import __version__
from gridbench.errors import GridbenchError
from gridbench.run import clock_sync
from gridbench.run.agent_worker import agent_identity

if TYPE_CHECKING:
    from gridbench.jobflow.loads.base import AgentsBlock

T = TypeVar("T")


class AgentPool:
    """The Dask cluster of one trial's agents and its asynchronous client."""

    def __init__(self, block: AgentsBlock) -> None:
        self.block = block
        self.cluster: Any = None
        self.client: Any = None  # distributed.Client, asynchronous
        self.addresses: list[str] = []
        self.identity: dict[str, dict[str, Any]] = {}
        self.ssh_host: dict[str, str] = {}  # worker address -> its entry in hosts

    async def __aenter__(self) -> AgentPool:
        import distributed

        dd: Any = distributed  # its constructors are untyped (awaitable when asynchronous)
        b = self.block
        try:
            if b.processes:
                self.cluster = await dd.LocalCluster(
                    n_workers=b.processes,
                    processes=True,
                    threads_per_worker=1,
                    dashboard_address=None,
                    asynchronous=True,
                    silence_logs=logging.ERROR,
                )
                address = self.cluster.scheduler_address
            elif b.hosts:
                self.cluster = await dd.SSHCluster(
                    [b.hosts[0], *b.hosts],
                    connect_options=dict(b.ssh_options),
                    worker_options={"nthreads": 1},
                    scheduler_options={"port": 0, "dashboard_address": None},
                    remote_python=f"{b.venv}/bin/python",
                    asynchronous=True,
                )
                address = self.cluster.scheduler_address
            else:
                address = str(b.scheduler)
            self.client = await dd.Client(address, asynchronous=True, timeout="20s")
            await self.client.wait_for_workers(b.processes or len(b.hosts or ()) or 1)
        except GridbenchError:
            raise
        except Exception as exc:
            await self.__aexit__()
            raise GridbenchError(
                f"cannot start or reach the agents' Dask cluster: {type(exc).__name__}: {exc}",
                where="load.agents",
                fix="check the hosts (ssh reachable, venv path), or that the scheduler "
                "address is right and its workers are up",
            ) from None
        self.addresses = sorted(self.client.scheduler_info()["workers"])
        await self._check_versions()
        self.ssh_host = _ssh_hosts(b.hosts or [], self.addresses)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()

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
