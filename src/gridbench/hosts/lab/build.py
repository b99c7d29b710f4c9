"""``gridbench lab up|status|down``: N hosts on this machine (docs/hosts.md).

Each host is a network namespace (``gbl-NAME-K``) joined to a Linux bridge (``gblNAME``,
the controller's side, ``.1`` of a private /24 the lab picks free) by a veth pair, with its
own address (``.K+1``), its own sshd (a throw-away host key; a throw-away client key pair
in the lab's folder) and node_exporter on ``ADDR:9100``. ``--rate`` shapes each host's link
both ways with ``tc tbf``; ``--latency HOST[:PORTS]:DELAY`` puts Toxiproxy (in a namespace
of its own, ``.254``) on those paths, its round trip grown by DELAY. The inventory written
to the lab's folder names every host for the families.

Every resource is written to the lab's book before it is made (:mod:`.book`); everything
the lab runs runs inside its namespaces, so ``lab down`` stops exactly those processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gridbench.errors import GridbenchError
from gridbench.hosts.inventory import Host, Inventory
from gridbench.hosts.lab.book import (
    LabBook,
    check_name,
    link_exists,
    netns_names,
    netns_pids,
    state_dir,
    tear_down,
)
from gridbench.hosts.latency import HostLatency, open_proxy
from gridbench.units import parse_duration

Say = Callable[[str], None]
SSH_PORT = 22
EXPORTER_PORT = 9100
TOXIPROXY_API_PORT = 8474
PROXY_PORT_BASE = 20001
#: what ``--latency HOST:DELAY`` proxies when it names no ports: ssh and iperf3
DEFAULT_PROXIED = (22, 5201)
READY_TIMEOUT_S = 15.0
MAX_HOSTS = 64
INVENTORY_FILE = "inventory.yaml"
RATE_RE = re.compile(r"^\d+(\.\d+)?(bit|kbit|mbit|gbit)$")


@dataclass(frozen=True)
class LatencyPath:
    """``--latency HOST[:PORT,...]:DELAY``: the host's ports reached through Toxiproxy."""

    host: str
    ports: tuple[int, ...]
    delay_ms: float


@dataclass
class LabPlan:
    """What ``lab up`` was asked for."""

    name: str = "lab"
    hosts: int = 3
    rate: str | None = None
    latency: list[LatencyPath] = field(default_factory=list)


def parse_latency(text: str) -> LatencyPath:
    """``lab-2:50ms`` or ``lab-2:22,7000:50ms``."""
    parts = text.split(":")
    fix = "HOST:DELAY or HOST:PORT,PORT:DELAY, e.g. lab-2:50ms or lab-2:7000:25ms"
    if len(parts) not in (2, 3) or not parts[0]:
        raise GridbenchError(f"not a latency path: {text!r}", where="--latency", fix=fix)
    try:
        delay = parse_duration(parts[-1])
        ports = tuple(int(p) for p in parts[1].split(",")) if len(parts) == 3 else DEFAULT_PROXIED
    except (ValueError, TypeError):
        raise GridbenchError(f"not a latency path: {text!r}", where="--latency", fix=fix) from None
    if not 0 < delay <= 10 or not all(0 < p < 65536 for p in ports):
        raise GridbenchError(
            f"{text!r}: the delay is above 0 and at most 10 s, ports 1 to 65535",
            where="--latency",
            fix=fix,
        )
    return LatencyPath(parts[0], ports, delay * 1000)


def check_rate(rate: str) -> str:
    if not RATE_RE.match(rate):
        raise GridbenchError(
            f"not a rate tc understands: {rate!r}",
            where="--rate",
            fix="a number and a unit: 20mbit, 500kbit, 1gbit",
        )
    return rate


# -- helpers -------------------------------------------------------------------------------
def _need_root(verb: str) -> None:
    if os.geteuid() != 0:
        raise GridbenchError(
            f"'gridbench lab {verb}' needs root: it makes network namespaces, a bridge and "
            "veth links, shapes them with tc and runs an sshd in each host",
            fix="run it as root (sudo gridbench lab ...)",
        )


def _program(name: str, package: str, extra: tuple[Path, ...] = ()) -> str:
    for p in extra:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        raise GridbenchError(
            f"{name} is not installed",
            where="gridbench lab up",
            fix=package,
        )
    return found


def toxiproxy_path() -> str:
    """Toxiproxy's server: $GRIDBENCH_TOXIPROXY, the project's .tools/bin, or the PATH."""
    env = os.environ.get("GRIDBENCH_TOXIPROXY")
    repo = Path(__file__).resolve().parents[4]
    extra = (Path(env),) if env else ()
    return _program(
        "toxiproxy-server",
        "run scripts/install-toxiproxy (it installs into the project's .tools/bin), or set "
        "GRIDBENCH_TOXIPROXY to the server's path",
        (*extra, repo / ".tools" / "bin" / "toxiproxy-server"),
    )


def _run(argv: list[str], fix: str = "check that ip and tc work here (root)") -> None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GridbenchError(f"{' '.join(argv)}: {exc}", where="gridbench lab", fix=fix) from None
    if r.returncode != 0:
        raise GridbenchError(
            f"{' '.join(argv)} failed: {r.stderr.strip() or r.returncode}",
            where="gridbench lab",
            fix=fix,
        )


def _used_prefixes() -> set[str]:
    """The x.y.z of every IPv4 address and route of this machine (and of other labs)."""
    used: set[str] = set()
    for argv in (["ip", "-o", "-4", "addr", "show"], ["ip", "-4", "route", "show", "table", "all"]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        used |= set(re.findall(r"\b(\d+\.\d+\.\d+)\.\d+", r.stdout))
    with contextlib.suppress(OSError):
        for state in state_dir("lab").parent.glob("*/state.json"):
            with contextlib.suppress(OSError, ValueError):
                used.add(str(json.loads(state.read_text()).get("subnet")))
    return used


def pick_subnet(name: str) -> str:
    """A free 10.247.X (/24) for lab ``name``: none of this machine's addresses or routes
    (nor another lab's) is in it."""
    used = _used_prefixes()
    start = int(hashlib.sha256(name.encode()).hexdigest(), 16) % 250
    for k in range(250):
        prefix = f"10.247.{(start + k) % 250 + 1}"
        if prefix not in used:
            return prefix
    raise GridbenchError(
        "no free /24 in 10.247.0.0/16 for the lab",
        fix="'gridbench lab down' labs no longer needed",
    )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _port_open(addr: str, port: int, timeout: float = 0.3) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((addr, port), timeout=timeout):
        return True
    return False


# -- up ------------------------------------------------------------------------------------
class _Builder:
    def __init__(self, plan: LabPlan, say: Say) -> None:
        self.plan = plan
        self.say = say
        self.ip = _program("ip", "apt-get install iproute2")
        self.tc = _program("tc", "apt-get install iproute2") if plan.rate else "tc"
        self.sshd = _program("sshd", "apt-get install openssh-server")
        self.keygen = _program("ssh-keygen", "apt-get install openssh-client")
        self.exporter = _program(
            "prometheus-node-exporter", "apt-get install prometheus-node-exporter"
        )
        self.toxiproxy = toxiproxy_path() if plan.latency else ""
        self.name = plan.name
        self.bridge = f"gbl{plan.name}"
        self.procs: list[tuple[str, subprocess.Popen[bytes], Path, str, int]] = []
        self.book: LabBook

    def host_name(self, k: int) -> str:
        return f"{self.name}-{k}"

    def ns(self, k: int | str) -> str:
        return f"gbl-{self.name}-{k}"

    def veth(self, k: int | str) -> str:
        return f"gbl{self.name}-{k}"

    def check_free(self) -> None:
        names = netns_names()
        wanted = [self.ns(k) for k in range(1, self.plan.hosts + 1)] + [self.ns("tp")]
        taken = [n for n in wanted if n in names]
        links = [self.bridge] + [self.veth(k) for k in range(1, self.plan.hosts + 1)]
        taken += [n for n in [*links, self.veth("tp")] if link_exists(n)]
        if taken:
            raise GridbenchError(
                f"these names are taken here: {', '.join(taken)}",
                where=f"lab {self.name}",
                fix="choose another --name (the lab never touches what it did not make)",
            )

    def up(self) -> Path:
        plan = self.plan
        self.check_free()
        subnet = pick_subnet(self.name)
        self.book = LabBook.create(self.name, subnet)
        self.subnet = subnet
        folder = self.book.folder
        self.say(f"lab {self.name}: {plan.hosts} hosts on {subnet}.0/24, state in {folder}")
        self._keys()
        self._bridge()
        for k in range(1, plan.hosts + 1):
            self._host(k)
        if plan.latency:
            self._proxy_ns()
        self._wait_ready()
        proxies = self._toxiproxy() if plan.latency else {}
        inv = self._inventory(proxies)
        self.book.data["complete"] = True
        self.book.data["inventory"] = str(inv)
        self.book.save()
        return inv

    def _keys(self) -> None:
        folder = self.book.folder
        procs = [
            subprocess.Popen(
                [
                    self.keygen,
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    f"gridbench-lab-{self.name}",
                    "-f",
                    str(folder / key),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for key in ("host_key", "client_key")
        ]
        for p in procs:
            _, err = p.communicate(timeout=30)
            if p.returncode != 0:
                raise GridbenchError(f"ssh-keygen failed: {err.decode(errors='replace')}")
        pub = (folder / "client_key.pub").read_text()
        (folder / "authorized_keys").write_text(pub)
        # sshd's privilege-separation folder (made by the sshd service; here maybe not yet)
        run_sshd = Path("/run/sshd")
        if not run_sshd.exists():
            self.book.record("dir", path=str(run_sshd))
            run_sshd.mkdir(mode=0o755)

    def _bridge(self) -> None:
        ip, br = self.ip, self.bridge
        self.book.record("bridge", name=br)
        _run([ip, "link", "add", br, "type", "bridge"])
        _run([ip, "addr", "add", f"{self.subnet}.1/24", "dev", br])
        _run([ip, "link", "set", br, "up"])

    def _netns(self, k: int | str, addr: str) -> None:
        ip, ns, veth = self.ip, self.ns(k), self.veth(k)
        self.book.record("netns", name=ns)
        _run([ip, "netns", "add", ns])
        self.book.record("link", name=veth)
        _run([ip, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        _run([ip, "link", "set", veth, "master", self.bridge, "up"])
        _run([ip, "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
        _run([ip, "-n", ns, "link", "set", "eth0", "up"])
        _run([ip, "-n", ns, "link", "set", "lo", "up"])
        # a gateway, as a real host has: tools that find their own address by the route out
        # (Dask's scheduler and workers) would otherwise take 127.0.0.1, unreachable from here
        _run([ip, "-n", ns, "route", "add", "default", "via", f"{self.subnet}.1"])

    def _start(self, k: int | str, role: str, argv: list[str], port: int, addr: str) -> None:
        log = self.book.folder / f"{self.host_name(k) if isinstance(k, int) else k}-{role}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [self.ip, "netns", "exec", self.ns(k), *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        # the namespace is already booked: its processes are stopped with it
        self.book.record("process", netns=self.ns(k), role=role, pid=proc.pid)
        self.procs.append((role, proc, log, addr, port))

    def _host(self, k: int) -> None:
        addr = f"{self.subnet}.{k + 1}"
        name = self.host_name(k)
        t0 = time.monotonic()
        self._netns(k, addr)
        if self.plan.rate:
            tbf = ["root", "tbf", "rate", self.plan.rate, "burst", "32kb", "latency", "50ms"]
            fix = "tc tbf failed: check the rate"
            _run([self.tc, "qdisc", "add", "dev", self.veth(k), *tbf], fix)
            _run([self.tc, "-n", self.ns(k), "qdisc", "add", "dev", "eth0", *tbf], fix)
        folder = self.book.folder
        conf = folder / f"{name}-sshd_config"
        conf.write_text(
            "\n".join(
                [
                    f"ListenAddress {addr}:{SSH_PORT}",
                    f"HostKey {folder / 'host_key'}",
                    f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PidFile none",
                    "UseDNS no",
                    "LogLevel ERROR",
                    "Subsystem sftp internal-sftp",
                    "",
                ]
            )
        )
        self._start(k, "sshd", [self.sshd, "-D", "-e", "-f", str(conf)], SSH_PORT, addr)
        self._start(
            k,
            "node_exporter",
            [self.exporter, f"--web.listen-address={addr}:{EXPORTER_PORT}"],
            EXPORTER_PORT,
            addr,
        )
        shaped = f", {self.plan.rate} each way (tc tbf)" if self.plan.rate else ""
        self.say(
            f"{name}: namespace {self.ns(k)}, {addr}{shaped}, sshd and node_exporter started "
            f"({time.monotonic() - t0:.1f} s)"
        )

    def _proxy_ns(self) -> None:
        addr = f"{self.subnet}.254"
        self._netns("tp", addr)
        argv = [self.toxiproxy, "-host", addr, "-port", str(TOXIPROXY_API_PORT)]
        self._start("tp", "toxiproxy", argv, TOXIPROXY_API_PORT, addr)
        self.say(f"toxiproxy: namespace {self.ns('tp')}, API on {addr}:{TOXIPROXY_API_PORT}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        waiting = list(self.procs)
        while waiting:
            role, proc, log, addr, port = waiting[0]
            if proc.poll() is not None:
                raise GridbenchError(
                    f"{role} on {addr} exited with status {proc.returncode}:\n{_tail(log)}",
                    where=str(log),
                    fix=f"read the log; 'gridbench lab down --name {self.name}' removes the rest",
                )
            if _port_open(addr, port):
                waiting.pop(0)
                continue
            if time.monotonic() > deadline:
                raise GridbenchError(
                    f"{role} on {addr}:{port} did not answer within {READY_TIMEOUT_S:g} s:\n"
                    f"{_tail(log)}",
                    where=str(log),
                    fix=f"read the log; 'gridbench lab down --name {self.name}' removes the rest",
                )
            time.sleep(0.02)
        self.say(f"ready: {len(self.procs)} services answer")

    def _toxiproxy(self) -> dict[str, dict[int, str]]:
        api = f"http://{self.subnet}.254:{TOXIPROXY_API_PORT}"
        hosts = {self.host_name(k): k for k in range(1, self.plan.hosts + 1)}
        proxies: dict[str, dict[int, str]] = {}
        port = PROXY_PORT_BASE
        for path in self.plan.latency:
            k = hosts[path.host]
            for upstream in path.ports:
                listen = f"{self.subnet}.254:{port}"
                pname = f"{path.host}-{upstream}"
                upstream_addr = f"{self.subnet}.{k + 1}:{upstream}"
                open_proxy(api, pname, listen, upstream_addr, path.delay_ms)
                proxies.setdefault(path.host, {})[upstream] = listen
                port += 1
            self.say(
                f"latency {path.delay_ms:g} ms round trip to {path.host} "
                f"(ports {', '.join(map(str, path.ports))}) through toxiproxy"
            )
        return proxies

    def _inventory(self, proxies: dict[str, dict[int, str]]) -> Path:
        folder = self.book.folder
        key = (folder / "host_key.pub").read_text().split()
        known = [f"{self.subnet}.{k + 1} {key[0]} {key[1]}" for k in range(1, self.plan.hosts + 1)]
        known += [
            f"[{a.split(':')[0]}]:{a.split(':')[1]} {key[0]} {key[1]}"
            for ports in proxies.values()
            for a in ports.values()
        ]
        (folder / "known_hosts").write_text("\n".join(known) + "\n")
        ssh = {
            "username": "root",
            "client_keys": [str(folder / "client_key")],
            "known_hosts": str(folder / "known_hosts"),
        }
        # any port of a host with a latency path: a family opens its own proxy there
        delays = {
            p.host: HostLatency(
                api=f"http://{self.subnet}.254:{TOXIPROXY_API_PORT}",
                listen=f"{self.subnet}.254",
                delay_ms=p.delay_ms,
            )
            for p in self.plan.latency
        }
        hosts = {}
        for k in range(1, self.plan.hosts + 1):
            name = self.host_name(k)
            addr = f"{self.subnet}.{k + 1}"
            hosts[name] = Host(
                name=name,
                address=addr,
                ssh=ssh,
                python=sys.executable,
                roles=["client", "server", "peer", "storage-client"],
                exporter=f"http://{addr}:{EXPORTER_PORT}/metrics",
                netns=self.ns(k),
                proxies=proxies.get(name, {}),
                latency=delays.get(name),
            )
        inv = Inventory(hosts=hosts)
        path = folder / INVENTORY_FILE
        from gridbench.specload import dump_yaml

        body = {"hosts": {n: h.model_dump(exclude={"name"}) for n, h in inv.hosts.items()}}
        path.write_text(
            f"# written by 'gridbench lab up --name {self.name}' (docs/hosts.md); "
            f"'gridbench lab down --name {self.name}' removes it\n" + dump_yaml(body)
        )
        self.book.data["hosts"] = {n: h.address for n, h in inv.hosts.items()}
        if proxies:
            self.book.data["toxiproxy"] = f"http://{self.subnet}.254:{TOXIPROXY_API_PORT}"
        return path


def lab_up(plan: LabPlan, say: Say) -> Path:
    """Make the lab ``plan`` describes; the path of its inventory. On any failure what was
    made is removed again (and the error raised)."""
    _need_root("up")
    check_name(plan.name)
    if not 1 <= plan.hosts <= MAX_HOSTS:
        raise GridbenchError(
            f"--hosts {plan.hosts}: a lab has 1 to {MAX_HOSTS} hosts", where="--hosts"
        )
    if plan.rate:
        check_rate(plan.rate)
    names = [f"{plan.name}-{k}" for k in range(1, plan.hosts + 1)]
    placeholder = Inventory(hosts={n: Host(name=n, address="-") for n in names})
    placeholder._origin = f"lab {plan.name} ({plan.hosts} hosts)"
    for path in plan.latency:
        placeholder.host(path.host, "--latency")
    builder = _Builder(plan, say)
    try:
        return builder.up()
    except BaseException:
        if hasattr(builder, "book"):
            say("failed: removing what was made")
            errs = tear_down(builder.book, lambda _: None)
            for e in errs:
                say(f"  left behind: {e}")
        raise


# -- status, down --------------------------------------------------------------------------
def lab_status(name: str) -> tuple[list[str], bool]:
    """Lines describing lab ``name`` and whether everything in it runs."""
    book = LabBook.open(check_name(name))
    if book is None:
        raise GridbenchError(
            f"no lab named {name!r} here", fix="'gridbench lab up --name NAME' makes one"
        )
    lines: list[str] = []
    ok = bool(book.data.get("complete"))
    if not ok:
        lines.append("incomplete: 'lab up' did not finish (killed?); 'lab down' removes it")
    names = netns_names()
    procs = [r for r in book.resources if r["kind"] == "process"]
    for r in book.resources:
        if r["kind"] != "netns":
            continue
        ns = r["name"]
        if ns not in names:
            lines.append(f"{ns}: namespace missing")
            ok = False
            continue
        pids = set(netns_pids(ns))
        roles = [p["role"] for p in procs if p["netns"] == ns]
        running = [p["role"] for p in procs if p["netns"] == ns and p["pid"] in pids]
        down = sorted(set(roles) - set(running))
        ok = ok and not down
        state = f"{', '.join(running) or 'nothing'} running" + (
            f"; NOT running: {', '.join(down)}" if down else ""
        )
        lines.append(f"{ns}: {state}")
    hosts = book.data.get("hosts") or {}
    for host, addr in hosts.items():
        lines.append(f"{host}: {addr}")
    if book.data.get("inventory"):
        lines.append(f"inventory: {book.data['inventory']}")
    return lines, ok


def lab_down(name: str, say: Say) -> list[str]:
    """Remove lab ``name`` (a complete one, or what a killed ``lab up`` made); the
    errors."""
    _need_root("down")
    book = LabBook.open(check_name(name))
    if book is None:
        raise GridbenchError(
            f"no lab named {name!r} here (nothing to remove)",
            where=str(state_dir(name)),
            fix="'gridbench lab status --name NAME' for another lab",
        )
    pid = book.data.get("pid")
    if not book.data.get("complete") and isinstance(pid, int) and pid != os.getpid():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 0)
            say(f"note: 'lab up' (pid {pid}) may still run: stop it first, or run down again")
    return tear_down(book, say)
