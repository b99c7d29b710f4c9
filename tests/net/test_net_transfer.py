"""Bulk transfers with real peers on loopback: parallel TCP streams, ZeroMQ, and scp to a
throw-away sshd."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from gridbench.messaging.model import ScpTarget
from gridbench.messaging.transports.base import Address, PeerError
from gridbench.messaging.transports.peer_process import PeerProcess, start_peer
from gridbench.messaging.transports.sshd import SshServer, start_sshd
from gridbench.messaging.transports.transfer import (
    make_payload,
    run_transfer,
    scp_transfer,
    split,
    transfer_peer_argv,
)
from gridbench.messaging.transports.transfer_peer import ACK, REQUEST

SIZE = 1_000_003  # not a multiple of the streams or of the chunk: remainders are exercised
HOST = "127.0.0.1"


def spawn(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
    """A plain child, as the host environment starts its peers."""
    with log.open("wb") as err:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)


@pytest.fixture
def peer_of(tmp_path: Path) -> Iterator[dict[str, PeerProcess]]:
    """Transfer peers by tool, started on demand by :func:`_peer`, stopped afterwards."""
    peers: dict[str, PeerProcess] = {}
    yield peers
    for p in peers.values():
        p.close()


def _peer(
    peers: dict[str, PeerProcess], tmp: Path, tool: Literal["tcp_streams", "zmq"]
) -> PeerProcess:
    argv = transfer_peer_argv(tool, HOST, streams=4)
    peers[tool] = start_peer(spawn, argv, tool, tmp / f"{tool}.log", 10.0)
    return peers[tool]


def test_split_and_payload(tmp_path: Path) -> None:
    assert split(10, 4) == [3, 3, 2, 2]
    assert split(3, 4) == [1, 1, 1, 0]
    p = tmp_path / "payload"
    make_payload(p, 2_500_000)
    data = p.read_bytes()
    assert len(data) == 2_500_000
    assert data[:1000] != bytes(1000)  # random, not zeros


@pytest.mark.parametrize(("tool", "streams"), [("tcp_streams", 1), ("tcp_streams", 4), ("zmq", 1)])
def test_transfer_up_and_down(
    tmp_path: Path,
    peer_of: dict[str, PeerProcess],
    tool: Literal["tcp_streams", "zmq"],
    streams: int,
) -> None:
    peer = _peer(peer_of, tmp_path, tool)
    target = Address(HOST, peer.port)
    for direction in ("up", "down"):
        for _ in range(3):
            # run_transfer checks the peer's byte count (up) and the bytes received (down)
            ns = run_transfer(tool, target, SIZE, direction, streams=streams, timeout=30.0)
            assert isinstance(ns, int)
            assert ns > 0
    assert peer.alive(), peer.log_tail()


def test_tcp_peer_counts_what_it_receives(tmp_path: Path, peer_of: dict[str, PeerProcess]) -> None:
    peer = _peer(peer_of, tmp_path, "tcp_streams")
    with socket.create_connection((HOST, peer.port), timeout=10) as s:
        s.sendall(REQUEST.pack(b"U", 12345) + b"x" * 12345)
        assert ACK.unpack(s.recv(ACK.size, socket.MSG_WAITALL)) == (12345,)
        s.sendall(REQUEST.pack(b"D", 54321))
        got = 0
        while got < 54321:
            chunk = s.recv(65536)
            assert chunk
            got += len(chunk)
        assert got == 54321
        s.shutdown(socket.SHUT_WR)
        assert s.recv(1) == b""  # nothing more than asked for


def test_zmq_peer_counts_what_it_receives(tmp_path: Path, peer_of: dict[str, PeerProcess]) -> None:
    import zmq

    peer = _peer(peer_of, tmp_path, "zmq")
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    try:
        sock.connect(f"tcp://{HOST}:{peer.port}")
        sock.send(REQUEST.pack(b"U", 3000))
        for _ in range(3):
            sock.send(b"y" * 1000)
        assert sock.poll(10_000)
        assert ACK.unpack(sock.recv()) == (3000,)
    finally:
        sock.close(0)
        ctx.term()


@pytest.mark.parametrize("tool", ["tcp_streams", "zmq"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_peer_killed_mid_transfer_raises(
    tmp_path: Path,
    peer_of: dict[str, PeerProcess],
    tool: Literal["tcp_streams", "zmq"],
    direction: Literal["up", "down"],
) -> None:
    peer = _peer(peer_of, tmp_path, tool)
    killer = threading.Timer(0.3, peer.proc.kill)
    killer.start()
    try:
        # far more than loopback moves in the 3 s timeout: the kill lands mid-transfer
        with pytest.raises(PeerError, match=tool):
            run_transfer(tool, Address(HOST, peer.port), 10**12, direction, streams=2, timeout=3.0)
    finally:
        killer.cancel()
    assert peer.proc.wait(5) != 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def test_nothing_listening(tmp_path: Path) -> None:
    port = _closed_port()
    with pytest.raises(PeerError, match="cannot connect"):
        run_transfer("tcp_streams", Address(HOST, port), 100, "up", streams=2, timeout=2.0)
    with pytest.raises(PeerError, match="no answer within 1 s"):
        run_transfer("zmq", Address(HOST, port), 100, "down", streams=1, timeout=1.0)


# -- scp ------------------------------------------------------------------------------------


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[SshServer]:
    """A throw-away sshd on loopback, through the READY protocol."""
    server = start_sshd(spawn, HOST, tmp_path / "sshd", 20.0)
    try:
        yield server
    finally:
        server.close()
    assert server.peer.proc.returncode == 0, server.peer.log_tail()


def test_scp_up_and_down(tmp_path: Path, sshd: SshServer) -> None:
    payload = tmp_path / "payload.bin"
    make_payload(payload, SIZE)
    for direction in ("up", "down"):
        for _ in range(3):
            assert scp_transfer(sshd, payload, SIZE, direction, timeout=30.0) > 0
    uploaded = sshd.directory / "payload.bin"
    assert uploaded.read_bytes() == payload.read_bytes()
    assert not (tmp_path / "payload.bin.down").exists()  # the downloaded copy was checked


def test_scp_to_the_spec_target(tmp_path: Path, sshd: SshServer) -> None:
    # the spec's ScpTarget is accepted as well as the throw-away server
    target = ScpTarget(
        host=HOST,
        port=sshd.port,
        identity=str(sshd.identity),
        directory=str(tmp_path / "remote"),
    )
    (tmp_path / "remote").mkdir()
    payload = tmp_path / "p.bin"
    make_payload(payload, 4096)
    assert scp_transfer(target, payload, 4096, "up", timeout=30.0) > 0
    assert (tmp_path / "remote" / "p.bin").stat().st_size == 4096


def test_scp_bad_targets(tmp_path: Path, sshd: SshServer) -> None:
    payload = tmp_path / "p.bin"
    make_payload(payload, 4096)
    refused = ScpTarget(host=HOST, port=_closed_port(), identity=str(sshd.identity))
    with pytest.raises(PeerError, match="Connection refused"):
        scp_transfer(refused, payload, 4096, "up", timeout=30.0)
    nowhere = ScpTarget(
        host=HOST, port=sshd.port, identity=str(sshd.identity), directory=str(tmp_path / "nope")
    )
    with pytest.raises(PeerError, match=r"scp: up .* failed"):
        scp_transfer(nowhere, payload, 4096, "up", timeout=30.0)
    with pytest.raises(PeerError, match="No such file"):
        scp_transfer(sshd, payload, 4096, "down", timeout=30.0)  # nothing uploaded yet
    with pytest.raises(PeerError, match="has 4096 bytes, not 5000"):
        scp_transfer(sshd, payload, 5000, "up", timeout=30.0)


def test_sshd_that_cannot_listen_says_why(tmp_path: Path) -> None:
    # an address no interface has (nothing is sent: the bind fails locally)
    with pytest.raises(PeerError, match=r"cannot listen on 10\.249\.99\.1"):
        start_sshd(spawn, "10.249.99.1", tmp_path / "sshd", 20.0)
