"""gRPC echo: one unary method on raw bytes, insecure or TLS, without generated code.

The server registers ``/gridbench.Echo/Echo`` with a generic handler whose
(de)serialisers are the identity (``None``: the bytes pass through). The client calls it
with ``channel.unary_unary(path)``. Message size limits are lifted on both ends so the
4 MiB payload limit of gRPC does not cap the spec's sizes, and proxies from the
environment are ignored (loopback and namespace addresses only).

A burst goes through ``grpc.aio`` (:func:`aio_burst`) on its own channel
(:data:`BURST_OPTIONS`), connected and warmed by one call before the clock starts.
bench/bench_grpc_burst.py compares it with the other ways a Python client can fire the
calls, among them ``.future()`` calls on the synchronous channel
(:meth:`GrpcEchoClient.burst_futures`), which cost more CPU and 1.5-2 times the wall
time. Its ``enqueue`` ends when the event loop has started the last call (one pass after
the calls were created), not merely when the call objects exist; it is timed in wall
time and in the loop thread's CPU time. About 23 µs of CPU per call is grpc's own Python
and Cython (the call object, its task, starting the batch in core): docs/net.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Coroutine
from concurrent import futures
from typing import Any

# gRPC core logs through absl, which prints INFO lines to stderr ("Got goaway" when a
# server this process ran stops) unless a level is set before grpc is loaded; a user's
# own GRPC_VERBOSITY wins
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import grpc  # type: ignore[import-untyped]

from gridbench.messaging.transports.base import BurstTiming, PeerError, TlsFiles, gc_paused
from gridbench.messaging.transports.tcp import join_host_port, split_target

METHOD = "/gridbench.Echo/Echo"
#: no size limit either way (-1), no proxy, no port sharing with another server
OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.enable_http_proxy", 0),
]
#: a burst's channel drops core's optional per-call filters (``minimal_stack``: census,
#: deadline and message-size filters; a per-call deadline still goes to the server and
#: the burst as a whole is bounded by asyncio) and transparent retries, which buffer
#: each call's messages for a replay: 10-15% less client CPU per burst of 1200
#: (bench/bench_grpc_burst.py). Each call is still a real HTTP/2 call, answered and checked.
BURST_OPTIONS: list[tuple[str, int]] = [
    *OPTIONS,
    ("grpc.minimal_stack", 1),
    ("grpc.enable_retries", 0),
]
# gRPC core cancels calls queued beyond 1000 not yet taken by the Python server (seen as
# CANCELLED in 1200-call bursts when client and server share a process and its GIL)
_SERVER_OPTIONS: list[tuple[str, int]] = [
    *OPTIONS,
    ("grpc.so_reuseport", 0),
    ("grpc.server.max_pending_requests", 1_000_000),
    ("grpc.server.max_pending_requests_hard_limit", 1_000_000),
]


def _echo(request: bytes, context: Any) -> bytes:
    return request


class GrpcServer:
    """The echo service in this process (a ``Server``); gRPC runs it on its own threads."""

    def __init__(
        self, host: str = "127.0.0.1", *, tls: TlsFiles | None = None, workers: int = 16
    ) -> None:
        handler = grpc.method_handlers_generic_handler(
            "gridbench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
        )
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc-echo"),
            handlers=(handler,),
            options=_SERVER_OPTIONS,
        )
        bind = join_host_port(host, 0)
        try:
            if tls is None:
                self.port: int = self._server.add_insecure_port(bind)
            else:
                creds = grpc.ssl_server_credentials([(tls.key.read_bytes(), tls.cert.read_bytes())])
                self.port = self._server.add_secure_port(bind, creds)
        except (OSError, RuntimeError) as exc:
            raise PeerError(f"grpc cannot listen on {bind}: {exc}") from None
        if not self.port:
            raise PeerError(f"grpc cannot listen on {bind}")
        # TLS clients connect by the certificate's name, so that is the target
        self._target = join_host_port(tls.host if tls else host, self.port)
        self._closed = False

    @property
    def target(self) -> str:
        """``host:port`` (with TLS, the certificate's host)."""
        return self._target

    def start(self) -> GrpcServer:
        """Start serving (gRPC's own threads)."""
        self._server.start()
        return self

    def close(self) -> None:
        """Stop serving and wait for it (idempotent)."""
        if not self._closed:
            self._closed = True
            self._server.stop(grace=None).wait(5)


def _credentials(tls: TlsFiles | None) -> Any:
    if tls is None:
        return None
    try:
        return grpc.ssl_channel_credentials(root_certificates=tls.ca.read_bytes())
    except OSError as exc:
        raise PeerError(f"cannot read the CA file {tls.ca}: {exc.strerror or exc}") from None


def _why(target: str, exc: Exception) -> str:
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "code"):
        code = exc.code()
        name = code.name if code is not None else "UNKNOWN"
        return f"grpc call to {target} failed: {name}: {exc.details()}"
    return f"grpc call to {target} failed: {exc}"


class GrpcEchoClient:
    """A channel to the echo service (an ``EchoClient``). Connecting makes one empty call,
    so a wrong address, a missing service or an untrusted certificate fails here, with
    gRPC's reason."""

    def __init__(
        self, target: str, *, tls: TlsFiles | None = None, connect_timeout: float = 10.0
    ) -> None:
        split_target(target)  # a malformed target is a PeerError now
        self.target = target
        self._tls = tls
        self._creds = _credentials(tls)
        if self._creds is None:
            self._channel: Any = grpc.insecure_channel(target, options=OPTIONS)
        else:
            self._channel = grpc.secure_channel(target, self._creds, options=OPTIONS)
        self._call = self._channel.unary_unary(METHOD)
        try:
            self._call(b"", timeout=connect_timeout)
        except grpc.RpcError as exc:
            self.close()
            raise PeerError(_why(target, exc)) from None

    def calls(self, payload: bytes, count: int, timeout: float) -> list[int]:
        """``count`` sequential calls; latencies in ns, each echo checked."""
        perf = time.perf_counter_ns
        deadline = perf() + int(timeout * 1e9)
        call = self._call
        out: list[int] = []
        for _ in range(count):
            left = (deadline - perf()) / 1e9
            if left <= 0:
                raise PeerError(f"{count} grpc calls to {self.target} took over {timeout:g} s")
            t0 = perf()
            try:
                reply = call(payload, timeout=left)
            except grpc.RpcError as exc:
                raise PeerError(_why(self.target, exc)) from None
            out.append(perf() - t0)
            if reply != payload:
                raise PeerError(f"the echo from {self.target} differs from the request")
        return out

    def burst(self, payload: bytes, count: int, timeout: float) -> BurstTiming:
        """``count`` calls fired at once through ``grpc.aio`` (:func:`aio_burst`)."""
        return aio_burst(self.target, self._tls, payload, count, timeout)

    def burst_futures(self, payload: bytes, count: int, timeout: float) -> BurstTiming:
        """The same burst with ``.future()`` calls; arrivals timed by done-callbacks."""
        perf = time.perf_counter_ns
        arrivals: list[int] = []
        done = threading.Event()
        call = self._call

        def arrived(_: Any) -> None:
            arrivals.append(perf() - t0)  # list.append is atomic under the GIL
            if len(arrivals) >= count:
                done.set()

        pending: list[Any] = []
        with gc_paused():
            c0, t0 = time.thread_time_ns(), perf()
            for _ in range(count):
                fut = call.future(payload, timeout=timeout)
                fut.add_done_callback(arrived)
                pending.append(fut)
            enqueue = perf() - t0
            enqueue_cpu = time.thread_time_ns() - c0
            answered = done.wait(timeout + 1)
        if not answered:
            for fut in pending:
                fut.cancel()
            raise PeerError(f"{count - len(arrivals)} of {count} grpc calls had no answer")
        for fut in pending:
            exc = fut.exception()
            if exc is not None:
                raise PeerError(_why(self.target, exc))
            if fut.result() != payload:
                raise PeerError(f"an echo from {self.target} differs from the request")
        return BurstTiming(enqueue, min(arrivals), list(arrivals), enqueue_cpu)

    def close(self) -> None:
        """Close the channel (idempotent)."""
        self._channel.close()


def aio_burst(
    target: str, tls: TlsFiles | None, payload: bytes, count: int, timeout: float
) -> BurstTiming:
    """``count`` calls fired at once through ``grpc.aio`` on a fresh channel (connected,
    and warmed by one call, before the clock starts). ``enqueue_ns`` is the wall time
    until the event loop has started the last call; ``enqueue_cpu_ns`` is the loop
    thread's CPU time over the same span."""
    creds = _credentials(tls)

    async def run() -> BurstTiming:
        if creds is None:
            channel = grpc.aio.insecure_channel(target, options=BURST_OPTIONS)
        else:
            channel = grpc.aio.secure_channel(target, creds, options=BURST_OPTIONS)
        async with channel:
            call = channel.unary_unary(METHOD)
            await call(b"", timeout=timeout)
            with gc_paused():
                timing, replies = await _fire(call, payload, count, timeout)
            if any(r != payload for r in replies):
                raise PeerError(f"an echo from {target} differs from the request")
            return timing

    try:
        return _run_async(run())
    except grpc.RpcError as exc:
        raise PeerError(_why(target, exc)) from None
    except TimeoutError:
        raise PeerError(f"grpc calls to {target} had no answer within {timeout:g} s") from None


async def _fire(
    call: Any, payload: bytes, count: int, timeout: float
) -> tuple[BurstTiming, list[bytes]]:
    """The timed part of :func:`aio_burst`: create the calls, let the loop start them,
    then await every reply."""
    perf = time.perf_counter_ns
    arrivals: list[int] = []
    c0, t0 = time.thread_time_ns(), perf()
    calls = []
    for _ in range(count):
        c = call(payload, timeout=timeout)
        c.add_done_callback(lambda _: arrivals.append(perf() - t0))
        calls.append(c)
    await asyncio.sleep(0)  # one loop pass: each call's task hands it to gRPC
    enqueue = perf() - t0
    enqueue_cpu = time.thread_time_ns() - c0
    replies = await asyncio.wait_for(asyncio.gather(*calls), timeout + 1)
    for _ in range(1000):  # done-callbacks are scheduled, not yet all run
        if len(arrivals) >= count:
            break
        await asyncio.sleep(0)
    return BurstTiming(enqueue, min(arrivals), arrivals, enqueue_cpu), list(replies)


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _run_async(coro: Coroutine[Any, Any, BurstTiming]) -> BurstTiming:
    """Run ``coro`` on this process's one grpc.aio event loop (a daemon thread). grpc.aio
    binds its completion queue to the first loop it meets, so a loop per burst
    (``asyncio.run``) fails the bursts after the first with CANCELLED."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="grpc-aio", daemon=True).start()
            _loop = loop
    return asyncio.run_coroutine_threadsafe(coro, _loop).result()
