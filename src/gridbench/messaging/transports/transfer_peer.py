"""The far end of a bulk transfer: ``python -m gridbench.messaging.transports.transfer_peer
--tool tcp_streams|zmq --bind HOST``.

It prints ``READY <port>`` and serves until SIGTERM or until its stdin closes, then exits 0.
Both tools speak the same two requests (see :mod:`gridbench.messaging.transports.transfer`):

``U <n>`` upload: read and discard ``n`` bytes, then answer with the count seen (8 bytes).
``D <n>`` download: send ``n`` bytes.

tcp_streams: every connection is served by its own thread; a request is 9 bytes (``U`` or
``D`` and ``n`` big-endian). Parallel streams are parallel connections.
zmq: one ROUTER socket; a request is the message ``U``/``D`` + ``n``, data travels in
:data:`CHUNK`-byte messages, the upload answer is one 8-byte message.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import struct
import sys
import threading
from types import FrameType
from typing import Final

from gridbench.lifeline import on_stdin_eof

#: Bytes per send/receive call and per ZeroMQ data message.
CHUNK: Final = 1 << 20
#: A request: b"U" or b"D", then the byte count (unsigned 64-bit, network order).
REQUEST: Final = struct.Struct("!cQ")
#: An upload's answer: the bytes the peer saw.
ACK: Final = struct.Struct("!Q")
_TICK = 0.2  # seconds between looks at the stop flag
#: Connections (tcp_streams) and unfinished uploads (zmq) served at once: a client cannot
#: make the peer hold more threads or upload counters than this.
MAX_CLIENTS: Final = 256


def _block() -> bytes:
    """CHUNK bytes that do not compress (a link with compression would flatter them)."""
    return os.urandom(CHUNK)


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        got = conn.recv(n - len(buf))
        if not got:
            break
        buf += got
    return bytes(buf)


def _discard(conn: socket.socket, n: int, buf: memoryview) -> int:
    """Read and drop ``n`` bytes; how many arrived before EOF."""
    seen = 0
    while seen < n:
        got = conn.recv_into(buf, min(len(buf), n - seen))
        if not got:
            break
        seen += got
    return seen


def _send_n(conn: socket.socket, n: int, block: memoryview) -> None:
    left = n
    while left > 0:
        part = block[: min(left, len(block))]
        conn.sendall(part)
        left -= len(part)


def _serve_tcp_conn(conn: socket.socket, block: memoryview) -> None:
    buf = memoryview(bytearray(CHUNK))
    with conn, contextlib.suppress(OSError):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            head = _recv_exact(conn, REQUEST.size)
            if len(head) < REQUEST.size:
                return  # the client is done with this connection
            op, n = REQUEST.unpack(head)
            if op == b"U":
                conn.sendall(ACK.pack(_discard(conn, n, buf)))
            elif op == b"D":
                _send_n(conn, n, block)
            else:
                print(f"transfer_peer: bad request {head!r}", file=sys.stderr)
                return


def serve_tcp(bind_host: str, stop: threading.Event) -> None:
    """Accept connections until ``stop``; each is served by a daemon thread, at most
    :data:`MAX_CLIENTS` at once (a connection beyond that is closed at once)."""
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    block = memoryview(_block())
    with socket.socket(family, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((bind_host, 0))
        srv.listen(256)
        srv.settimeout(_TICK)
        print(f"READY {srv.getsockname()[1]}", flush=True)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            if threading.active_count() > MAX_CLIENTS + 2:  # main and stdin watcher
                conn.close()
                continue
            conn.settimeout(None)
            threading.Thread(target=_serve_tcp_conn, args=(conn, block), daemon=True).start()


def serve_zmq(bind_host: str, stop: threading.Event) -> None:
    """One ROUTER socket: uploads counted per client identity, downloads sent in chunks."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)  # block (not drop) when a client is slow
    sock.setsockopt(zmq.SNDTIMEO, 30_000)  # but never for ever on a vanished client
    if ":" in bind_host:
        sock.setsockopt(zmq.IPV6, 1)
        bind_host = f"[{bind_host}]"
    port = sock.bind_to_random_port(f"tcp://{bind_host}")
    print(f"READY {port}", flush=True)
    block = _block()
    uploads: dict[bytes, tuple[int, int]] = {}  # identity -> (expected, seen)
    try:
        while not stop.is_set():
            if not sock.poll(int(_TICK * 1000)):
                continue
            parts = sock.recv_multipart(copy=False)
            if len(parts) != 2:  # our clients send one frame per message: not our protocol
                print(f"transfer_peer: dropped a {len(parts) - 1}-frame message", file=sys.stderr)
                continue
            ident, frame = parts
            who = bytes(ident.buffer)
            state = uploads.get(who)
            if state is not None:
                expected, seen = state[0], state[1] + len(frame.buffer)
                if seen >= expected:
                    del uploads[who]
                    sock.send_multipart([who, ACK.pack(seen)])
                else:
                    uploads[who] = (expected, seen)
                continue
            data = frame.bytes
            if len(data) != REQUEST.size or data[:1] not in (b"U", b"D"):
                print(f"transfer_peer: bad request {data[:20]!r}", file=sys.stderr)
                continue
            op, n = REQUEST.unpack(data)
            if op == b"U":
                if n == 0:
                    sock.send_multipart([who, ACK.pack(0)])
                elif len(uploads) >= MAX_CLIENTS:
                    print("transfer_peer: too many uploads at once, refused", file=sys.stderr)
                else:
                    uploads[who] = (n, 0)
                continue
            with contextlib.suppress(zmq.ZMQError):  # a client gone mid-download
                left = n
                while left > 0:
                    part = block[: min(left, CHUNK)]
                    sock.send_multipart([who, part], copy=False)
                    left -= len(part)
    finally:
        sock.close(0)
        ctx.term()


def main(argv: list[str] | None = None) -> int:
    """Serve one tool until SIGTERM or stdin EOF."""
    p = argparse.ArgumentParser(prog="transfer_peer", description=__doc__)
    p.add_argument("--tool", choices=("tcp_streams", "zmq"), required=True)
    p.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    p.add_argument("--streams", type=int, default=1, help="parallel streams expected")
    args = p.parse_args(argv)
    stop = threading.Event()

    def _term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _term)
    on_stdin_eof(stop.set)
    try:
        if args.tool == "tcp_streams":
            serve_tcp(args.bind, stop)
        else:
            serve_zmq(args.bind, stop)
    except OSError as exc:
        print(f"transfer_peer: cannot serve on {args.bind}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
