"""What a net spec will run, step by step: for ``gridbench net plan`` and the progress bar.

A step is one (environment, pattern, transport or tool, configuration) combination; the
runner (:mod:`gridbench.messaging.runner`) walks the same steps in the same order. Pure:
nothing here starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from gridbench.errors import SpecError
from gridbench.messaging.model import Environment, NetSpec
from gridbench.units import format_size

#: Copies of the largest message alive at once during a ping-pong (client send and receive
#: buffers, the peer's buffer and the kernel's socket queues), for the memory check.
PINGPONG_COPIES = 4
#: Copies of a ZeroMQ transfer payload alive at once (the message and its receive buffer).
TRANSFER_COPIES = 2


@dataclass(frozen=True, slots=True)
class Step:
    """One combination the run measures."""

    env: Environment
    pattern: str  # floor | pingpong | echo | echo_scale | burst | transfer
    what: str  # transport, tool or native tool
    config: str  # echo config, direction, sizes ...
    measurements: int  # tests, series or transfers this step records

    def label(self) -> str:
        """Short text for the progress bar."""
        return f"{self.env}: {self.pattern} {self.what} {self.config}".strip()


def echo_configs_in(spec: NetSpec, env: Environment) -> list[str]:
    """The echo configurations measured in ``env``: ``inprocess`` runs once per run, in
    the first environment listed; ``network`` and ``tls`` run in every environment."""
    first = spec.environments[0]
    return [c for c in spec.echo.configs if c != "inprocess" or env == first]


def pingpong_transports_in(spec: NetSpec, env: Environment) -> list[str]:
    """MUSCLE3's pair runs under muscle_manager on this host only (environment host)."""
    return [t for t in spec.pingpong.transports if t != "muscle3" or env == "host"]


def steps(spec: NetSpec) -> list[Step]:
    """Every step, in the order the runner takes them."""
    out: list[Step] = []
    sizes = spec.pingpong.sizes.values()
    for env in spec.environments:
        if spec.floor.sockperf and (spec.pingpong.enabled or spec.echo.enabled):
            n = len(floor_sizes(spec))
            out.append(Step(env, "floor", "sockperf", f"{n} sizes", n))
        if spec.floor.iperf3 and (spec.pingpong.enabled or spec.transfer.enabled):
            out.append(Step(env, "floor", "iperf3", "1 and N streams, both directions", 4))
        if spec.pingpong.enabled:
            for t in pingpong_transports_in(spec, env):
                span = f"{format_size(sizes[0])}..{format_size(sizes[-1])}" if sizes else ""
                out.append(Step(env, "pingpong", t, span, len(sizes) * spec.pingpong.tests))
        if spec.echo.enabled:
            for t in spec.echo.transports:
                for c in echo_configs_in(spec, env):
                    if c == "tls" and t != "grpc":
                        continue
                    n = len(spec.echo.calls) * spec.echo.repetitions
                    out.append(Step(env, "echo", t, c, n))
                if env != "process" and spec.echo.clients:
                    cfg = scaling_config(spec)
                    if t != "grpc" and cfg == "tls":
                        cfg = "network"
                    out.append(
                        Step(
                            env,
                            "echo_scale",
                            t,
                            f"{cfg}, {max(spec.echo.clients)} clients max",
                            len(spec.echo.clients) * spec.echo.scale_repetitions,
                        )
                    )
        if spec.burst.enabled:
            out.append(
                Step(
                    env,
                    "burst",
                    spec.burst.transport,
                    f"{spec.burst.calls} calls",
                    spec.burst.repetitions,
                )
            )
        if spec.transfer.enabled and env != "process":
            for tool in spec.transfer.tools:
                out.append(
                    Step(
                        env,
                        "transfer",
                        tool,
                        f"{format_size(spec.transfer.size)} up and down",
                        2 * spec.transfer.repetitions,
                    )
                )
    return out


def scaling_config(spec: NetSpec) -> str:
    """The echo configuration the client-scaling series uses: ``network`` when it is
    measured, else ``tls``, else ``network`` anyway (scaling needs separate processes)."""
    if "network" in spec.echo.configs:
        return "network"
    return "tls" if "tls" in spec.echo.configs else "network"


def floor_sizes(spec: NetSpec) -> list[int]:
    """Message sizes the sockperf floor is measured at: the ping-pong sizes and the echo
    payload (sockperf refuses some; the floor module records which)."""
    sizes: set[int] = set()
    if spec.pingpong.enabled:
        sizes.update(spec.pingpong.sizes.values())
    if spec.echo.enabled or spec.burst.enabled:
        sizes.add(spec.echo.payload)
    return sorted(sizes)


def memory_needed(spec: NetSpec) -> tuple[int, str]:
    """The most memory the run holds at once, and the spec field that decides it."""
    need, where = 0, "pingpong.sizes.max"
    if spec.pingpong.enabled and spec.pingpong.sizes.values():
        need = PINGPONG_COPIES * max(spec.pingpong.sizes.values())
    if spec.transfer.enabled and "zmq" in spec.transfer.tools:
        t = TRANSFER_COPIES * spec.transfer.size
        if t > need:
            need, where = t, "transfer.size"
    return need, where


def check_memory(spec: NetSpec, available: int | None = None) -> None:
    """Refuse a run whose largest message or payload does not fit in the free memory,
    before anything starts."""
    need, where = memory_needed(spec)
    free = psutil.virtual_memory().available if available is None else available
    if need > free:
        raise SpecError(
            f"the run needs about {format_size(need)} of memory at once, but "
            f"{format_size(free)} is free",
            where=where,
            fix=f"lower {where} (each message is held about {PINGPONG_COPIES} times: by the "
            "client, the peer and the socket buffers)",
        )
