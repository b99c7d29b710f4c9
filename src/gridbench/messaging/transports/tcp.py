"""Raw TCP ping-pong: length-prefixed frames (8-byte big-endian length, then the payload),
echoed whole by the server.

Plain blocking sockets, not asyncio streams: bench/bench_net.py measures both, and at
1 KiB on loopback the p50 RTT was 16 us with sockets, 26 us with asyncio, 14 us with
sockperf. The client sends each frame
with one ``sendall`` and reads the echo with ``recv_into`` on a preallocated buffer, so a
small round trip is two system calls on each side, as with sockperf. Timeouts are the
kernel's (SO_RCVTIMEO/SO_SNDTIMEO) rather than Python's socket timeout, which would add a
``poll`` before every receive.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time

from gridbench.messaging.transports.base import PeerError

_HEADER = struct.Struct(">Q")
#: the largest frame a server accepts (the spec's sizes stop at 1 GiB)
MAX_FRAME = 1024**3 + 64
#: Connections served at once (the spec's clients stop at 1024); one more is closed as
#: soon as it is accepted.
MAX_CONNECTIONS = 1088


def join_host_port(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_target(target: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as (host, port); PeerError when malformed."""
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PeerError(f"bad target {target!r}: expected host:port with a port 1-65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise PeerError(f"bad target {target!r}: write an IPv6 host in brackets, [::1]:port")
    return host, int(port)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _set_timeouts(sock: socket.socket, seconds: float) -> None:
    """Kernel timeouts on blocking send/recv: a blocked call fails with EAGAIN."""
    sec = max(seconds, 0.001)
    tv = struct.pack("ll", int(sec), int((sec % 1) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)


def _pattern(size: int) -> bytes:
    """Random bytes: an echo that misplaces or drops a chunk cannot match them."""
    return random.randbytes(size)


class TcpPingPong:
    """A connected ping-pong client (a ``PingPongClient``)."""

    def __init__(self, target: str, *, connect_timeout: float = 10.0) -> None:
        host, port = split_target(target)
        self.target = target
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise PeerError(f"cannot connect to tcp {target}: {exc.strerror or exc}") from None
        sock.settimeout(None)  # blocking; the kernel timeouts bound each call
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock: socket.socket | None = sock
        self._armed = -1.0

    def _arm(self, seconds: float) -> None:
        assert self._sock is not None
        if seconds != self._armed:
            _set_timeouts(self._sock, seconds)
            self._armed = seconds

    def round_trips(self, size: int, count: int, timeout: float) -> list[int]:
        """``count`` round trips of ``size`` bytes; RTTs in ns. Every echo is compared with
        what was sent (after the clock stops)."""
        sock = self._sock
        if sock is None:
            raise PeerError("the tcp client is closed")
        if size < 0 or size > MAX_FRAME - _HEADER.size:
            raise PeerError(f"message size {size} is outside 0..1 GiB")
        payload = _pattern(size)
        msg = _HEADER.pack(size) + payload
        total = len(msg)
        buf = bytearray(total)
        view = memoryview(buf)
        out = memoryview(msg)
        deadline = time.perf_counter_ns() + int(timeout * 1e9)
        self._arm(timeout)
        rtts: list[int] = []
        perf = time.perf_counter_ns
        try:
            for _ in range(count):
                t0 = perf()
                sock.sendall(out)
                got = sock.recv_into(view, total)
                while got < total:
                    n = sock.recv_into(view[got:], total - got)
                    if n == 0:
                        raise PeerError(f"the peer at {self.target} closed the connection")
                    got += n
                t1 = perf()
                rtts.append(t1 - t0)
                if buf != msg:
                    raise PeerError(
                        f"the echo from {self.target} differs from what was sent ({size} bytes)"
                    )
                left = deadline - t1
                if left <= 0:
                    raise PeerError(f"{count} round trips of {size} bytes took over {timeout:g} s")
                if left < self._armed * 0.5e9:
                    self._arm(left / 1e9)  # so the last blocking call ends at the deadline
        except PeerError:
            self.close()
            raise
        except BlockingIOError:
            self.close()
            raise PeerError(f"no echo from {self.target} within {timeout:g} s") from None
        except OSError as exc:
            self.close()
            raise PeerError(
                f"the connection to {self.target} failed: {exc.strerror or exc}"
            ) from None
        return rtts

    def close(self) -> None:
        """Disconnect (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()


class TcpServer:
    """Echoes every frame back whole; one thread per connection
    (:class:`~gridbench.messaging.transports.base.Server`)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        lsock = socket.socket(_family(host), socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            lsock.bind((host, port))
        except OSError as exc:
            lsock.close()
            raise PeerError(
                f"cannot listen on {join_host_port(host, port)}: {exc.strerror or exc}"
            ) from None
        lsock.listen(128)
        self._lsock = lsock
        self.host = host
        self.port: int = lsock.getsockname()[1]
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._acceptor: threading.Thread | None = None

    @property
    def target(self) -> str:
        """``host:port`` to connect to."""
        return join_host_port(self.host, self.port)

    def start(self) -> TcpServer:
        """Accept in a background thread."""
        self._acceptor = threading.Thread(target=self.serve, name="tcp-echo-accept", daemon=True)
        self._acceptor.start()
        return self

    def serve(self) -> None:
        """Accept connections until closed (blocks)."""
        while True:
            try:
                conn, _ = self._lsock.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                if len(self._conns) >= MAX_CONNECTIONS:  # a bound on threads and buffers
                    conn.close()
                    continue
                self._conns.add(conn)
                t = threading.Thread(target=self._echo, args=(conn,), name="tcp-echo", daemon=True)
                self._threads = [x for x in self._threads if x.is_alive()]
                self._threads.append(t)
            t.start()

    def _echo(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(1 << 16)
        view = memoryview(buf)
        have = 0  # bytes buffered, starting at buf[0]
        try:
            while True:
                while have < _HEADER.size:
                    n = conn.recv_into(view[have:])
                    if n == 0:
                        return
                    have += n
                (length,) = _HEADER.unpack_from(buf)
                if length > MAX_FRAME:
                    return  # not our protocol: drop the connection
                end = _HEADER.size + length
                while have < end:
                    if have == len(buf):
                        # grow with the bytes that arrived, never ahead of them: a header
                        # alone cannot make the peer allocate what it claims
                        view.release()
                        buf.extend(bytes(min(end, 2 * len(buf)) - len(buf)))
                        view = memoryview(buf)
                    n = conn.recv_into(view[have:])
                    if n == 0:
                        return
                    have += n
                conn.sendall(view[:end])
                if have > end:  # the start of the next frame came with this one
                    buf[: have - end] = buf[end:have]
                have -= end
        except OSError:
            pass  # the client went away (reset, broken pipe) or the server is closing
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def close(self) -> None:
        """Stop accepting, drop the connections, join the threads (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns)
        with contextlib.suppress(OSError):
            self._lsock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self._lsock.close()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        if self._acceptor is not None:
            self._acceptor.join(5)
        for t in self._threads:
            t.join(5)
