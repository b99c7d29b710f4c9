"""Where the two ends of a measurement run (docs/net.md "Environments").

``process``  both ends in this process (the runner serves in threads; nothing is spawned)
``host``     a peer process on this host, over loopback
``lan``      a peer process in a network namespace of its own, joined to this one by a veth
             pair (``.1`` here, ``.2`` there, from ``lan.subnet``), optionally shaped by
             ``tc tbf`` on both ends (root only)
``relay``    a peer process on this host, reached through a forwarding process (socat, or
             gridbench's own forwarder which can add a delay): ``route`` puts one in front
             of each target

Everything started is written to the :class:`~gridbench.messaging.processes.ProcessBook`
first, so a killed run can be cleaned up; ``close`` undoes it all.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from gridbench.errors import BackendError, GridbenchError
from gridbench.hosts.launch import listening
from gridbench.messaging.model import Environment, NetSpec
from gridbench.messaging.processes import ProcessBook
from gridbench.messaging.transports.base import Address, PeerError
from gridbench.messaging.transports.peer_process import read_ready

LOOPBACK = "127.0.0.1"
#: seconds a forwarder may take to start listening
START_TIMEOUT = 15.0


class NetEnvironment:
    """An environment: where peers run, how clients reach them, and its teardown."""

    name: Environment = "host"
    in_process = False
    #: the peer side reads this host's files (a certificate, a log path given on its
    #: command line); False for a host of its own
    shares_files = True
    #: the path clients and the floor take to the peer side (a remote host's latency path
    #: is "latency path"); a figure measured on another path has no floor to compare with
    path_name = "direct"

    def __init__(self, spec: NetSpec, workdir: Path, book: ProcessBook) -> None:
        self.spec = spec
        self.workdir = workdir
        self.book = book
        self.peer_host = LOOPBACK
        self.floor_host = LOOPBACK
        self.notes: list[str] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._closed = False

    def _prefix(self) -> list[str]:
        """What runs a command on the peer side (``ip netns exec NS`` for lan)."""
        return []

    def spawn(self, argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        """Start ``argv`` on the peer side: stdin and stdout pipes, stderr to ``log``, in a
        session of its own, recorded in the process book."""
        if not argv:
            raise GridbenchError(f"{role}: empty command", where=f"environment {self.name}")
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with log.open("ab") as err:
                proc = subprocess.Popen(
                    [*self._prefix(), *argv],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    start_new_session=True,
                )
        except OSError as exc:
            raise GridbenchError(
                f"{role}: cannot start {argv[0]}: {exc.strerror or exc}",
                where=f"environment {self.name}",
                fix="install the program or check the PATH",
            ) from None
        self._procs.append(proc)
        self.book.register(proc, role)
        return proc

    def route(self, target: Address) -> Address:
        """What a client dials to reach ``target`` (identity but for ``relay``)."""
        return target

    def path(self, target: Address) -> Address:
        """What the native floor dials to reach ``target``: the network under the figures
        (beneath a relay; through a remote host's latency path, as its peers are)."""
        return target

    def start_server(
        self, argv_for: Callable[[int], list[str]], role: str, log: Path
    ) -> tuple[subprocess.Popen[bytes], int]:
        """Spawn a server that prints nothing (sockperf, iperf3) on a free port of the peer
        side and wait until it listens (up to 3 ports tried); the process and its port."""
        last = ""
        for _ in range(3):
            port = _free_port()
            proc = self.spawn(argv_for(port), role, log)
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                if listening(port, proc.pid):
                    return proc, port
                time.sleep(0.02)
            last = (
                f"exited with status {proc.returncode}"
                if proc.poll() is not None
                else f"did not listen within {START_TIMEOUT:g} s"
            )
            stop_process(proc)
        raise BackendError(
            f"{role}: the server {last}\n{log_tail(log)}",
            where=f"environment {self.name}",
            fix=f"see {log}",
        )

    def close(self) -> None:
        """Stop everything started here (idempotent, best effort; errors go to notes)."""
        if self._closed:
            return
        self._closed = True
        for proc in reversed(self._procs):
            err = stop_process(proc)
            if err:
                self.notes.append(err)
        self._teardown()

    def _teardown(self) -> None:
        """Remove what the environment built (namespaces, links)."""


def stop_process(proc: subprocess.Popen[bytes], grace: float = 3.0) -> str | None:
    """Close stdin, SIGTERM its process group, SIGKILL after ``grace`` s; an error text or
    None. Only ever called on a child we started (its own session: pgid == pid)."""
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    if proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                return f"process {proc.pid} ({proc.args!r}) did not stop after SIGKILL"
    # forked children (socat) may outlive their parent in the group
    _signal_group(proc.pid, signal.SIGKILL)
    return None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class ProcessEnv(NetEnvironment):
    """Both ends in this process: the runner serves in threads."""

    name: Environment = "process"
    in_process = True

    def spawn(self, argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        """Refused: nothing is spawned in the process environment."""
        raise GridbenchError(
            f"{role}: the process environment runs both ends in this process; nothing is "
            "spawned there",
            where="environment process",
            fix="serve in a thread (env.in_process is True), or use the host environment",
        )


class HostEnv(NetEnvironment):
    """A peer process on this host, over loopback."""

    name: Environment = "host"


class RelayEnv(NetEnvironment):
    """Peers on this host, each reached through a forwarder (socat or gridbench's)."""

    name: Environment = "relay"

    def __init__(self, spec: NetSpec, workdir: Path, book: ProcessBook) -> None:
        super().__init__(spec, workdir, book)
        self._routes: dict[Address, Address] = {}
        rs = spec.relay
        if rs.tool == "socat":
            self._socat = _need_program("socat", "socat")
            self.notes.append("relay: socat forwards each connection (TCP-LISTEN ... fork)")
        else:
            self.notes.append(
                f"relay: gridbench forwarder, {rs.delay:g} s held per chunk each way"
                + (f" (round trips grow by about {2 * rs.delay * 1000:g} ms)" if rs.delay else "")
            )
        self.notes.append("relay: the native floor is measured directly, beneath the relay")

    def route(self, target: Address) -> Address:
        """Start (once per target) a forwarder in front of ``target``; its address."""
        if target in self._routes:
            return self._routes[target]
        n = len(self._routes) + 1
        log = self.workdir / f"relay-{n}.log"
        if self.spec.relay.tool == "socat":
            via = self._start_socat(target, log)
        else:
            argv = [
                sys.executable,
                "-m",
                "gridbench.messaging.relay",
                "--listen",
                f"{LOOPBACK}:0",
                "--to",
                str(target),
                "--delay",
                repr(float(self.spec.relay.delay)),
            ]
            proc = self.spawn(argv, f"relay-{n}", log)
            try:
                via = Address(LOOPBACK, read_ready(proc, START_TIMEOUT))
            except PeerError as exc:
                raise PeerError(f"relay to {target}: {exc}\n{log_tail(log)}") from None
        self._routes[target] = via
        return via

    def _start_socat(self, target: Address, log: Path) -> Address:
        host = f"[{target.host}]" if ":" in target.host else target.host
        argv = [
            self._socat,
            f"TCP-LISTEN:0,bind={LOOPBACK},reuseaddr,fork",
            f"TCP:{host}:{target.port}",
        ]
        proc = self.spawn(argv, f"relay-socat-{len(self._routes) + 1}", log)
        # socat says nothing on stdout: its port is found by asking the kernel
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise PeerError(f"socat exited with status {proc.returncode}\n{log_tail(log)}")
            with contextlib.suppress(psutil.Error):
                for c in psutil.Process(proc.pid).net_connections("tcp"):
                    if c.status == psutil.CONN_LISTEN:
                        return Address(LOOPBACK, int(c.laddr.port))
            time.sleep(0.02)
        raise PeerError(f"socat did not listen within {START_TIMEOUT:g} s\n{log_tail(log)}")


class LanEnv(NetEnvironment):
    """A peer in a network namespace of its own, joined by a veth pair (root only)."""

    name: Environment = "lan"

    def __init__(self, spec: NetSpec, workdir: Path, book: ProcessBook) -> None:
        super().__init__(spec, workdir, book)
        lan = spec.lan
        if os.geteuid() != 0:
            raise GridbenchError(
                "the lan environment needs root (it makes a network namespace and a veth pair)",
                where="environment lan",
                fix="run gridbench as root, or remove lan from environments",
            )
        self._ip = _need_program("ip", "iproute2")
        self._tc = _need_program("tc", "iproute2") if lan.rate or lan.delay else "tc"
        if any(int(o) > 255 for o in lan.subnet.split(".")):
            raise GridbenchError(
                f"not an IPv4 prefix: {lan.subnet}", where="lan.subnet", fix="e.g. 10.247.0"
            )
        self.ns = f"gbn-{new_tag()}"
        self.host_dev, self.peer_dev = f"{self.ns}h", f"{self.ns}p"
        self.host_addr = f"{lan.subnet}.1"
        self.peer_host = self.floor_host = f"{lan.subnet}.2"
        self._built = False
        self._check_subnet_free(lan.subnet)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _prefix(self) -> list[str]:
        return [self._ip, "netns", "exec", self.ns]

    def _run(self, argv: list[str], fix: str = "check that ip and tc work here (root)") -> None:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GridbenchError(
                f"{' '.join(argv)}: {exc}", where="environment lan", fix=fix
            ) from None
        if r.returncode != 0:
            raise GridbenchError(
                f"{' '.join(argv)} failed: {r.stderr.strip() or r.returncode}",
                where="environment lan",
                fix=fix,
            )

    def _check_subnet_free(self, subnet: str) -> None:
        r = subprocess.run(
            [self._ip, "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False
        )
        for line in r.stdout.splitlines():
            if f" inet {subnet}." in line:
                raise GridbenchError(
                    f"the subnet {subnet}.0/24 is already used here: {line.split()[1]}",
                    where="lan.subnet",
                    fix="choose a free prefix (lan.subnet: 10.x.y), or run 'gridbench "
                    "cleanup' on a run that was killed",
                )

    def _build(self) -> None:
        ip, ns, h, p = self._ip, self.ns, self.host_dev, self.peer_dev
        lan = self.spec.lan
        self.book.resource("netns", ns)
        self._built = True
        self._run([ip, "netns", "add", ns])
        self._run([ip, "netns", "exec", ns, ip, "link", "set", "lo", "up"])
        self.book.resource("link", h, peer=p, netns=ns)
        self._run([ip, "link", "add", h, "type", "veth", "peer", "name", p])
        self._run([ip, "link", "set", p, "netns", ns])
        self._run([ip, "addr", "add", f"{self.host_addr}/24", "dev", h])
        self._run([ip, "link", "set", h, "up"])
        self._run([ip, "netns", "exec", ns, ip, "addr", "add", f"{self.peer_host}/24", "dev", p])
        self._run([ip, "netns", "exec", ns, ip, "link", "set", p, "up"])
        ends = (
            [self._tc, "qdisc", "add", "dev", h],
            [*self._prefix(), self._tc, "qdisc", "add", "dev", p],
        )
        if lan.delay:
            ms = f"{lan.delay * 1000:g}ms"
            rate = ["rate", lan.rate] if lan.rate else []
            for dev, cmd in zip((h, p), ends, strict=True):
                self.book.resource("qdisc", dev, qdisc="netem", netns=ns if dev == p else "")
                self._run(
                    [*cmd, "root", "netem", "delay", ms, *rate],
                    fix="netem not available: a delay cannot be added here; remove lan.delay "
                    "(or load the sch_netem kernel module)",
                )
            self.notes.append(f"lan: netem adds {ms} each way on both ends")
        elif lan.rate:
            tbf = ["root", "tbf", "rate", lan.rate, "burst", "256kb", "latency", "100ms"]
            for dev, cmd in zip((h, p), ends, strict=True):
                self.book.resource("qdisc", dev, qdisc="tbf", netns=ns if dev == p else "")
                self._run([*cmd, *tbf])
        shaped = f", tc tbf {lan.rate} on both ends" if lan.rate and not lan.delay else ""
        self.notes.append(
            f"lan: namespace {ns}, veth {h} {self.host_addr} <-> {p} {self.peer_host}"
            + (shaped or (", unshaped" if not lan.delay else ""))
        )
        if not lan.delay:
            self.notes.append("lan: no delay added (a veth pair has no propagation delay)")

    def _teardown(self) -> None:
        if not self._built:
            return
        self._built = False
        ip = self._ip
        for argv in ([ip, "netns", "delete", self.ns], [ip, "link", "delete", self.host_dev]):
            exists = (
                self.ns in _netns_names(ip)
                if argv[1] == "netns"
                else subprocess.run(
                    [ip, "link", "show", "dev", self.host_dev], capture_output=True, check=False
                ).returncode
                == 0
            )
            if not exists:
                continue
            r = subprocess.run(argv, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                self.notes.append(f"lan teardown: {' '.join(argv)}: {r.stderr.strip()}")


def _free_port() -> int:
    """A port free on loopback here (for a namespace of our own, any port is free)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _netns_names(ip: str) -> set[str]:
    r = subprocess.run([ip, "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def log_tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a peer's or server's log (for error messages)."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _need_program(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise GridbenchError(
            f"{name} is not installed",
            where=f"PATH={os.environ.get('PATH', '')}",
            fix=f"install the Debian package {package} (apt-get install {package})",
        )
    return path


def new_tag() -> str:
    """A short random tag for names of one run's namespaces and links."""
    return secrets.token_hex(4)
