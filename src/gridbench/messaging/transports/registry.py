"""What the runner calls to get servers, peers and clients of the tcp, zmq and grpc
transports. Each transport module is imported only when used, so a peer process or a
runner that needs one transport does not load the others (grpc takes a while)."""

from __future__ import annotations

import sys
from typing import Literal

from gridbench.errors import SpecError
from gridbench.messaging.transports.base import EchoClient, PingPongClient, Server, TlsFiles

ServerKind = Literal["tcp", "zmq", "grpc"]
SERVER_KINDS: tuple[ServerKind, ...] = ("tcp", "zmq", "grpc")


def _no_tls(kind: str, tls: TlsFiles | None) -> None:
    if tls is not None:
        raise SpecError(
            f"the {kind} transport has no TLS",
            where="echo.configs",
            fix="use TLS with the grpc transport only",
        )


def serve_in_process(
    kind: ServerKind, *, host: str = "127.0.0.1", inproc: bool = False, tls: TlsFiles | None = None
) -> Server:
    """An echo server on threads of this process, already serving. ``inproc=True`` (zmq
    only) binds a unique ``inproc://`` name instead of a TCP port. Its ``target`` is what
    :func:`connect_pingpong` and :func:`connect_echo` take."""
    if inproc and kind != "zmq":
        raise SpecError(
            f"an in-process (inproc://) endpoint exists for zmq only, not {kind}",
            where="transport",
            fix="serve tcp and grpc on loopback instead",
        )
    if kind == "tcp":
        _no_tls(kind, tls)
        from gridbench.messaging.transports.tcp import TcpServer

        return TcpServer(host).start()
    if kind == "zmq":
        _no_tls(kind, tls)
        from gridbench.messaging.transports.zmq_transport import ZmqServer

        return ZmqServer(host, inproc=inproc).start()
    if kind == "grpc":
        from gridbench.messaging.transports.grpc_echo import GrpcServer

        return GrpcServer(host, tls=tls).start()
    raise SpecError(f"unknown transport {kind!r}", where="transport", fix="tcp, zmq or grpc")


def peer_argv(kind: ServerKind, bind_host: str, *, tls: TlsFiles | None = None) -> list[str]:
    """The command of a peer process serving ``kind`` on ``bind_host`` (port 0): it prints
    ``READY <port>`` and echoes until SIGTERM or until its stdin closes."""
    if kind not in SERVER_KINDS:
        raise SpecError(f"unknown transport {kind!r}", where="transport", fix="tcp, zmq or grpc")
    argv = [sys.executable, "-m", "gridbench.messaging.peer", kind, "--bind", bind_host]
    if tls is not None:
        if kind != "grpc":
            _no_tls(kind, tls)
        argv += ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    return argv


def connect_pingpong(
    kind: Literal["tcp", "zmq"], target: str, *, connect_timeout: float = 10.0
) -> PingPongClient:
    """A ping-pong client of a tcp or zmq echo server (``host:port`` or ``inproc://...``);
    PeerError when it cannot connect."""
    if kind == "tcp":
        from gridbench.messaging.transports.tcp import TcpPingPong

        return TcpPingPong(target, connect_timeout=connect_timeout)
    if kind == "zmq":
        from gridbench.messaging.transports.zmq_transport import ZmqClient

        return ZmqClient(target, connect_timeout=connect_timeout)
    raise SpecError(f"no ping-pong client for {kind!r}", where="pingpong", fix="tcp or zmq")


def connect_echo(
    kind: Literal["grpc", "zmq"],
    target: str,
    *,
    tls: TlsFiles | None = None,
    connect_timeout: float = 10.0,
) -> EchoClient:
    """An echo client of a grpc or zmq server (with TLS: grpc only, trusting ``tls.ca``);
    PeerError when it cannot connect or the server is not trusted."""
    if kind == "grpc":
        from gridbench.messaging.transports.grpc_echo import GrpcEchoClient

        return GrpcEchoClient(target, tls=tls, connect_timeout=connect_timeout)
    if kind == "zmq":
        _no_tls(kind, tls)
        from gridbench.messaging.transports.zmq_transport import ZmqClient

        return ZmqClient(target, connect_timeout=connect_timeout)
    raise SpecError(f"no echo client for {kind!r}", where="echo", fix="grpc or zmq")


def echo_client_argv(
    kind: Literal["grpc", "zmq"],
    target: str,
    *,
    tls: TlsFiles | None,
    calls: int,
    payload: int,
    timeout: float,
) -> list[str]:
    """The command of one client process of the client-scaling series: it connects, prints
    ``READY 0``, waits for the line ``go`` on stdin, makes ``calls`` sequential calls of
    ``payload`` bytes and prints one JSON line, ``{"lat_ns": [...]}`` or ``{"error": ...}``."""
    if kind not in ("grpc", "zmq"):
        raise SpecError(f"no echo client for {kind!r}", where="echo", fix="grpc or zmq")
    argv = [
        sys.executable,
        "-m",
        "gridbench.messaging.echo_client",
        kind,
        target,
        "--calls",
        str(calls),
        "--payload",
        str(payload),
        "--timeout",
        repr(float(timeout)),
    ]
    if tls is not None:
        if kind != "grpc":
            _no_tls(kind, tls)
        argv += ["--tls-ca", str(tls.ca), "--tls-host", tls.host]
    return argv
