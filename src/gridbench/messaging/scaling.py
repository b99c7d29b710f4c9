"""The client-scaling series of the echo pattern: k client processes at once against one
service, released together, for every k in ``echo.clients`` (the seed went up to 320)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import suppress
from typing import Any, Literal, cast

from gridbench.messaging.patterns import READY_TIMEOUT, Context, fail_record, serve_for
from gridbench.messaging.plan import scaling_config
from gridbench.messaging.transports.base import PeerError


def echo_scale(ctx: Context, transport: str) -> Iterator[dict[str, Any]]:
    """k client processes at once against one service, for every k in ``echo.clients``."""
    from gridbench.messaging.transports import registry

    spec = ctx.spec.echo
    kind = cast(Literal["grpc", "zmq"], transport)
    config = scaling_config(ctx.spec)
    if kind != "grpc" and config == "tls":
        config = "network"
    tls = config == "tls"
    with serve_for(ctx, kind, tls=tls) as target:
        for k in spec.clients:
            for rep in range(spec.scale_repetitions):
                base = {
                    "pattern": "echo_scale",
                    "transport": transport,
                    "env": ctx.env.name,
                    "config": config,
                    "clients": k,
                    "rep": rep,
                }
                argv = registry.echo_client_argv(
                    kind,
                    target,
                    tls=ctx.tls() if tls else None,
                    calls=spec.client_calls,
                    payload=spec.payload,
                    timeout=ctx.timeout,
                )
                try:
                    per_client = _clients(ctx, argv, k)
                except (PeerError, OSError) as exc:
                    yield fail_record(base, exc)
                    continue
                lat = [x for c in per_client for x in c]
                means = [sum(c) // len(c) for c in per_client if c]
                yield {**base, "ok": True, "error": None, "lat_ns": lat, "client_mean_ns": means}


def _clients(ctx: Context, argv: list[str], k: int) -> list[list[int]]:
    """Start k client processes, release them together once all are READY, and collect
    each one's latencies."""
    from gridbench.messaging.transports.peer_process import read_ready

    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(k):
            log = ctx.work / f"echo-client-{i}.log"
            with log.open("wb") as err:
                p = subprocess.Popen(  # clients run on this side, as the seed's did
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    start_new_session=True,
                )
            ctx.book.register(p, "echo-client")
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
