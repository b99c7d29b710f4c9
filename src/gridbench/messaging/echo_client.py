"""One client process of the echo client-scaling series.

    python -m gridbench.messaging.echo_client {grpc,zmq} TARGET --calls N --payload BYTES
        --timeout SECONDS [--tls-ca F --tls-host H]

It connects (an empty call proves the service answers), prints ``READY 0``, waits for
the line ``go`` on stdin, so that k clients start together, makes N sequential calls and
prints ONE JSON line: ``{"lat_ns": [N ints]}`` or ``{"error": "..."}``; then exits 0.
A client that cannot connect says why on stderr and exits 3 before READY.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gridbench.messaging.transports.base import EchoClient, PeerError, TlsFiles


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m gridbench.messaging.echo_client",
        description="A gridbench net echo client: READY 0, then 'go' on stdin, then one JSON line.",
    )
    ap.add_argument("kind", choices=["grpc", "zmq"])
    ap.add_argument("target", help="host:port of the echo service")
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--payload", type=int, required=True, help="bytes per request")
    ap.add_argument("--timeout", type=float, required=True, help="seconds for all the calls")
    ap.add_argument("--tls-ca", type=Path, help="CA certificate to trust (grpc TLS)")
    ap.add_argument("--tls-host", help="the name in the server's certificate")
    return ap


def _connect(a: argparse.Namespace) -> EchoClient:
    if a.kind == "grpc":
        from gridbench.messaging.transports.grpc_echo import GrpcEchoClient

        tls = None
        if a.tls_ca is not None:
            # a client needs only the CA and the name; cert and key stay with the server
            tls = TlsFiles(ca=a.tls_ca, cert=a.tls_ca, key=a.tls_ca, host=a.tls_host)
        return GrpcEchoClient(a.target, tls=tls, connect_timeout=a.timeout)
    from gridbench.messaging.transports.zmq_transport import ZmqClient

    return ZmqClient(a.target, connect_timeout=a.timeout)


def _say(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """Connect, READY, wait for go, call, report; the exit status."""
    ap = _parser()
    a = ap.parse_args(argv)
    if a.calls < 1 or a.payload < 0 or a.timeout <= 0:
        ap.error("--calls must be >= 1, --payload >= 0 and --timeout > 0")
    if (a.tls_ca is None) != (a.tls_host is None):
        ap.error("--tls-ca and --tls-host go together")
    if a.tls_ca is not None and a.kind != "grpc":
        ap.error("TLS is for the grpc client only")
    try:
        client = _connect(a)
    except PeerError as exc:
        print(f"echo client {a.kind} -> {a.target}: {exc}", file=sys.stderr, flush=True)
        return 3
    try:
        print("READY 0", flush=True)
        line = sys.stdin.readline()
        if line.strip() != "go":
            _say({"error": f"expected 'go' on stdin, got {line.strip()[:80]!r}"})
            return 0
        payload = os.urandom(a.payload)
        try:
            lat = client.calls(payload, a.calls, a.timeout)
        except PeerError as exc:
            _say({"error": str(exc)})
            return 0
        _say({"lat_ns": lat})
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
