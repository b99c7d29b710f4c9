"""The ``remote`` environment: the peers on an inventory host, the clients here (docs/net.md,
"Across hosts").

Every peer and floor server is started on the host over SSH (``gridbench.hosts.remote``,
with the host's ``ssh`` options and ``python``) and stopped by closing its stdin; the local
SSH process is what the process book records, so ``gridbench cleanup`` after a kill -9
ends the connection and, with it, the peer. Servers that say nothing (sockperf, iperf3)
run under ``gridbench.hosts.launch`` there, which prints ``READY`` once they listen.

When the host has a latency path (``latency:`` in the inventory, a lab's ``--latency
HOST:DELAY``), every port the clients dial is reached through a Toxiproxy proxy opened for
it, and the native floor dials the same proxies: the figures and their floor share the path.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from gridbench.errors import BackendError, GridbenchError
from gridbench.hosts.inventory import Host, load_inventory
from gridbench.hosts.latency import close_proxy, open_path
from gridbench.hosts.remote import UNREACHABLE, remote_argv
from gridbench.hosts.sampling.spec import LOCAL
from gridbench.messaging.environments import (
    START_TIMEOUT,
    NetEnvironment,
    log_tail,
    new_tag,
    stop_process,
)
from gridbench.messaging.model import Environment, NetSpec
from gridbench.messaging.processes import ProcessBook
from gridbench.messaging.transports.base import Address, PeerError
from gridbench.messaging.transports.peer_process import read_ready

#: where a server that picks no port of its own is told to listen on a host of its own
_PORTS = (20_000, 60_000)


class RemoteEnv(NetEnvironment):
    """Peers on an inventory host, over SSH; clients here."""

    name: Environment = "remote"

    def __init__(self, spec: NetSpec, workdir: Path, book: ProcessBook) -> None:
        super().__init__(spec, workdir, book)
        assert spec.remote is not None  # the spec's check
        self.inventory = Path(spec.remote.inventory).resolve()
        try:
            inv = load_inventory(self.inventory)
        except OSError as exc:
            raise GridbenchError(
                f"cannot read the inventory {self.inventory}: {exc.strerror or exc}",
                where="remote.inventory",
                fix="give the hosts file (a lab's: /run/gridbench-lab/NAME/inventory.yaml)",
            ) from None
        self.host: Host = inv.host(spec.remote.peer, "remote.peer")
        self._check(self.host)
        # the scaling series' client hosts (None: this host, 'local')
        self.client_hosts: dict[str, Host | None] = {
            n: (None if n == LOCAL and n not in inv.hosts else inv.host(n, "remote.clients"))
            for n in spec.remote.clients
        }
        for name, client in self.client_hosts.items():
            if client is not None and name != self.host.name:
                self._check(client)
        self.peer_host = self.floor_host = self.host.address
        # a lab's hosts are namespaces of this machine: same files, same programs
        self.shares_files = self.host.netns is not None
        self._tag = new_tag()
        self._proxies: dict[Address, Address] = {}
        self.notes.append(
            f"remote: peers on {self.host.name} ({self.host.address}) over SSH with "
            f"{self.host.interpreter}; clients on this host"
        )
        if self.host.latency is not None:
            self.path_name = "latency path"
            self.notes.append(
                f"remote: every port reached through toxiproxy at {self.host.latency.api}, "
                f"{self.host.latency.delay_ms:g} ms added per round trip; the floor takes "
                "the same path"
            )

    def _check(self, host: Host) -> None:
        """Log in once and run the host's python (``gridbench hosts check``'s steps), so an
        unreachable host is one error before anything starts; the clock offset goes into
        the notes (round trips are timed on this host's clock alone: it only informs)."""
        import asyncio

        from gridbench.hosts.check import check_host

        row = asyncio.run(check_host(host))
        for step in row.steps:
            if not step.ok and step.name in ("ssh", "python"):
                raise BackendError(
                    f"host {host.name} ({host.address}): {step.name}: {step.detail}",
                    where="remote.peer" if host is self.host else "remote.clients",
                    fix=step.fix or f"gridbench hosts check {self.inventory}",
                )
        if row.offset_ms is not None and row.bound_ms is not None:
            self.notes.append(
                f"remote: {host.name}'s clock is {row.offset_ms:+.3f} ms ± "
                f"{row.bound_ms:.3f} ms from this host's (not used: round trips are timed here)"
            )

    def _there(self, argv: list[str], host: Host | None = None) -> list[str]:
        """``argv`` as ``host`` (default: the peer's) runs it: its python for ours, a
        program by name (found on the host's PATH) unless the host is a namespace of this
        machine (a lab's), with this machine's files."""
        host = host or self.host
        # ours anywhere in the line (a launcher's command too) runs with the host's python
        argv = [host.interpreter if a == sys.executable else a for a in argv]
        head, *rest = argv
        if host.netns is None and "/" in head:
            return [Path(head).name, *rest]
        return argv

    def spawn_on(self, name: str, argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        """Start ``argv`` on client host ``name`` of ``remote.clients`` (``local``: here)."""
        host = self.client_hosts[name]
        if host is None:
            return NetEnvironment.spawn(self, argv, role, log)
        local = remote_argv(self.inventory, host.name, self._there(argv, host))
        return NetEnvironment.spawn(self, local, role, log)

    def spawn(self, argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        """Start ``argv`` on the host (over SSH), recorded in the process book."""
        if not argv:
            raise GridbenchError(f"{role}: empty command", where=f"environment {self.name}")
        local = remote_argv(self.inventory, self.host.name, self._there(argv))
        return super().spawn(local, role, log)

    def start_server(
        self, argv_for: Callable[[int], list[str]], role: str, log: Path
    ) -> tuple[subprocess.Popen[bytes], int]:
        """A silent server on the host under ``gridbench.hosts.launch`` (which says READY
        once the port listens there); up to 3 ports tried."""
        last = ""
        for _ in range(3):
            port = random.randint(*_PORTS)  # free there is only known there
            launch = [sys.executable, "-m", "gridbench.hosts.launch", "--port", str(port)]
            launch += ["--timeout", f"{START_TIMEOUT:g}", "--", *self._there(argv_for(port))]
            proc = self.spawn(launch, role, log)
            try:
                return proc, read_ready(proc, START_TIMEOUT + 15)
            except PeerError as exc:
                last = str(exc)
                stop_process(proc)
                if proc.returncode == UNREACHABLE:
                    break  # another port will not help
        raise BackendError(
            f"{role} on {self.host.name}: {last}\n{log_tail(log)}",
            where=f"environment {self.name}",
            fix=f"see {log}; 'gridbench hosts check {self.inventory}' checks the host",
        )

    def route(self, target: Address) -> Address:
        """Through the host's latency path when it has one (a proxy per port)."""
        return self.path(target)

    def path(self, target: Address) -> Address:
        """The proxy on the host's latency path in front of ``target`` (opened once)."""
        lat = self.host.latency
        if lat is None:
            return target
        if target not in self._proxies:
            name = f"gridbench-{self._tag}-{target.port}"
            self.book.resource("toxiproxy", name, api=lat.api)
            listen = open_path(lat, name, str(target))
            host, _, port = listen.rpartition(":")
            self._proxies[target] = Address(host, int(port))
        return self._proxies[target]

    def _teardown(self) -> None:
        lat = self.host.latency
        if lat is None:
            return
        for target in list(self._proxies):
            try:
                close_proxy(lat.api, f"gridbench-{self._tag}-{target.port}")
            except GridbenchError as exc:
                self.notes.append(f"remote teardown: {exc.message}")
        self._proxies.clear()
