"""The net transports against the native floor, on loopback, in one run.

1. Raw-TCP ping-pong p50 RTT at 1 KiB: gridbench's blocking-socket client, the same with
   asyncio streams, and ``sockperf ping-pong --tcp --full-rtt`` (sockperf prints one-way
   latency, RTT/2, unless ``--full-rtt``; its 1024-byte message includes its own header,
   gridbench's frame is 8 + 1024 bytes). Rounds alternate; the ratio is of the medians
   (goal <= 1.3, must be < 2).
2. TCP speed at 4 and 16 MiB, 2*size / p50 RTT (store-and-forward echo), against
   ``iperf3 -c 127.0.0.1 -J`` with one stream (goal: within 20 %).
3. The 1200-call burst: enqueue time (until the last call is handed to the transport) for
   gRPC via grpc.aio (what gridbench uses) and via ``.future()`` calls, and for ZeroMQ, as
   wall time and as the enqueuing thread's CPU time (the client's own cost; on a loaded
   host the rest is time the scheduler gave to other processes). Every variant of the
   gRPC burst is compared in bench/bench_grpc_burst.py.

Every server is a peer process (``python -m gridbench.messaging.peer``), as in the
``host`` environment.

    .venv/bin/python bench/bench_net.py [--rounds 3] [--seconds 2] [--burst 1200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gridbench.messaging.transports.base import BurstTiming
from gridbench.messaging.transports.grpc_echo import GrpcEchoClient, aio_burst
from gridbench.messaging.transports.peer_process import PeerProcess, start_peer
from gridbench.messaging.transports.registry import ServerKind, connect_pingpong, peer_argv
from gridbench.messaging.transports.zmq_transport import ZmqClient

KIB, MIB = 1024, 1024**2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)


def _peer(kind: ServerKind, logs: Path) -> PeerProcess:
    return start_peer(_spawn, peer_argv(kind, "127.0.0.1"), kind, logs / f"{kind}.log", 30)


def _gridbench_rtt(port: int, size: int, seconds: float) -> list[int]:
    """Round trips for about ``seconds`` (after 200 untimed ones)."""
    client = connect_pingpong("tcp", f"127.0.0.1:{port}")
    try:
        client.round_trips(size, 200 if size < MIB else 2, 30)
        out: list[int] = []
        end = time.monotonic() + seconds
        batch = 1000 if size < MIB else 5
        while time.monotonic() < end:
            out += client.round_trips(size, batch, 60)
        return out
    finally:
        client.close()


def _asyncio_rtt(port: int, size: int, seconds: float) -> list[int]:
    """The same ping-pong with asyncio streams (write + readexactly)."""

    async def run() -> list[int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg = struct.pack(">Q", size) + bytes(size)
        out: list[int] = []
        perf = time.perf_counter_ns
        for _ in range(200):
            writer.write(msg)
            await reader.readexactly(len(msg))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(1000):
                t0 = perf()
                writer.write(msg)
                await reader.readexactly(len(msg))
                out.append(perf() - t0)
        writer.close()
        await writer.wait_closed()
        return out

    return asyncio.run(run())


def _sockperf_rtt(port: int, size: int, seconds: float) -> float:
    """sockperf's p50 round-trip time in ns (--full-rtt)."""
    argv = ["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", str(port)]
    argv += ["-m", str(size), "-t", str(max(1, round(seconds))), "--full-rtt"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30, check=True)
    m = re.search(r"percentile 50\.000 =\s*([\d.]+)", out.stdout + out.stderr)
    if not m:
        raise SystemExit(f"no p50 in sockperf's output:\n{out.stdout[-2000:]}")
    return float(m.group(1)) * 1000  # usec -> ns


def _iperf3_bps(seconds: float) -> float:
    port = _free_port()
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)  # iperf3 has no readiness line with -s; give it a moment to listen
        argv = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-J", "-t", str(seconds)]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
        data = json.loads(out.stdout)
        if "error" in data:
            raise SystemExit(f"iperf3: {data['error']}")
        return float(data["end"]["sum_received"]["bits_per_second"])
    finally:
        server.terminate()
        server.wait(5)


def _median_of(fn: Callable[[], float], rounds: int) -> list[float]:
    return [fn() for _ in range(rounds)]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per figure")
    ap.add_argument("--seconds", type=float, default=2.0, help="per round and tool")
    ap.add_argument("--burst", type=int, default=1200, help="calls per burst")
    a = ap.parse_args()
    for tool in ("sockperf", "iperf3"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install {tool})")
    logs = Path(tempfile.mkdtemp(prefix="bench-net-"))
    kinds: tuple[ServerKind, ...] = ("tcp", "zmq", "grpc")
    peers = {kind: _peer(kind, logs) for kind in kinds}
    sp_port = _free_port()
    sockperf = subprocess.Popen(
        ["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(sp_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    try:
        tcp = peers["tcp"].port
        print(f"1. TCP ping-pong at 1 KiB, p50 RTT (us), {a.rounds} alternating rounds")
        rows: dict[str, list[float]] = {
            "gridbench (sockets)": [],
            "asyncio streams": [],
            "sockperf": [],
        }
        for _ in range(a.rounds):
            rows["gridbench (sockets)"].append(
                statistics.median(_gridbench_rtt(tcp, KIB, a.seconds))
            )
            rows["asyncio streams"].append(statistics.median(_asyncio_rtt(tcp, KIB, a.seconds)))
            rows["sockperf"].append(_sockperf_rtt(sp_port, KIB, a.seconds))
        for name, vals in rows.items():
            shown = "  ".join(f"{v / 1000:7.1f}" for v in vals)
            print(f"   {name:22} {shown}   median {statistics.median(vals) / 1000:7.1f}")
        floor = statistics.median(rows["sockperf"])
        for name in ("gridbench (sockets)", "asyncio streams"):
            print(f"   ratio {name} / sockperf: {statistics.median(rows[name]) / floor:.2f}")

        print("\n2. TCP speed, 2*size/p50 RTT, vs iperf3 one stream (Gbit/s)")
        ip = _median_of(lambda: _iperf3_bps(a.seconds), a.rounds)
        ip_med = statistics.median(ip)
        print(f"   iperf3 -J, 1 stream     {'  '.join(f'{v / 1e9:6.2f}' for v in ip)}")
        for size in (4 * MIB, 16 * MIB):
            speeds = []
            for _ in range(a.rounds):
                rtt = statistics.median(_gridbench_rtt(tcp, size, a.seconds))
                speeds.append(2 * size * 8 / (rtt / 1e9))
            med = statistics.median(speeds)
            shown = "  ".join(f"{v / 1e9:6.2f}" for v in speeds)
            print(f"   gridbench {size // MIB:2d} MiB        {shown}   ratio {med / ip_med:.2f}")

        print(
            f"\n3. {a.burst}-call burst, enqueue time (ms), 64-byte payload, peer process:"
            " wall per round, median wall, median client CPU"
        )
        g_target = f"127.0.0.1:{peers['grpc'].port}"
        grpc_client = GrpcEchoClient(g_target)
        zmq_client = ZmqClient(f"127.0.0.1:{peers['zmq'].port}")
        results: dict[str, list[float]] = {
            "grpc.aio (used)": [],
            "grpc .future()": [],
            "zmq DEALER": [],
        }
        cpu: dict[str, list[float]] = {k: [] for k in results}
        last: dict[str, float] = {}
        for _ in range(a.rounds):
            ways: tuple[tuple[str, Callable[[], BurstTiming]], ...] = (
                ("grpc.aio (used)", lambda: aio_burst(g_target, None, b"x" * 64, a.burst, 60)),
                ("grpc .future()", lambda: grpc_client.burst_futures(b"x" * 64, a.burst, 60)),
                ("zmq DEALER", lambda: zmq_client.burst(b"x" * 64, a.burst, 60)),
            )
            for name, fn in ways:
                b = fn()
                results[name].append(b.enqueue_ns / 1e6)
                cpu[name].append((b.enqueue_cpu_ns or 0) / 1e6)
                last[name] = max(b.arrival_ns) / 1e6
        for name, vals in results.items():
            shown = "  ".join(f"{v:6.1f}" for v in vals)
            print(
                f"   {name:18} {shown}   median {statistics.median(vals):6.1f}"
                f"   CPU {statistics.median(cpu[name]):5.1f}   (last reply {last[name]:.0f} ms)"
            )
        grpc_client.close()
        zmq_client.close()
    finally:
        sockperf.terminate()
        sockperf.wait(5)
        for p in peers.values():
            p.close()
    print(f"\n(peer logs: {logs}; python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
