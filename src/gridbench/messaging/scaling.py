"""The client-scaling series of the echo pattern: k client processes at once against one
service, released together, for every k in ``echo.clients`` (the seed went up to 320).

In the ``remote`` environment with ``remote.clients`` (the DIXI layout, 000 §4.5.2-4.5.3),
each named host runs k client processes at once: those on the peer's own host are
co-hosted, the others remote, and each record keeps the two groups' latencies apart."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, cast

from gridbench.messaging.patterns import (
    READY_TIMEOUT,
    Context,
    fail_record,
    serve_for,
    start_peer_in,
)
from gridbench.messaging.plan import scaling_config
from gridbench.messaging.remote_env import RemoteEnv
from gridbench.messaging.transports.base import Address, PeerError

#: starts one client: (argv, role, log) -> the process
Start = Callable[[list[str], str, Path], "subprocess.Popen[bytes]"]


def _local(argv: list[str], role: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen(  # clients run on this side, as the seed's did
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            start_new_session=True,
        )  # fmt: skip


def echo_scale(ctx: Context, transport: str) -> Iterator[dict[str, Any]]:
    """k client processes at once against one service, for every k in ``echo.clients``
    (on each client host of ``remote.clients``, when the environment has them)."""
    from gridbench.messaging.transports import registry

    spec = ctx.spec.echo
    kind = cast(Literal["grpc", "zmq"], transport)
    config = scaling_config(ctx.spec)
    if kind != "grpc" and config == "tls":
        config = "network"
    tls = config == "tls"
    env = ctx.env
    placed = isinstance(env, RemoteEnv) and bool(env.client_hosts)

    def argv(target: str) -> list[str]:
        return registry.echo_client_argv(
            kind,
            target,
            tls=ctx.tls() if tls else None,
            calls=spec.client_calls,
            payload=spec.payload,
            timeout=ctx.timeout,
        )

    with _served(ctx, kind, tls) as (routed, direct):
        for k in spec.clients:
            for rep in range(spec.scale_repetitions):
                base = {
                    "pattern": "echo_scale",
                    "transport": transport,
                    "env": env.name,
                    "config": config,
                    "clients": k,
                    "rep": rep,
                }
                jobs: list[tuple[str, list[str], Start]] = []
                if isinstance(env, RemoteEnv) and placed:
                    base["hosts"] = len(env.client_hosts)
                    for name, host in env.client_hosts.items():
                        # a client on a host dials the peer itself; one here, its route
                        there = argv(direct if host is not None else routed)
                        start = _on(env, name)
                        jobs += [(name, there, start)] * k
                else:
                    jobs = [("local", argv(routed), _local)] * k
                try:
                    per_client = _clients(ctx, jobs)
                except (PeerError, OSError) as exc:
                    yield fail_record(base, exc)
                    continue
                lat = [x for c in per_client for x in c]
                means = [sum(c) // len(c) for c in per_client if c]
                rec = {**base, "ok": True, "error": None, "lat_ns": lat, "client_mean_ns": means}
                if isinstance(env, RemoteEnv) and placed:
                    co = [name == env.host.name for name, _, _ in jobs]
                    pairs = list(zip(per_client, co, strict=True))
                    rec["cohosted_lat_ns"] = [x for c, y in pairs if y for x in c]
                    rec["remote_lat_ns"] = [x for c, y in pairs if not y for x in c]
                yield rec


def _on(env: RemoteEnv, name: str) -> Start:
    """Start a client on client host ``name`` of the remote environment."""
    return lambda argv, role, log: env.spawn_on(name, argv, role, log)


@contextmanager
def _served(ctx: Context, kind: Literal["grpc", "zmq"], tls: bool) -> Iterator[tuple[str, str]]:
    """The echo service where the environment puts it: (the target a client here dials,
    the peer's own address, which clients on other hosts dial)."""
    from gridbench.messaging.transports import registry

    if ctx.env.in_process:
        with serve_for(ctx, kind, tls=tls) as target:
            yield target, target
        return
    files = ctx.tls() if tls else None
    peer = start_peer_in(ctx, registry.peer_argv(kind, ctx.env.peer_host, tls=files),
                         f"{kind}-peer")  # fmt: skip
    try:
        direct = Address(ctx.env.peer_host, peer.port)
        yield str(ctx.env.route(direct)), str(direct)
    finally:
        peer.close()


def _clients(ctx: Context, jobs: list[tuple[str, list[str], Start]]) -> list[list[int]]:
    """Start every client (``(host, argv, start)``), release them together once all are
    READY, and collect each one's latencies, in the order of ``jobs``."""
    from gridbench.messaging.transports.peer_process import read_ready

    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i, (host, argv, start) in enumerate(jobs):
            p = start(argv, f"echo-client-{host}", ctx.work / f"echo-client-{i}.log")
            if start is _local:
                ctx.book.register(p, "echo-client")  # an environment's spawn records its own
            procs.append(p)
        for p in procs:
            read_ready(p, READY_TIMEOUT)
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            p.stdin.flush()
        out: list[list[int]] = []
        for p in procs:
            try:
                stdout, _ = p.communicate(timeout=ctx.timeout + READY_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise PeerError(f"an echo client did not finish within {ctx.timeout:g} s") from None
            line = stdout.decode("utf-8", "replace").strip().splitlines()
            try:
                doc = json.loads(line[-1]) if line else {}
            except json.JSONDecodeError:
                doc = {}
            if not isinstance(doc, dict) or not isinstance(doc.get("lat_ns"), list):
                raise PeerError(
                    str(doc.get("error") if isinstance(doc, dict) else "")
                    or f"an echo client exited {p.returncode} without results"
                )
            out.append([int(x) for x in doc["lat_ns"]])
        return out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            with suppress(subprocess.TimeoutExpired):
                p.wait(5)
