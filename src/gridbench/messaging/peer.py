"""The far end of a measurement: an echo server in its own process.

    python -m gridbench.messaging.peer {tcp,zmq,grpc} --bind HOST [--tls-cert F --tls-key F]

It binds port 0 on HOST, prints ``READY <port>`` as its first stdout line, echoes until
SIGTERM (or SIGINT) or until its stdin closes, and exits 0. It cannot start: the reason
on stderr and exit status 3. Only the served transport's module is imported.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from gridbench.messaging.transports.base import PeerError, Server, TlsFiles


class _Stop(Exception):
    """Raised by the signal handler to end the wait on stdin."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m gridbench.messaging.peer",
        description="An echo server for gridbench net; prints READY <port>.",
    )
    ap.add_argument("kind", choices=["tcp", "zmq", "grpc"])
    ap.add_argument("--bind", required=True, help="address to listen on (port 0 is chosen)")
    ap.add_argument("--tls-cert", type=Path, help="server certificate, PEM (grpc only)")
    ap.add_argument("--tls-key", type=Path, help="server private key, PEM (grpc only)")
    return ap


def _serve(kind: str, host: str, tls: TlsFiles | None) -> tuple[Server, int]:
    if kind == "tcp":
        from gridbench.messaging.transports.tcp import TcpServer

        tcp = TcpServer(host).start()
        return tcp, tcp.port
    if kind == "zmq":
        from gridbench.messaging.transports.zmq_transport import ZmqServer

        zmq = ZmqServer(host).start()
        return zmq, zmq.port
    from gridbench.messaging.transports.grpc_echo import GrpcServer

    grpc = GrpcServer(host, tls=tls).start()
    return grpc, grpc.port


def main(argv: list[str] | None = None) -> int:
    """Serve until told to stop; the exit status."""
    ap = _parser()
    a = ap.parse_args(argv)
    tls: TlsFiles | None = None
    if (a.tls_cert is None) != (a.tls_key is None):
        ap.error("--tls-cert and --tls-key go together")
    if a.tls_cert is not None:
        if a.kind != "grpc":
            ap.error(f"TLS is for the grpc peer only, not {a.kind}")
        # the server reads only cert and key; the CA stays with the clients
        tls = TlsFiles(ca=a.tls_cert, cert=a.tls_cert, key=a.tls_key, host=a.bind)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        server, port = _serve(a.kind, a.bind, tls)
    except (PeerError, OSError) as exc:
        print(f"peer {a.kind} on {a.bind}: {exc}", file=sys.stderr, flush=True)
        return 3
    except _Stop:
        return 0
    try:
        print(f"READY {port}", flush=True)
        while os.read(sys.stdin.fileno(), 65536):
            pass  # anything written to us is ignored; EOF ends the peer
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
