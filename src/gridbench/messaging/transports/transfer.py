"""Bulk transfers (MAPPER MPWide): move a payload up (client -> peer) or down (peer ->
client) with parallel TCP streams, ZeroMQ or scp; each call returns the elapsed ns.

The peer of tcp_streams and zmq is :mod:`gridbench.messaging.transports.transfer_peer`
(argv from :func:`transfer_peer_argv`); scp talks to an ssh server (a throw-away one from
:func:`gridbench.messaging.transports.sshd.start_sshd`, or the spec's ``transfer.scp``).

What is timed: up, from the first byte sent until the peer acknowledged every byte (it
reports the count it saw, which must equal what was sent); down, from the request until
the last byte arrived. Connections are made before the clock starts; scp is timed as a
whole process (its ssh handshake included, as a user of scp sees it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal, Protocol

from gridbench.messaging.transports.base import Address, PeerError
from gridbench.messaging.transports.transfer_peer import ACK, CHUNK, REQUEST

Tool = Literal["tcp_streams", "zmq"]
Direction = Literal["up", "down"]


def transfer_peer_argv(tool: Tool, bind_host: str, *, streams: int) -> list[str]:
    """The sink/source peer's command line (this venv's python)."""
    return [
        sys.executable,
        "-m",
        "gridbench.messaging.transports.transfer_peer",
        "--tool",
        tool,
        "--bind",
        bind_host,
        "--streams",
        str(streams),
    ]


def make_payload(path: Path, size: int) -> None:
    """Write ``size`` incompressible bytes to ``path`` fast (one random MiB, repeated)."""
    block = os.urandom(CHUNK)
    with path.open("wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def split(size: int, streams: int) -> list[int]:
    """``size`` bytes over ``streams`` parts, the remainder on the first ones."""
    q, r = divmod(size, streams)
    return [q + (1 if i < r else 0) for i in range(streams)]


# -- parallel TCP streams -------------------------------------------------------------------


class _Stream:
    """One connection's share of a transfer, run in its own thread."""

    def __init__(self, sock: socket.socket, nbytes: int, direction: Direction, deadline: float):
        self.sock = sock
        self.nbytes = nbytes
        self.direction = direction
        self.deadline = deadline
        self.start = 0
        self.end = 0
        self.error: str | None = None

    def _arm(self) -> None:
        # the kernel timeout shrinks to what is left of the whole transfer
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)

    def run(self, go: threading.Barrier, block: memoryview) -> None:
        try:
            go.wait()
            self._arm()
            self.start = time.perf_counter_ns()
            self.sock.sendall(REQUEST.pack(b"U" if self.direction == "up" else b"D", self.nbytes))
            if self.direction == "up":
                self._upload(block)
            else:
                self._download()
            self.end = time.perf_counter_ns()
        except TimeoutError:
            self.error = "timed out"
        except (OSError, threading.BrokenBarrierError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _upload(self, block: memoryview) -> None:
        left = self.nbytes
        while left > 0:
            part = block[: min(left, len(block))]
            self._arm()
            self.sock.sendall(part)
            left -= len(part)
        ack = b""
        while len(ack) < ACK.size:
            self._arm()
            got = self.sock.recv(ACK.size - len(ack))
            if not got:
                raise OSError("the peer closed the connection before acknowledging")
            ack += got
        (seen,) = ACK.unpack(ack)
        if seen != self.nbytes:
            raise OSError(f"the peer saw {seen} of {self.nbytes} bytes")

    def _download(self) -> None:
        buf = memoryview(bytearray(CHUNK))
        seen = 0
        while seen < self.nbytes:
            self._arm()
            got = self.sock.recv_into(buf, min(len(buf), self.nbytes - seen))
            if not got:
                raise OSError(f"the peer closed the connection after {seen} of {self.nbytes} B")
            seen += got


def _connect(target: Address, deadline: float) -> socket.socket:
    left = max(deadline - time.monotonic(), 0.001)
    sock = socket.create_connection((target.host, target.port), timeout=left)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _tcp_streams(
    target: Address, size: int, direction: Direction, streams: int, timeout: float
) -> int:
    deadline = time.monotonic() + timeout
    parts = split(size, streams)
    socks: list[socket.socket] = []
    try:
        try:
            for _ in parts:
                socks.append(_connect(target, deadline))
        except OSError as exc:
            raise PeerError(f"tcp_streams: cannot connect to {target}: {exc}") from None
        block = memoryview(os.urandom(CHUNK))
        go = threading.Barrier(len(parts))
        work = [_Stream(s, n, direction, deadline) for s, n in zip(socks, parts, strict=True)]
        threads = [threading.Thread(target=w.run, args=(go, block), daemon=True) for w in work]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0) + 1.0)
        if any(t.is_alive() for t in threads):
            raise PeerError(f"tcp_streams: {direction} of {size} B to {target}: timed out")
        errors = [f"stream {i}: {w.error}" for i, w in enumerate(work) if w.error]
        if errors:
            raise PeerError(
                f"tcp_streams: {direction} of {size} B to {target}: " + "; ".join(errors)
            )
        return max(w.end for w in work) - min(w.start for w in work)
    finally:
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()


# -- ZeroMQ ---------------------------------------------------------------------------------


def _zmq(target: Address, size: int, direction: Direction, timeout: float) -> int:
    import zmq

    deadline = time.monotonic() + timeout
    where = f"zmq: {direction} of {size} B to {target}"

    def wait(sock: zmq.Socket[bytes]) -> None:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0 or not sock.poll(left_ms):
            raise PeerError(f"{where}: no answer within {timeout:g} s")

    ctx = zmq.Context()
    sock: zmq.Socket[bytes] = ctx.socket(zmq.DEALER)
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDTIMEO, max(int(timeout * 1000), 1))
        host = target.host
        if ":" in host:
            sock.setsockopt(zmq.IPV6, 1)
            host = f"[{host}]"
        sock.connect(f"tcp://{host}:{target.port}")
        block = os.urandom(CHUNK)
        op = b"U" if direction == "up" else b"D"
        try:
            # ZeroMQ connects in the background: an empty upload first, so the clock
            # starts on a connection that exists, as it does for the TCP streams
            sock.send(REQUEST.pack(b"U", 0))
            wait(sock)
            if sock.recv() != ACK.pack(0):
                raise PeerError(f"{where}: the peer does not speak the transfer protocol")
            start = time.perf_counter_ns()
            sock.send(REQUEST.pack(op, size))
            if direction == "up":
                left = size
                while left > 0:
                    part = block[: min(left, CHUNK)]
                    sock.send(part, copy=False)
                    left -= len(part)
                wait(sock)
                ack = sock.recv()
                end = time.perf_counter_ns()
                if len(ack) != ACK.size or ACK.unpack(ack)[0] != size:
                    raise PeerError(f"{where}: the peer acknowledged {ack!r}, not {size} bytes")
            else:
                seen = 0
                while seen < size:
                    wait(sock)
                    seen += len(sock.recv(copy=False).buffer)
                end = time.perf_counter_ns()
                if seen != size:
                    raise PeerError(f"{where}: received {seen} bytes")
        except zmq.Again:
            raise PeerError(f"{where}: the peer took nothing within {timeout:g} s") from None
        except zmq.ZMQError as exc:
            raise PeerError(f"{where}: {exc}") from None
        return end - start
    finally:
        sock.close(0)
        ctx.term()


def run_transfer(
    tool: Tool, target: Address, size: int, direction: Direction, *, streams: int, timeout: float
) -> int:
    """Elapsed ns for moving ``size`` bytes once (see the module text for what is timed).
    tcp_streams splits the payload over ``streams`` connections started together; zmq
    uses one connection (``streams`` is ignored). PeerError on failure or when
    ``timeout`` seconds pass."""
    if size < 0 or streams < 1:
        raise PeerError(f"{tool}: bad transfer request: size {size}, streams {streams}")
    if tool == "tcp_streams":
        return _tcp_streams(target, size, direction, streams, timeout)
    return _zmq(target, size, direction, timeout)


# -- scp ------------------------------------------------------------------------------------


class ScpLike(Protocol):
    """An ssh server scp can reach: :class:`~gridbench.messaging.transports.sshd.SshServer`
    or the spec's :class:`~gridbench.messaging.model.ScpTarget`."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def user(self) -> str: ...
    @property
    def identity(self) -> str | Path | None: ...
    @property
    def directory(self) -> str | Path: ...


def scp_argv(server: ScpLike, source: str, dest: str) -> list[str]:
    """scp in batch mode, trusting the (throw-away) host key without recording it.

    Not ``-q``: it silences ssh too, leaving only "Connection closed" for a refused
    connection; with stderr a pipe scp shows no progress meter anyway, and LogLevel=ERROR
    drops the "permanently added" warning while keeping the reason of a failure."""
    argv = ["scp", "-B", "-o", "StrictHostKeyChecking=no", "-o"]
    argv += ["UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]
    argv += ["-P", str(server.port)]
    if server.identity is not None:
        argv += ["-i", str(server.identity)]
    return [*argv, source, dest]


def remote_path(server: ScpLike, name: str) -> str:
    """``user@host:directory/name`` (an IPv6 host in brackets)."""
    host = f"[{server.host}]" if ":" in server.host else server.host
    return f"{server.user}@{host}:{str(server.directory).rstrip('/')}/{name}"


def scp_transfer(
    server: ScpLike, payload: Path, size: int, direction: Direction, *, timeout: float
) -> int:
    """Elapsed ns of one scp process: up copies ``payload`` to the server's directory
    (same name); down copies that remote file back to ``<payload>.down``, checks its size
    and removes it. PeerError with scp's stderr on failure or after ``timeout`` s."""
    remote = remote_path(server, payload.name)
    local = payload.with_name(payload.name + ".down")
    if direction == "up":
        try:
            have = payload.stat().st_size
        except OSError as exc:
            raise PeerError(f"scp: the payload {payload} is missing: {exc}") from None
        if have != size:
            raise PeerError(f"scp: the payload {payload} has {have} bytes, not {size}")
        argv = scp_argv(server, str(payload), remote)
    else:
        argv = scp_argv(server, remote, str(local))
    start = time.perf_counter_ns()
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise PeerError(f"scp: {direction} to {remote} took longer than {timeout:g} s") from None
    except OSError as exc:
        raise PeerError(f"scp: cannot run scp: {exc}") from None
    elapsed = time.perf_counter_ns() - start
    if proc.returncode != 0:
        # one line: scp ends its lines with CR LF, which would show as a raw \x0d
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())[-2000:]
        raise PeerError(f"scp: {direction} {remote} failed (status {proc.returncode}): {err}")
    if direction == "down":
        try:
            got = local.stat().st_size
            local.unlink()
        except OSError as exc:
            raise PeerError(f"scp: the downloaded copy {local} is missing: {exc}") from None
        if got != size:
            raise PeerError(f"scp: downloaded {got} bytes from {remote}, not {size}")
    return elapsed
