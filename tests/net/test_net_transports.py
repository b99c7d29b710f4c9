"""The tcp, zmq and grpc transports of the net family, on real servers and peer processes
over loopback: ping-pong across sizes, echoed content, TLS, inproc, bursts, dead peers,
the echo client process and bad targets."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import socket
import stat
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import zmq
from cryptography import x509

from gridbench.errors import SpecError
from gridbench.messaging.transports.base import PeerError, TlsFiles, gc_paused
from gridbench.messaging.transports.peer_process import PeerProcess, start_peer
from gridbench.messaging.transports.registry import (
    connect_echo,
    connect_pingpong,
    echo_client_argv,
    peer_argv,
    serve_in_process,
)
from gridbench.messaging.transports.tls import make_tls

SIZES = [0, 1, 1024, 1024**2]
PP = Literal["tcp", "zmq"]


def _spawn(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)


@pytest.fixture
def peers(tmp_path: Path) -> Iterator[list[PeerProcess]]:
    """Peer processes started by a test, stopped after it."""
    started: list[PeerProcess] = []
    yield started
    for p in started:
        p.close()


def _peer(peers: list[PeerProcess], tmp_path: Path, argv: list[str], role: str) -> PeerProcess:
    p = start_peer(_spawn, argv, role, tmp_path / f"{role}.log", timeout=30)
    peers.append(p)
    return p


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls(tmp_path_factory.mktemp("tls"), "127.0.0.1")


# ping-pong ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tcp", "zmq"])
def test_pingpong_in_process(kind: PP) -> None:
    server = serve_in_process(kind)
    client = connect_pingpong(kind, server.target)
    try:
        for size in SIZES:
            rtts = client.round_trips(size, 5, timeout=30)
            assert len(rtts) == 5 and all(r > 0 for r in rtts), size
    finally:
        client.close()
        client.close()  # idempotent
        server.close()
        server.close()


@pytest.mark.parametrize("kind", ["tcp", "zmq"])
def test_pingpong_peer_process(kind: PP, tmp_path: Path, peers: list[PeerProcess]) -> None:
    peer = _peer(peers, tmp_path, peer_argv(kind, "127.0.0.1"), f"{kind}-peer")
    client = connect_pingpong(kind, f"127.0.0.1:{peer.port}")
    try:
        for size in SIZES:
            rtts = client.round_trips(size, 3, timeout=30)
            assert len(rtts) == 3 and min(rtts) > 0, size
    finally:
        client.close()
    # the peer ends at stdin EOF with status 0
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    assert peer.proc.wait(10) == 0


def test_tcp_large_message_and_raw_frames() -> None:
    """A 16 MiB round trip, and the server's echo read byte for byte off a raw socket,
    with two frames sent in one write (the server keeps what follows a frame)."""
    server = serve_in_process("tcp")
    try:
        client = connect_pingpong("tcp", server.target)
        assert len(client.round_trips(16 * 1024**2, 1, timeout=60)) == 1
        client.close()
        host, port = server.target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            a, b = os.urandom(1000), os.urandom(3)
            frames = struct.pack(">Q", len(a)) + a + struct.pack(">Q", len(b)) + b
            s.sendall(frames)
            got = b""
            while len(got) < len(frames):
                chunk = s.recv(65536)
                assert chunk, "the server closed early"
                got += chunk
            assert got == frames
    finally:
        server.close()


def _corrupting_tcp_server() -> tuple[socket.socket, threading.Thread]:
    """Echoes each frame with its last byte flipped."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = lsock.accept()
        with conn:
            while True:
                head = conn.recv(8, socket.MSG_WAITALL)
                if len(head) < 8:
                    return
                (n,) = struct.unpack(">Q", head)
                body = bytearray(conn.recv(n, socket.MSG_WAITALL)) if n else bytearray()
                if body:
                    body[-1] ^= 0xFF
                conn.sendall(head + body)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return lsock, t


def test_tcp_client_notices_a_corrupted_echo() -> None:
    lsock, t = _corrupting_tcp_server()
    try:
        client = connect_pingpong("tcp", f"127.0.0.1:{lsock.getsockname()[1]}")
        with pytest.raises(PeerError, match="differs"):
            client.round_trips(4096, 3, timeout=10)
    finally:
        lsock.close()
        t.join(5)


def test_zmq_client_notices_a_corrupted_echo() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")

    def run() -> None:
        if router.poll(10_000):
            ident, seq, body = router.recv_multipart()
            router.send_multipart([ident, seq, body[:-1] + bytes([body[-1] ^ 1])])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        client = connect_echo("zmq", f"127.0.0.1:{port}")
        with pytest.raises(PeerError, match="differs"):
            client.calls(b"abcdef", 1, timeout=10)
        client.close()
    finally:
        t.join(10)
        router.close(0)


def test_zmq_inproc() -> None:
    server = serve_in_process("zmq", inproc=True)
    assert server.target.startswith("inproc://")
    try:
        client = connect_pingpong("zmq", server.target)
        for size in SIZES:
            assert len(client.round_trips(size, 3, timeout=10)) == 3
        client.close()
        echo = connect_echo("zmq", server.target)
        assert len(echo.calls(b"x" * 64, 10, timeout=10)) == 10
        echo.close()
    finally:
        server.close()


# gRPC and TLS -------------------------------------------------------------------------


def test_grpc_echo_insecure_and_tls_in_process(tls: TlsFiles) -> None:
    for files in (None, tls):
        server = serve_in_process("grpc", tls=files)
        try:
            client = connect_echo("grpc", server.target, tls=files)
            lat = client.calls(os.urandom(64), 20, timeout=30)
            assert len(lat) == 20 and min(lat) > 0
            assert len(client.calls(os.urandom(5 * 1024**2), 1, timeout=30)) == 1  # > 4 MiB
            client.close()
        finally:
            server.close()


GOAWAY = """
import time
from gridbench.messaging.transports.grpc_echo import GrpcEchoClient, GrpcServer, aio_burst
server = GrpcServer().start()
client = GrpcEchoClient(server.target)
aio_burst(server.target, None, b"x" * 100, 200, 30)
client.calls(b"x", 10, 30)
server.close()  # the open channel then hears the server's GOAWAY ...
time.sleep(1.0)  # ... if it is still open to hear it
client.close()
import os
import re
print("closed", os.environ.get("GRPC_VERBOSITY"))
"""


def test_grpc_core_logs_nothing_below_errors_unless_asked() -> None:
    """gRPC core prints INFO lines through absl ("Got goaway" when a server this process
    ran stops) unless a level is set before it loads: gridbench sets ERROR, and a user's
    own GRPC_VERBOSITY still wins."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    quiet = subprocess.run(
        [sys.executable, "-c", GOAWAY], env=env, capture_output=True, text=True, timeout=120
    )
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stdout.split() == ["closed", "ERROR"], quiet.stdout
    assert "goaway" not in quiet.stderr.lower(), quiet.stderr[-2000:]
    assert not re.search(r"^[IW]\d{4} ", quiet.stderr, re.M), quiet.stderr[-2000:]
    # asked for, gRPC core logs at INFO: it always says so with its "Log level INFO"
    # notice (whether the GOAWAY itself is heard in time is up to the scheduler), which
    # shows the variable set before import is the one gRPC core obeys
    asked = subprocess.run(
        [sys.executable, "-c", GOAWAY],
        env={**env, "GRPC_VERBOSITY": "INFO"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert asked.stdout.split() == ["closed", "INFO"], asked.stdout
    assert "log level info" in asked.stderr.lower(), asked.stderr[-2000:]


def test_grpc_tls_peer_and_untrusted_ca(
    tls: TlsFiles, tmp_path: Path, peers: list[PeerProcess]
) -> None:
    peer = _peer(peers, tmp_path, peer_argv("grpc", "127.0.0.1", tls=tls), "grpc-tls-peer")
    target = f"{tls.host}:{peer.port}"
    client = connect_echo("grpc", target, tls=tls)
    assert len(client.calls(b"hello", 5, timeout=30)) == 5
    client.close()
    other = make_tls(tmp_path / "other-ca", "127.0.0.1")
    with pytest.raises(PeerError, match=r"CERTIFICATE_VERIFY_FAILED|[Hh]andshake"):
        connect_echo("grpc", target, tls=other, connect_timeout=10)
    with pytest.raises(PeerError, match="UNAVAILABLE"):  # TLS server, plaintext client
        connect_echo("grpc", target, connect_timeout=10)


def test_make_tls_files(tmp_path: Path) -> None:
    files = make_tls(tmp_path / "t", "localhost")
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    assert cert.issuer == ca.subject
    assert b"PRIVATE KEY" not in files.ca.read_bytes() + files.cert.read_bytes()


# bursts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["grpc", "zmq"])
def test_burst(kind: Literal["grpc", "zmq"]) -> None:
    server = serve_in_process(kind)
    client = connect_echo(kind, server.target)
    try:
        for _ in range(2):  # twice: a second burst in the same process works as well
            b = client.burst(b"y" * 64, 300, timeout=60)
            assert len(b.arrival_ns) == 300
            assert b.enqueue_ns > 0
            # the enqueuing thread's CPU time: recorded, and no more than the wall time
            # by more than the clocks' granularity
            assert b.enqueue_cpu_ns is not None and b.enqueue_cpu_ns > 0
            assert b.enqueue_cpu_ns <= b.enqueue_ns + 2_000_000
            assert 0 < b.first_ns <= min(b.arrival_ns)
        assert len(client.calls(b"z", 3, timeout=10)) == 3  # still usable after a burst
        assert gc.isenabled()  # the collector paused for the burst runs again
    finally:
        client.close()
        server.close()


def test_gc_paused_restores_the_collectors_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("a burst that fails")
    assert gc.isenabled()
    gc.disable()  # a caller that had paused it keeps it paused
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


# dead peers and bad targets ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tcp", "zmq", "grpc"])
def test_peer_killed_mid_test(
    kind: Literal["tcp", "zmq", "grpc"], tmp_path: Path, peers: list[PeerProcess]
) -> None:
    peer = _peer(peers, tmp_path, peer_argv(kind, "127.0.0.1"), f"{kind}-victim")
    target = f"127.0.0.1:{peer.port}"
    timeout = 20.0
    if kind == "grpc":
        echo = connect_echo("grpc", target)

        def run() -> object:
            return echo.calls(b"x" * 64, 10**6, timeout)

        close = echo.close
    else:
        pp = connect_pingpong(kind, target)

        def run() -> object:
            return pp.round_trips(1024, 10**7, timeout)

        close = pp.close
    killer = threading.Timer(0.3, peer.proc.send_signal, args=(signal.SIGKILL,))
    t0 = time.monotonic()
    killer.start()
    try:
        with pytest.raises(PeerError):
            run()
    finally:
        killer.cancel()
        close()
    assert peer.proc.wait(5) == -signal.SIGKILL  # it died mid-test, not after
    assert time.monotonic() - t0 < timeout  # the error came before the test's timeout


def test_peer_exits_0_on_sigterm(tmp_path: Path, peers: list[PeerProcess]) -> None:
    peer = _peer(peers, tmp_path, peer_argv("zmq", "127.0.0.1"), "zmq-term")
    peer.proc.terminate()
    assert peer.proc.wait(10) == 0


def test_peer_that_cannot_bind_fails_with_its_reason(tmp_path: Path) -> None:
    argv = peer_argv("tcp", "192.0.2.1")  # TEST-NET address: not on this host
    with pytest.raises(PeerError, match="cannot listen"):
        start_peer(_spawn, argv, "bad-peer", tmp_path / "bad.log", timeout=30)


@pytest.mark.parametrize(
    ("kind", "target", "match"),
    [
        ("tcp", "127.0.0.1:1", "cannot connect"),
        ("tcp", "no-port-here", "bad target"),
        ("tcp", "::1:80", "brackets"),
        ("zmq", "127.0.0.1:1", "cannot connect"),
        ("zmq", "127.0.0.1:99999", "bad target"),
        ("zmq", "inproc://", "needs a name"),
    ],
)
def test_bad_pingpong_target(kind: PP, target: str, match: str) -> None:
    with pytest.raises(PeerError, match=match):
        connect_pingpong(kind, target, connect_timeout=5)


def test_bad_echo_target() -> None:
    with pytest.raises(PeerError, match="UNAVAILABLE"):
        connect_echo("grpc", "127.0.0.1:1", connect_timeout=5)
    with pytest.raises(PeerError, match="bad target"):
        connect_echo("grpc", "localhost", connect_timeout=5)


def test_registry_refuses_impossible_combinations(tls: TlsFiles) -> None:
    with pytest.raises(SpecError, match="TLS"):
        serve_in_process("tcp", tls=tls)
    with pytest.raises(SpecError, match="inproc"):
        serve_in_process("grpc", inproc=True)
    with pytest.raises(SpecError, match="TLS"):
        peer_argv("zmq", "127.0.0.1", tls=tls)
    with pytest.raises(SpecError, match="TLS"):
        echo_client_argv("zmq", "x:1", tls=tls, calls=1, payload=1, timeout=1)


# the echo client process ------------------------------------------------------------------


def _run_client(peers: list[PeerProcess], tmp_path: Path, argv: list[str], role: str) -> object:
    client = _peer(peers, tmp_path, argv, role)
    assert client.port == 0  # "READY 0"
    assert client.proc.stdin is not None and client.proc.stdout is not None
    client.proc.stdin.write(b"go\n")
    client.proc.stdin.flush()
    line = client.proc.stdout.readline()
    assert client.proc.wait(30) == 0, client.log_tail()
    return json.loads(line)


def test_echo_client_process(tls: TlsFiles, tmp_path: Path, peers: list[PeerProcess]) -> None:
    cases: list[tuple[Literal["grpc", "zmq"], TlsFiles | None]] = [
        ("zmq", None),
        ("grpc", None),
        ("grpc", tls),
    ]
    for kind, files in cases:
        server = serve_in_process(kind, tls=files)
        try:
            argv = echo_client_argv(
                kind, server.target, tls=files, calls=25, payload=100, timeout=30
            )
            out = _run_client(peers, tmp_path, argv, f"client-{kind}-{files is not None}")
            assert isinstance(out, dict) and "error" not in out, out
            lat = out["lat_ns"]
            assert len(lat) == 25 and all(isinstance(x, int) and x > 0 for x in lat)
        finally:
            server.close()


def test_echo_client_process_errors(tmp_path: Path, peers: list[PeerProcess]) -> None:
    argv = echo_client_argv("grpc", "127.0.0.1:1", tls=None, calls=1, payload=1, timeout=5)
    with pytest.raises(PeerError, match=r"exited with status 3[\s\S]*UNAVAILABLE"):
        start_peer(_spawn, argv, "client-refused", tmp_path / "refused.log", timeout=30)
    # a server that dies after READY: the JSON line carries the error
    server = serve_in_process("zmq")
    argv = echo_client_argv("zmq", server.target, tls=None, calls=10**6, payload=8, timeout=20)
    client = _peer(peers, tmp_path, argv, "client-orphan")
    server.close()
    assert client.proc.stdin is not None and client.proc.stdout is not None
    client.proc.stdin.write(b"go\n")
    client.proc.stdin.flush()
    out = json.loads(client.proc.stdout.readline())
    assert "disconnected" in out["error"] or "no reply" in out["error"]
    assert client.proc.wait(30) == 0
