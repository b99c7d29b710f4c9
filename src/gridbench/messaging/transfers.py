"""The transfer pattern: move the payload ``repetitions`` times in each direction with
each tool (scp through a throw-away sshd or a given one, parallel TCP streams, ZeroMQ)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Literal, cast

from gridbench.messaging.patterns import READY_TIMEOUT, Context, fail_record, start_peer_in
from gridbench.messaging.transports.base import Address, PeerError


def transfer(ctx: Context, tool: str) -> Iterator[dict[str, Any]]:
    """Move the payload ``repetitions`` times up, then down."""
    spec = ctx.spec.transfer
    streams = spec.streams if tool == "tcp_streams" else 1
    todo = [(d, rep) for d in ("up", "down") for rep in range(spec.repetitions)]

    def base(direction: str, rep: int) -> dict[str, Any]:
        return {
            "pattern": "transfer",
            "tool": tool,
            "env": ctx.env.name,
            "direction": direction,
            "bytes": spec.size,
            "streams": streams,
            "rep": rep,
        }

    with ExitStack() as stack:
        try:
            run_one = stack.enter_context(_transfer_endpoint(ctx, tool, streams))
        except (PeerError, OSError) as exc:
            for d, rep in todo:
                yield fail_record(base(d, rep), exc)
            return
        for d, rep in todo:
            direction = cast(Literal["up", "down"], d)
            try:
                elapsed = run_one(direction)
            except (PeerError, OSError) as exc:
                yield fail_record(base(d, rep), exc)
                continue
            yield {**base(d, rep), "ok": True, "error": None, "elapsed_ns": elapsed}


@contextmanager
def _transfer_endpoint(
    ctx: Context, tool: str, streams: int
) -> Iterator[Callable[[Literal["up", "down"]], int]]:
    """A function moving the payload once in a direction, with its peer started."""
    from gridbench.messaging.transports import transfer as tx

    spec = ctx.spec.transfer
    if tool == "scp":
        from gridbench.messaging.transports.sshd import start_sshd

        payload = ctx.work / "payload.bin"
        if not payload.exists() or payload.stat().st_size != spec.size:
            tx.make_payload(payload, spec.size)
        if spec.scp is not None:
            server: Any = spec.scp
        else:
            server = start_sshd(ctx.env.spawn, ctx.env.peer_host, ctx.work / "sshd", READY_TIMEOUT)
        try:
            routed = _Routed(server, ctx.env.route(Address(server.host, server.port)))
            yield lambda d: tx.scp_transfer(routed, payload, spec.size, d, timeout=ctx.timeout)
        finally:
            if spec.scp is None:
                server.close()
        return
    kind = cast(Literal["tcp_streams", "zmq"], tool)
    peer = start_peer_in(
        ctx, tx.transfer_peer_argv(kind, ctx.env.peer_host, streams=streams), f"{tool}-peer"
    )
    try:
        target = ctx.env.route(Address(ctx.env.peer_host, peer.port))
        yield lambda d: tx.run_transfer(
            kind, target, spec.size, d, streams=streams, timeout=ctx.timeout
        )
    finally:
        peer.close()


@dataclass(frozen=True)
class _Routed:
    """An ssh server as the client reaches it (through the relay, if there is one)."""

    server: Any
    address: Address

    @property
    def host(self) -> str:
        return self.address.host

    @property
    def port(self) -> int:
        return self.address.port

    @property
    def user(self) -> str:
        return str(self.server.user)

    @property
    def identity(self) -> Any:
        return self.server.identity

    @property
    def directory(self) -> str:
        return str(self.server.directory)
