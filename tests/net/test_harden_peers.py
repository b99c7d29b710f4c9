"""Every listening peer treats its client as hostile: the TCP echo peer allocates only
what arrives (a header claiming 1 GiB costs nothing), the ZeroMQ transfer peer drops a
message that is not its protocol instead of dying, and neither dies on random input
(Hypothesis over frames and messages). Real peer processes, as a run starts them."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HEADER = struct.Struct(">Q")
REQUEST = struct.Struct("!cQ")


def start(argv: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("READY "):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"peer {argv} did not start: {line!r} {err.decode()[-2000:]}")
    return proc, int(line.split()[1])


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def tcp_peer() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    proc, port = start(["gridbench.messaging.peer", "tcp", "--bind", "127.0.0.1"])
    yield proc, port
    stop(proc)


@pytest.fixture(scope="module")
def zmq_transfer_peer() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    argv = ["gridbench.messaging.transports.transfer_peer", "--tool", "zmq"]
    proc, port = start([*argv, "--bind", "127.0.0.1"])
    yield proc, port
    stop(proc)


def echo_once(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(HEADER.pack(len(payload)) + payload)
        want, got = HEADER.size + len(payload), b""
        while len(got) < want:
            chunk = s.recv(want - len(got))
            if not chunk:
                break
            got += chunk
    return got[HEADER.size :]


def test_a_header_claiming_a_gibibyte_costs_the_tcp_peer_nothing(
    tcp_peer: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = tcp_peer
    rss = psutil.Process(proc.pid).memory_info().rss
    conns = []
    for _ in range(16):  # 16 GiB claimed in all
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(HEADER.pack(1024**3) + b"x" * 100)
        conns.append(s)
    time.sleep(1.0)
    grown = psutil.Process(proc.pid).memory_info().rss - rss
    for s in conns:
        s.close()
    assert grown < 64 * 2**20, f"the peer grew by {grown / 2**20:.0f} MiB"
    assert echo_once(port, b"still here") == b"still here"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(max_size=512))
def test_random_bytes_never_kill_the_tcp_peer(
    tcp_peer: tuple[subprocess.Popen[bytes], int], junk: bytes
) -> None:
    proc, port = tcp_peer
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(junk)
    assert proc.poll() is None
    assert echo_once(port, b"ok") == b"ok"


def zmq_download(port: int, n: int) -> int:
    ctx = zmq.Context.instance()
    with ctx.socket(zmq.DEALER) as d:
        d.setsockopt(zmq.LINGER, 0)
        d.setsockopt(zmq.RCVTIMEO, 10_000)
        d.connect(f"tcp://127.0.0.1:{port}")
        d.send(REQUEST.pack(b"D", n))
        got = 0
        while got < n:
            got += len(d.recv())
    return got


def test_a_two_frame_message_does_not_kill_the_zmq_transfer_peer(
    zmq_transfer_peer: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = zmq_transfer_peer
    ctx = zmq.Context.instance()
    with ctx.socket(zmq.DEALER) as d:
        d.setsockopt(zmq.LINGER, 0)
        d.connect(f"tcp://127.0.0.1:{port}")
        d.send_multipart([b"U", REQUEST.pack(b"D", 10)])
        time.sleep(0.5)
    assert proc.poll() is None, "the peer died on a 2-frame message"
    assert zmq_download(port, 1000) == 1000


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=st.lists(st.binary(max_size=64), min_size=1, max_size=4))
def test_random_messages_never_kill_the_zmq_transfer_peer(
    zmq_transfer_peer: tuple[subprocess.Popen[bytes], int], frames: list[bytes]
) -> None:
    proc, port = zmq_transfer_peer
    if len(frames) == 1 and frames[0][:1] == b"D":
        frames = [b"X" + frames[0][1:]]  # a real download request is not junk
    ctx = zmq.Context.instance()
    with ctx.socket(zmq.DEALER) as d:
        d.setsockopt(zmq.LINGER, 0)
        d.connect(f"tcp://127.0.0.1:{port}")
        d.send_multipart(frames)
        time.sleep(0.05)
    assert proc.poll() is None
    assert zmq_download(port, 10) == 10
