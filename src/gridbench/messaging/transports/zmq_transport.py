"""ZeroMQ ping-pong, echo and burst: a ROUTER echo server and a DEALER client.

Each request is two frames, an 8-byte sequence number and the payload; the server sends
every frame back, so a late reply to a timed-out call is recognised and never taken for
the next one. The client waits with ``zmq.Poller`` on its socket and on a monitor socket,
so a dead peer ends the call at its TCP disconnect (or at the timeout), never later.
``inproc://`` endpoints share this process's ``zmq.Context.instance()``. High-water marks
are off on both ends: a 1200-call burst must neither block nor be dropped at 1000.
"""

from __future__ import annotations

import contextlib
import itertools
import struct
import threading
import time
import uuid

import zmq

from gridbench.messaging.transports.base import BurstTiming, PeerError, gc_paused
from gridbench.messaging.transports.tcp import join_host_port, split_target

_SEQ = struct.Struct(">Q")
_STOP = b"stop"


def _context() -> zmq.Context[zmq.Socket[bytes]]:
    return zmq.Context.instance()


def endpoint(target: str) -> str:
    """The zmq endpoint of a target: ``host:port`` -> ``tcp://host:port``; ``inproc://x``
    and ``tcp://...`` as they are. PeerError when malformed."""
    if target.startswith("inproc://"):
        if len(target) == len("inproc://"):
            raise PeerError(f"bad target {target!r}: inproc:// needs a name")
        return target
    rest = target.removeprefix("tcp://")
    host, port = split_target(rest)
    return "tcp://" + join_host_port(host, port)


def _socket(kind: int, ipv6: bool) -> zmq.Socket[bytes]:
    sock = _context().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVHWM, 0)
    if ipv6:
        sock.setsockopt(zmq.IPV6, 1)
    return sock


class ZmqServer:
    """Echoes every request (a ``Server``): bound to ``tcp://host:*`` or, with
    ``inproc=True``, to a unique ``inproc://`` name in this process."""

    def __init__(self, host: str = "127.0.0.1", *, inproc: bool = False, port: int = 0) -> None:
        self._sock = _socket(zmq.ROUTER, ":" in host)
        try:
            if inproc:
                self._target = f"inproc://gridbench-echo-{uuid.uuid4().hex}"
                self._sock.bind(self._target)
                self.port = 0
            else:
                where = join_host_port(host, port) if port else join_host_port(host, 0)[:-1] + "*"
                self._sock.bind("tcp://" + where)
                last = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
                self.port = int(last.rsplit(":", 1)[1])
                self._target = join_host_port(host, self.port)
        except zmq.ZMQError as exc:
            self._sock.close()
            raise PeerError(f"zmq cannot bind on {host}: {exc}") from None
        # a PAIR over inproc wakes the serving thread for close()
        self._ctl_name = f"inproc://gridbench-ctl-{uuid.uuid4().hex}"
        self._ctl = _context().socket(zmq.PAIR)
        self._ctl.bind(self._ctl_name)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def target(self) -> str:
        """``host:port`` or ``inproc://...``."""
        return self._target

    def start(self) -> ZmqServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.serve, name="zmq-echo", daemon=True)
        self._thread.start()
        return self

    def serve(self) -> None:
        """Echo until :meth:`close` (blocks). The sockets stay in this thread, as zmq wants."""
        wake = _context().socket(zmq.PAIR)
        wake.connect(self._ctl_name)
        sock = self._sock
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if wake in ready:
                    return
                # drain what is queued before polling again: one poll per batch
                while int(sock.get(zmq.EVENTS)) & zmq.POLLIN:
                    sock.send_multipart(sock.recv_multipart(copy=False), copy=False)
        except zmq.ZMQError:
            return  # the context or socket was closed under us
        finally:
            wake.close(0)
            sock.close(0)

    def close(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._thread is not None:
            # the serving thread may not have connected its end yet: retry, never block
            end = time.monotonic() + 5
            while self._thread.is_alive() and time.monotonic() < end:
                try:
                    self._ctl.send(_STOP, zmq.NOBLOCK)
                    break
                except zmq.Again:
                    time.sleep(0.001)
            self._thread.join(5)
        else:
            self._sock.close(0)
        self._ctl.close(0)


class ZmqClient:
    """A DEALER connected to a :class:`ZmqServer`: a ``PingPongClient`` and an
    ``EchoClient``. Use it from one thread."""

    def __init__(self, target: str, *, connect_timeout: float = 10.0) -> None:
        self.target = target
        self._endpoint = endpoint(target)
        self._seq = itertools.count(1)
        self._sock: zmq.Socket[bytes] | None = _socket(zmq.DEALER, "[" in self._endpoint)
        self._mon: zmq.Socket[bytes] | None = None
        if self._endpoint.startswith("tcp://"):
            self._mon = self._sock.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CONNECT_RETRIED
            )
        try:
            self._sock.connect(self._endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise PeerError(f"zmq cannot connect to {target}: {exc}") from None
        if self._mon is not None:
            self._await_connected(connect_timeout)
        self._poller = zmq.Poller()
        self._poller.register(self._sock, zmq.POLLIN)
        if self._mon is not None:
            self._poller.register(self._mon, zmq.POLLIN)

    def _await_connected(self, timeout: float) -> None:
        """A refused or unreachable peer is an error now, not a timeout at the first call."""
        assert self._mon is not None
        from zmq.utils.monitor import recv_monitor_message

        if not self._mon.poll(int(timeout * 1000)):
            self.close()
            raise PeerError(f"zmq could not connect to {self.target} within {timeout:g} s")
        event = recv_monitor_message(self._mon)["event"]
        if event != zmq.EVENT_CONNECTED:
            self.close()
            raise PeerError(f"zmq cannot connect to {self.target}: connection refused or failed")

    def _sock_or_fail(self) -> zmq.Socket[bytes]:
        if self._sock is None:
            raise PeerError(f"the zmq client of {self.target} is closed")
        return self._sock

    def _recv(
        self, sock: zmq.Socket[bytes], deadline: int, timeout: float
    ) -> tuple[int, zmq.Frame]:
        """The next reply: (sequence number, payload frame). PeerError at the deadline or
        when the monitor reports the connection gone."""
        while True:
            left = deadline - time.perf_counter_ns()
            if left <= 0:
                raise PeerError(f"no reply from zmq peer {self.target} within {timeout:g} s")
            ready = dict(self._poller.poll(max(1, left // 1_000_000)))
            if sock in ready:
                seq, body = sock.recv_multipart(copy=False)
                return _SEQ.unpack(seq.bytes)[0], body
            if self._mon is not None and self._mon in ready:
                from zmq.utils.monitor import recv_monitor_message

                if recv_monitor_message(self._mon)["event"] == zmq.EVENT_DISCONNECTED:
                    raise PeerError(f"the zmq peer {self.target} disconnected")

    def _fail(self, exc: Exception) -> PeerError:
        """Close (a late reply must not meet a later call) and say why."""
        self.close()
        if isinstance(exc, PeerError):
            return exc
        return PeerError(f"zmq to {self.target} failed: {exc}")

    def round_trips(self, size: int, count: int, timeout: float) -> list[int]:
        """``count`` round trips of ``size`` bytes; RTTs in ns, each echo checked."""
        import random

        payload = random.randbytes(size)
        return self._timed(payload, count, timeout)

    def calls(self, payload: bytes, count: int, timeout: float) -> list[int]:
        """``count`` sequential echo calls; latencies in ns."""
        return self._timed(payload, count, timeout)

    def _timed(self, payload: bytes, count: int, timeout: float) -> list[int]:
        sock = self._sock_or_fail()
        perf = time.perf_counter_ns
        deadline = perf() + int(timeout * 1e9)
        out: list[int] = []
        try:
            for _ in range(count):
                seq = next(self._seq)
                tag = _SEQ.pack(seq)
                t0 = perf()
                sock.send_multipart((tag, payload), copy=False)
                got, body = self._recv(sock, deadline, timeout)
                while got != seq:  # a reply to a call that timed out earlier
                    got, body = self._recv(sock, deadline, timeout)
                t1 = perf()
                out.append(t1 - t0)
                if body.buffer != payload:
                    raise PeerError(
                        f"the echo from zmq peer {self.target} differs from the request"
                    )
        except (PeerError, zmq.ZMQError) as exc:
            raise self._fail(exc) from None
        return out

    def burst(self, payload: bytes, count: int, timeout: float) -> BurstTiming:
        """Send ``count`` requests back to back, then receive every reply."""
        sock = self._sock_or_fail()
        perf = time.perf_counter_ns
        first_seq = next(self._seq)
        tags = [_SEQ.pack(first_seq + i) for i in range(count)]
        self._seq = itertools.count(first_seq + count)
        arrivals: list[int] = []
        with gc_paused():  # as every burst: no collection inside the clock
            try:
                c0, t0 = time.thread_time_ns(), perf()
                for tag in tags:
                    sock.send_multipart((tag, payload), copy=False)
                enqueue = perf() - t0
                enqueue_cpu = time.thread_time_ns() - c0
                deadline = t0 + int(timeout * 1e9)
                while len(arrivals) < count:
                    got, body = self._recv(sock, deadline, timeout)
                    now = perf()
                    if first_seq <= got < first_seq + count:
                        arrivals.append(now - t0)
                        if body.buffer != payload:
                            raise PeerError(f"an echo from zmq peer {self.target} differs")
            except (PeerError, zmq.ZMQError) as exc:
                raise self._fail(exc) from None
        first = arrivals[0] if arrivals else 0
        return BurstTiming(enqueue, first, arrivals, enqueue_cpu)

    def close(self) -> None:
        """Disconnect (idempotent)."""
        sock, self._sock = self._sock, None
        mon, self._mon = self._mon, None
        if sock is not None:
            if mon is not None:
                with contextlib.suppress(zmq.ZMQError):
                    sock.disable_monitor()
                mon.close(0)
            sock.close(0)
