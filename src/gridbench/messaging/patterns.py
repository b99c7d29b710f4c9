"""Ping-pong, echo, burst and the floor, as record generators over one environment (the
client-scaling series is in :mod:`~gridbench.messaging.scaling`, transfers in
:mod:`~gridbench.messaging.transfers`), and what they share: the context and the servers.

Each function yields the records of one step (see :mod:`gridbench.messaging.records`);
the runner appends each as it comes, so a killed run keeps every finished test. A peer
failure is a failed record with the error, never an exception out of the step: the
step restarts the peer and goes on with the next size, series or repetition.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from gridbench.messaging.environments import NetEnvironment
from gridbench.messaging.model import NetSpec
from gridbench.messaging.plan import floor_sizes
from gridbench.messaging.processes import ProcessBook
from gridbench.messaging.transports.base import Address, PeerError, TlsFiles
from gridbench.messaging.transports.peer_process import PeerProcess, start_peer

#: Seconds a peer process may take to print READY (a Python interpreter starting).
READY_TIMEOUT = 30.0


@dataclass
class Context:
    """What every pattern needs: the spec, the environment and the run's book."""

    spec: NetSpec
    env: NetEnvironment
    work: Path
    book: ProcessBook
    record: Callable[[dict[str, Any]], None]
    note: Callable[..., None]
    tls_files: TlsFiles | None = None

    @property
    def timeout(self) -> float:
        return self.spec.test_timeout

    def tls(self) -> TlsFiles:
        """The run's throw-away CA and server certificate for this environment's peer
        host, made once."""
        from gridbench.messaging.transports.tls import make_tls

        if self.tls_files is None:
            d = self.work / "tls"
            d.mkdir(parents=True, exist_ok=True)
            self.tls_files = make_tls(d, self.env.peer_host)
        return self.tls_files


def fail_record(base: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    return {**base, "ok": False, "error": str(exc)[:2000] or type(exc).__name__}


# -- servers -------------------------------------------------------------------------------


@contextmanager
def serve_for(
    ctx: Context, kind: Literal["tcp", "zmq", "grpc"], *, tls: bool = False, inproc: bool = False
) -> Iterator[str]:
    """A server for ``kind`` where the environment puts it; yields the client's target."""
    from gridbench.messaging.transports import registry

    files = ctx.tls() if tls else None
    if ctx.env.in_process or inproc:
        server = registry.serve_in_process(kind, inproc=inproc and kind == "zmq", tls=files)
        try:
            yield server.target
        finally:
            server.close()
        return
    peer = start_peer_in(
        ctx, registry.peer_argv(kind, ctx.env.peer_host, tls=files), f"{kind}-peer"
    )
    try:
        # the certificate names peer_host; a relay listens on loopback, which the
        # certificate of the relay environment (peer_host 127.0.0.1) names as well
        yield str(ctx.env.route(Address(ctx.env.peer_host, peer.port)))
    finally:
        peer.close()


def start_peer_in(ctx: Context, argv: list[str], role: str) -> PeerProcess:
    log = ctx.work / f"{role}-{os.urandom(3).hex()}.log"
    return start_peer(ctx.env.spawn, argv, role, log, READY_TIMEOUT)


# -- floor ---------------------------------------------------------------------------------


def floor(ctx: Context, floor_env: NetEnvironment, tool: str) -> Iterator[dict[str, Any]]:
    """The native tools in this environment (for ``process``: on loopback)."""
    from gridbench.messaging import floor as native

    spec, env_name = ctx.spec, ctx.env.name
    if tool == "sockperf":
        for rec in native.sockperf_floor(
            floor_env, floor_sizes(spec), spec.floor.duration, ctx.work, timeout=ctx.timeout
        ):
            yield {**rec, "env": env_name}
        return
    for streams in (1, spec.floor.iperf3_streams):
        for reverse in (False, True):
            base = {
                "pattern": "floor",
                "tool": "iperf3",
                "env": env_name,
                "streams": streams,
                "direction": "down" if reverse else "up",
            }
            try:
                rec = native.iperf3_floor(
                    floor_env,
                    streams,
                    spec.floor.duration,
                    ctx.work,
                    reverse=reverse,
                    timeout=ctx.timeout + spec.floor.duration,
                )
            except Exception as exc:  # a floor that cannot be measured is a record, not a stop
                yield fail_record(base, exc)
                continue
            yield {**rec, "env": env_name}


# -- ping-pong -----------------------------------------------------------------------------


def pingpong(ctx: Context, transport: str) -> Iterator[dict[str, Any]]:
    """T tests of M round trips at every size; a failure restarts the peer and moves on
    to the next size."""
    spec = ctx.spec.pingpong
    if transport == "muscle3":
        yield from _muscle(ctx)
        return
    from gridbench.messaging.transports import registry

    kind = cast(Literal["tcp", "zmq"], transport)
    sizes = list(spec.sizes.values())
    i = 0
    while i < len(sizes):
        with ExitStack() as stack:
            try:
                target = stack.enter_context(serve_for(ctx, kind))
                client = registry.connect_pingpong(kind, target)
                stack.callback(client.close)
            except (PeerError, OSError) as exc:
                for size in sizes[i:]:
                    yield fail_record(_pp_base(ctx, transport, size, 0), exc)
                return
            while i < len(sizes):
                size = sizes[i]
                i += 1
                failed = False
                try:
                    if spec.warmup:
                        client.round_trips(size, spec.warmup, ctx.timeout)
                except (PeerError, OSError) as exc:
                    yield fail_record(_pp_base(ctx, transport, size, 0), exc)
                    break
                for test in range(spec.tests):
                    base = _pp_base(ctx, transport, size, test)
                    try:
                        rtts = client.round_trips(size, spec.round_trips, ctx.timeout)
                    except (PeerError, OSError) as exc:
                        yield fail_record(base, exc)
                        failed = True
                        break
                    yield {**base, "ok": True, "error": None, "rtt_ns": rtts}
                if failed:
                    break  # a fresh peer and connection for the next size


def _pp_base(ctx: Context, transport: str, size: int, test: int) -> dict[str, Any]:
    return {
        "pattern": "pingpong",
        "transport": transport,
        "env": ctx.env.name,
        "size_bytes": size,
        "test": test,
    }


def _muscle(ctx: Context) -> Iterator[dict[str, Any]]:
    from gridbench.messaging.transports.muscle import PingpongPlan, muscle_pingpong

    spec = ctx.spec.pingpong
    work = ctx.work / "muscle3"
    work.mkdir(exist_ok=True)
    plan = PingpongPlan(spec.sizes.values(), spec.tests, spec.round_trips, warmup=spec.warmup)
    if ctx.env.name == "host":
        yield from muscle_pingpong(plan, work, ctx.timeout, ctx.book.register)
        return
    env = ctx.env

    def mirror_there(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
        # under the launcher: the mirror reads no stdin, the launcher ends it when ours closes
        launch = [sys.executable, "-m", "gridbench.hosts.launch", "--"]
        return env.spawn([*launch, *argv], role, log)

    # MUSCLE3's instances dial the addresses they register: no proxy stands in between,
    # so on a latency path the pair takes the direct path, and its floor is not theirs
    for rec in muscle_pingpong(plan, work, ctx.timeout, ctx.book.register, env=env.name,
                               mirror_on=mirror_there):  # fmt: skip
        yield {**rec, "path": "direct"} if env.path_name != "direct" else rec


# -- echo, scaling and burst ---------------------------------------------------------------


def echo(ctx: Context, transport: str, config: str) -> Iterator[dict[str, Any]]:
    """Series of sequential calls, each length repeated."""
    from gridbench.messaging.transports import registry

    spec = ctx.spec.echo
    kind = cast(Literal["grpc", "zmq"], transport)
    env = "process" if config == "inprocess" else ctx.env.name
    payload = os.urandom(spec.payload)
    todo = [(calls, rep) for calls in spec.calls for rep in range(spec.repetitions)]
    while todo:
        with ExitStack() as stack:
            tls = config == "tls"
            try:
                target = stack.enter_context(
                    serve_for(ctx, kind, tls=tls, inproc=config == "inprocess")
                )
                client = registry.connect_echo(kind, target, tls=ctx.tls() if tls else None)
                stack.callback(client.close)
            except (PeerError, OSError) as exc:
                for calls, rep in todo:
                    yield fail_record(_echo_base(transport, env, config, calls, rep), exc)
                return
            while todo:
                calls, rep = todo.pop(0)
                base = _echo_base(transport, env, config, calls, rep)
                try:
                    lat = client.calls(payload, calls, ctx.timeout)
                except (PeerError, OSError) as exc:
                    yield fail_record(base, exc)
                    break
                yield {**base, "ok": True, "error": None, "lat_ns": lat}


def _echo_base(transport: str, env: str, config: str, calls: int, rep: int) -> dict[str, Any]:
    return {
        "pattern": "echo",
        "transport": transport,
        "env": env,
        "config": config,
        "calls": calls,
        "rep": rep,
    }


def burst(ctx: Context, transport: str) -> Iterator[dict[str, Any]]:
    """One client fires N asynchronous calls at once, repeated."""
    from gridbench.messaging.transports import registry

    spec = ctx.spec.burst
    kind = cast(Literal["grpc", "zmq"], transport)
    payload = os.urandom(spec.payload)
    with ExitStack() as stack:
        try:
            target = stack.enter_context(serve_for(ctx, kind))
            client = registry.connect_echo(kind, target)
            stack.callback(client.close)
        except (PeerError, OSError) as exc:
            for rep in range(spec.repetitions):
                yield fail_record(_burst_base(ctx, transport, spec.calls, rep), exc)
            return
        for rep in range(spec.repetitions):
            base = _burst_base(ctx, transport, spec.calls, rep)
            try:
                t = client.burst(payload, spec.calls, ctx.timeout)
            except (PeerError, OSError) as exc:
                yield fail_record(base, exc)
                continue
            yield {
                **base,
                "ok": True,
                "error": None,
                "enqueue_ns": t.enqueue_ns,
                "enqueue_cpu_ns": t.enqueue_cpu_ns,
                "first_ns": t.first_ns,
                "arrival_ns": t.arrival_ns,
            }


def _burst_base(ctx: Context, transport: str, calls: int, rep: int) -> dict[str, Any]:
    return {
        "pattern": "burst",
        "transport": transport,
        "env": ctx.env.name,
        "calls": calls,
        "rep": rep,
    }
