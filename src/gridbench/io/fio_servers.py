"""``fio --server`` on each client host of an io run (docs/io.md, "Many client hosts").

Each server runs under :mod:`gridbench.hosts.launch` (which prints ``READY PORT`` once fio
listens, and stops fio when its stdin closes), started as a local child process either in
the host's network namespace (``ip netns exec``: a lab host on this machine) or on the host
over SSH (:mod:`gridbench.hosts.remote`, the host's ``ssh`` options). Either way the
controller holds the child's stdin: when the controller dies, even by kill -9, the pipe
closes and the server stops.

Before a server is started its host, port and command are appended (and fsynced) to
``RUN/fio_servers.jsonl``, then its pid and start time; the child's environment names the
run folder and the host (:mod:`gridbench.store.spawned`), so ``gridbench cleanup RUN``
finds what a killed controller left and stops only that (:func:`cleanup_servers`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from gridbench.errors import BackendError
from gridbench.hosts.inventory import Host
from gridbench.io.clients_model import ClientsSpec
from gridbench.store.records import append_record, read_records
from gridbench.store.spawned import RUN_ENV, run_children, run_process, wait_gone

BOOK = "fio_servers.jsonl"
#: set in each server's environment: the inventory host it serves
ROLE_ENV = "GRIDBENCH_IO_FIO_SERVER"
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 8.0


@dataclass
class FioServer:
    """One host's fio server: ``client`` is what ``fio --client=`` takes."""

    host: str
    address: str
    client: str
    how: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


def how_to_start(host: Host, start: str, where: str = "clients.start") -> str:
    """``netns`` or ``ssh`` for ``host`` (``auto``: its namespace when the lab gave one);
    ``where`` names the spec's ``start`` field in an error."""
    if start == "auto":
        return "netns" if host.netns else "ssh"
    if start == "netns" and not host.netns:
        raise BackendError(
            f"host {host.name!r} has no netns in the inventory, and {where} is netns",
            where=where,
            fix="use start: ssh (or auto), or a lab host (gridbench lab up)",
        )
    return start


def module_argv(host: Host, how: str, inventory: Path, module: str, args: list[str]) -> list[str]:
    """The local command that runs ``python -m MODULE ARGS`` on ``host``: in its network
    namespace with this interpreter (a lab host shares this machine's files), or over SSH
    with the host's ``python`` (which must import gridbench)."""
    if how == "netns":
        return ["ip", "netns", "exec", str(host.netns), sys.executable, "-m", module, *args]
    from gridbench.hosts.remote import remote_argv

    return remote_argv(inventory, host.name, [host.interpreter, "-m", module, *args])


def server_argv(host: Host, how: str, spec: ClientsSpec, inventory: Path) -> list[str]:
    """The local command that runs ``fio --server`` on ``host``, listening on its address."""
    fio = [spec.fio, f"--server=ip:{host.address},{spec.port}"]
    launch = ["--port", str(spec.port), "--", *fio]
    return module_argv(host, how, inventory, "gridbench.hosts.launch", launch)


def ready(proc: subprocess.Popen[bytes], out: IO[bytes], timeout_s: float) -> bool:
    """Whether the launcher printed READY before it ended or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([out], [], [], 0.1)
        if r:
            chunk = os.read(out.fileno(), 4096)
            if not chunk:
                return False
            buf += chunk
            if b"READY" in buf:
                return True
        elif proc.poll() is not None:
            return False
    return False


def require_ready(
    proc: subprocess.Popen[bytes], log: Path, what: str, where: str, fix: str
) -> None:
    """``proc`` said READY within :data:`READY_TIMEOUT_S`, or a BackendError: ``what``
    went wrong, with its log's tail."""
    assert proc.stdout is not None
    if not ready(proc, proc.stdout, READY_TIMEOUT_S):
        raise BackendError(f"{what}: {tail(log) or 'no message'}", where=where, fix=fix)


def tail(log: Path, lines: int = 8) -> str:
    with contextlib.suppress(OSError):
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(text[-lines:])
    return ""


def start_servers(
    hosts: list[Host], spec: ClientsSpec, inventory: Path, run_path: Path
) -> list[FioServer]:
    """A fio server on every host, each booked before it starts; all ready, or every one
    started is stopped and a BackendError names the host and its log's tail."""
    book = run_path / BOOK
    started: list[FioServer] = []
    try:
        for host in hosts:
            how = how_to_start(host, spec.start)
            argv = server_argv(host, how, spec, inventory)
            log = run_path / "raw" / f"fio-server-{host.name}.log"
            append_record(
                book,
                {"event": "start", "host": host.name, "how": how, "port": spec.port, "argv": argv},
            )
            env = {**os.environ, RUN_ENV: str(run_path.resolve()), ROLE_ENV: host.name}
            with log.open("ab") as err:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
                )
            created = psutil.Process(proc.pid).create_time()
            append_record(
                book, {"event": "started", "host": host.name, "pid": proc.pid, "created": created}
            )
            client = f"ip:{host.address},{spec.port}"
            server = FioServer(host.name, host.address, client, how, proc, log)
            started.append(server)
        for server in started:
            require_ready(
                server.proc,
                server.log,
                f"fio --server did not start on {server.host} ({server.how})",
                f"clients.hosts ({server.host}, log {server.log})",
                "check fio is installed there (clients.fio), the port is free (clients.port) "
                "and the host answers ('gridbench hosts check')",
            )
            append_record(book, {"event": "ready", "host": server.host})
    except BaseException:
        stop_servers(started, run_path)
        raise
    return started


def stop_servers(servers: list[FioServer], run_path: Path) -> None:
    """Close each server's lifeline (it stops fio), then SIGTERM, then SIGKILL."""
    for s in servers:
        with contextlib.suppress(OSError, ValueError):
            if s.proc.stdin is not None:
                s.proc.stdin.close()
    deadline = time.monotonic() + STOP_GRACE_S
    for s in servers:
        try:
            s.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            s.proc.terminate()
            try:
                s.proc.wait(STOP_GRACE_S / 2)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()
        if s.proc.stdout is not None:
            s.proc.stdout.close()
        append_record(run_path / BOOK, {"event": "stopped", "host": s.host})


def cleanup_servers(run_path: Path, *, dry_run: bool) -> tuple[list[str], list[str]]:
    """The fio servers a killed run left (booked, never recorded stopped, still running as
    this run's: :func:`gridbench.store.spawned.run_children`), stopped; (lines, errors)."""
    book = run_path / BOOK
    if not book.exists():
        return [], []
    records = read_records(book)
    open_hosts = {str(r.get("host")) for r in records if r.get("event") == "start"}
    open_hosts -= {str(r.get("host")) for r in records if r.get("event") == "stopped"}
    found = run_children(run_path, ROLE_ENV)
    for r in records:  # the booked launchers too (by pid, start time and environment)
        if r.get("event") == "started" and str(r.get("host")) in open_hosts:
            proc, _ = run_process(r.get("pid"), r.get("created"), run_path)
            if proc is not None:
                found.setdefault(proc, str(r.get("host")))
    lines: list[str] = []
    errors: list[str] = []
    if not found:
        if open_hosts:
            lines.append(f"fio servers on {', '.join(sorted(open_hosts))}: none left running")
        return lines, errors
    for proc, host in sorted(found.items(), key=lambda kv: kv[0].pid):
        if dry_run:
            lines.append(f"fio server for {host}: would stop pid {proc.pid}")
            continue
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
    if dry_run:
        return lines, errors
    for proc in wait_gone(list(found), STOP_GRACE_S):
        with contextlib.suppress(psutil.Error):
            proc.kill()
    left = wait_gone(list(found), 2.0)
    for proc, host in sorted(found.items(), key=lambda kv: kv[0].pid):
        if proc in left:
            errors.append(f"fio server for {host}: pid {proc.pid} did not stop")
        else:
            lines.append(f"fio server for {host}: stopped pid {proc.pid}")
    for host in sorted(open_hosts):
        append_record(book, {"event": "stopped", "host": host, "by": "cleanup"})
    return lines, errors
