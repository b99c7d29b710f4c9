"""Can a gRPC Python client hand a 1200-call burst to the transport in < 50 ms?

Every variant fires N unary calls (64-byte payload) at a gridbench gRPC echo peer process
on loopback (as in the ``host`` environment), awaits and checks every response, and
times three things about the enqueue (from the first call created until the last one
has been handed to gRPC core):

* ``wall``   perf_counter, what the records' ``enqueue_ns`` holds;
* ``thread`` CPU time of the enqueuing thread (``time.thread_time``): the client's own
  work for the enqueue, excluding time the scheduler gave to other processes;
* ``proc``   CPU time of the whole client process (``time.process_time``), which adds
  gRPC core's own threads (polling, writing to the socket) during the enqueue.

The variants alternate within each round (rounds >= 7), so a loaded machine loads them
alike; medians and ranges are printed per variant and measure.

    .venv/bin/python bench/bench_grpc_burst.py [--rounds 9] [--burst 1200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]

from gridbench.messaging.transports.base import gc_paused
from gridbench.messaging.transports.grpc_echo import (
    BURST_OPTIONS,
    METHOD,
    OPTIONS,
    GrpcEchoClient,
    _run_async,
    aio_burst,
)
from gridbench.messaging.transports.peer_process import start_peer
from gridbench.messaging.transports.registry import peer_argv
from gridbench.messaging.transports.zmq_transport import ZmqClient

PAYLOAD = b"x" * 64
# what gridbench's burst channel uses: minimal_stack and no transparent retries
LEAN = BURST_OPTIONS


@dataclass
class Enqueue:
    """One burst's enqueue: wall, enqueuing thread's CPU, process CPU (ns), and the
    enqueuing thread's context switches: voluntary (it blocked: a lock, I/O) and
    involuntary (the scheduler gave its core to another thread or process)."""

    wall: int
    thread: int
    proc: int
    vol: int = -1
    invol: int = -1


def _start() -> tuple[int, int, int, resource.struct_rusage]:
    return (
        time.perf_counter_ns(),
        time.thread_time_ns(),
        time.process_time_ns(),
        resource.getrusage(resource.RUSAGE_THREAD),
    )


def _stop(s: tuple[int, int, int, resource.struct_rusage]) -> Enqueue:
    w, t, p = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    return Enqueue(
        w - s[0], t - s[1], p - s[2], ru.ru_nvcsw - s[3].ru_nvcsw, ru.ru_nivcsw - s[3].ru_nivcsw
    )


@dataclass(frozen=True)
class AioWay:
    """A grpc.aio variant (the defaults: gridbench's burst before this bench)."""

    registered: bool = False
    deadline: bool = True
    options: tuple[tuple[str, int], ...] = tuple(OPTIONS)
    gather: bool = False
    channels: int = 1
    no_gc: bool = False  # the cyclic collector paused during the enqueue


def aio_variant(target: str, way: AioWay, count: int) -> Enqueue:
    """One burst through grpc.aio as ``way`` says, on fresh, warmed channels."""

    async def run() -> Enqueue:
        chans = [
            grpc.aio.insecure_channel(target, options=list(way.options))
            for _ in range(way.channels)
        ]
        try:
            mcs = [
                c.unary_unary(METHOD, _registered_method=True)
                if way.registered
                else c.unary_unary(METHOD)
                for c in chans
            ]
            for mc in mcs:
                await mc(b"", timeout=10)
            arrivals: list[int] = []
            perf = time.perf_counter_ns
            timeout = 60.0 if way.deadline else None
            paused = gc_paused() if way.no_gc else contextlib.nullcontext()
            paused.__enter__()
            st = _start()
            w0 = st[0]
            if way.gather:
                # a coroutine per call: gather wraps each in a Task of its own
                async def one(mc: Any) -> bytes:
                    r: bytes = await mc(PAYLOAD, timeout=timeout)
                    arrivals.append(perf() - w0)
                    return r

                fut = asyncio.gather(*(one(mcs[i % len(mcs)]) for i in range(count)))
                await asyncio.sleep(0)
                await asyncio.sleep(0)  # the call tasks' first steps start the calls
                e = _stop(st)
                replies = await fut
            else:
                calls = []
                for i in range(count):
                    c = mcs[i % len(mcs)](PAYLOAD, timeout=timeout)
                    c.add_done_callback(lambda _: arrivals.append(perf() - w0))
                    calls.append(c)
                await asyncio.sleep(0)
                e = _stop(st)
                replies = await asyncio.gather(*calls)
            paused.__exit__(None, None, None)
            if len(replies) != count or any(r != PAYLOAD for r in replies):
                raise SystemExit("a reply differs from the request")
            return e
        finally:
            for c in chans:
                await c.close()

    # gridbench's one grpc.aio loop: grpc.aio binds to the first loop it meets
    return _run_async(run())  # type: ignore[arg-type,return-value]


def future_variant(
    target: str, count: int, *, registered: bool, lean: bool, no_gc: bool = False
) -> Enqueue:
    """One burst of ``.future()`` calls on a synchronous channel."""
    channel = grpc.insecure_channel(target, options=LEAN if lean else OPTIONS)
    try:
        mc = (
            channel.unary_unary(METHOD, _registered_method=True)
            if registered
            else channel.unary_unary(METHOD)
        )
        mc(b"", timeout=10)
        done = threading.Event()
        left = [count]
        lock = threading.Lock()

        def arrived(_: Any) -> None:
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

        with gc_paused() if no_gc else contextlib.nullcontext():
            st = _start()
            futs = []
            for _ in range(count):
                f = mc.future(PAYLOAD, timeout=60)
                f.add_done_callback(arrived)
                futs.append(f)
            e = _stop(st)
            answered = done.wait(70)
        if not answered or any(f.result() != PAYLOAD for f in futs):
            raise SystemExit("a .future() burst did not complete")
        return e
    finally:
        channel.close()


def used_variant(target: str, count: int) -> Enqueue:
    """What gridbench runs (:func:`aio_burst`): wall, and the CPU fields if recorded."""
    b = aio_burst(target, None, PAYLOAD, count, 60)
    return Enqueue(b.enqueue_ns, b.enqueue_cpu_ns if b.enqueue_cpu_ns is not None else -1, -1)


def _zmq(client: ZmqClient, count: int) -> Enqueue:
    b = client.burst(PAYLOAD, count, 60)
    return Enqueue(b.enqueue_ns, b.enqueue_cpu_ns if b.enqueue_cpu_ns is not None else -1, -1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--burst", type=int, default=1200)
    ap.add_argument("--only", default="", help="comma-separated variant names")
    ap.add_argument(
        "--pin", action="store_true", help="client on CPU 0, the peer on CPU 1 (what bounds wall)"
    )
    a = ap.parse_args()
    n = a.burst
    logs = Path(tempfile.mkdtemp(prefix="gb-grpc-burst-"))

    def spawn(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as err:
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)

    peer = start_peer(spawn, peer_argv("grpc", "127.0.0.1"), "grpc", logs / "grpc.log", 30)
    target = f"127.0.0.1:{peer.port}"
    if a.pin:
        os.sched_setaffinity(0, {0})
        os.sched_setaffinity(peer.proc.pid, {1})
    GrpcEchoClient(target).close()  # the peer answers
    zpeer = start_peer(spawn, peer_argv("zmq", "127.0.0.1"), "zmq", logs / "zmq.log", 30)
    zmq = ZmqClient(f"127.0.0.1:{zpeer.port}")
    old, lean, lean_ng = (
        AioWay(),
        AioWay(options=tuple(LEAN)),
        AioWay(options=tuple(LEAN), no_gc=True),
    )
    ways: dict[str, Callable[[], Enqueue]] = {
        # what gridbench runs (lean options, collector paused) and what it ran before
        "aio (gridbench)": lambda: used_variant(target, n),
        "aio before": lambda: aio_variant(target, old, n),
        # one change at a time against "aio before"
        "aio gc paused": lambda: aio_variant(target, AioWay(no_gc=True), n),
        "aio lean options": lambda: aio_variant(target, lean, n),
        "aio no retries": lambda: aio_variant(
            target, AioWay(options=(*OPTIONS, ("grpc.enable_retries", 0))), n
        ),
        "aio minimal stack": lambda: aio_variant(
            target, AioWay(options=(*OPTIONS, ("grpc.minimal_stack", 1))), n
        ),
        "aio no deadline": lambda: aio_variant(target, AioWay(deadline=False), n),
        "aio registered": lambda: aio_variant(target, AioWay(registered=True), n),
        "aio 4 channels": lambda: aio_variant(target, AioWay(channels=4), n),
        "aio gather coros": lambda: aio_variant(target, AioWay(gather=True), n),
        # the best combinations
        "aio lean gc-paused": lambda: aio_variant(target, lean_ng, n),
        "aio lean gc-p. reg nodl": lambda: aio_variant(
            target, AioWay(registered=True, deadline=False, options=tuple(LEAN), no_gc=True), n
        ),
        # the synchronous channel
        ".future()": lambda: future_variant(target, n, registered=False, lean=False),
        ".future() lean gc-p.": lambda: future_variant(
            target, n, registered=True, lean=True, no_gc=True
        ),
        # the other transport, for scale
        "zmq DEALER (gridbench)": lambda: _zmq(zmq, n),
    }
    if a.only:
        keep = set(a.only.split(","))
        ways = {k: v for k, v in ways.items() if k in keep}
    res: dict[str, list[Enqueue]] = {k: [] for k in ways}
    try:
        for fn in ways.values():  # warm-up: imports, first-call paths
            fn()
        for r in range(a.rounds):
            for name, fn in ways.items():
                res[name].append(fn())
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    finally:
        zmq.close()
        zpeer.close()
        peer.close()

    def fmt(vals: list[int]) -> str:
        if min(vals) < 0:
            return f"{'(not recorded)':>22}"
        ms = [v / 1e6 for v in vals]
        return f"{statistics.median(ms):7.1f} ({min(ms):5.1f}-{max(ms):5.1f})"

    print(f"\n{n}-call gRPC burst, enqueue (ms): median (min-max) over {a.rounds} rounds")
    print(f"{'variant':24} {'wall':>22} {'thread CPU':>22} {'process CPU':>22}  csw vol/invol")
    for name, vals in res.items():
        csw = "  n/a"
        if min(v.vol for v in vals) >= 0:
            vol = statistics.median(v.vol for v in vals)
            csw = f"{vol:5.0f}/{statistics.median(v.invol for v in vals):.0f}"
        print(
            f"{name:24} {fmt([v.wall for v in vals]):>22} {fmt([v.thread for v in vals]):>22}"
            f" {fmt([v.proc for v in vals]):>22}  {csw}"
        )
    print(f"(grpcio {grpc.__version__}, python {sys.version.split()[0]}, peer log {logs})")


if __name__ == "__main__":
    main()
