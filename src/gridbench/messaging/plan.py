"""What a net spec will run, step by step, and about how long: for ``gridbench net plan``
and the progress bar.

A step is one (environment, pattern, transport or tool, configuration) combination; the
runner (:mod:`gridbench.messaging.runner`) walks the same steps in the same order. Each
step's duration comes from a cost model in plain data (the constants below): the floor
tools' fixed run times, a peer's start, and per message or transfer a time measured on
loopback; a real network is slower by its own latency and rate. Pure: nothing here
starts a process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import psutil

from gridbench.errors import SpecError
from gridbench.messaging.floor import SOCKPERF_MAX, SOCKPERF_MIN
from gridbench.messaging.model import Environment, NetSpec
from gridbench.units import format_size

#: Copies of the largest message alive at once during a ping-pong (client send and receive
#: buffers, the peer's buffer and the kernel's socket queues), for the memory check.
PINGPONG_COPIES = 4
#: Copies of a ZeroMQ transfer payload alive at once (the message and its receive buffer).
TRANSFER_COPIES = 2


# Calibration: examples/net-loopback-quick.yaml on 2 shared cores (loopback, environments
# process and host, floor.duration 1 s), 112 s in all; step times from its peers' start
# times (processes.jsonl), per-message times from its records. The relay and MUSCLE3 from
# the quick variant of examples/net-seed-muscle-relay.yaml (161 s).

#: sockperf per message size beyond its ``floor.duration`` (its warm-up and start: the 12
#: sizes it accepts took 39 s at 1 s each); sizes it refuses cost nothing.
SOCKPERF_EXTRA_S = 2.25
#: iperf3 per run beyond ``floor.duration`` (4 runs of 1 s took 4.1 s).
IPERF3_EXTRA_S = 0.03
#: Starting a peer process and connecting to it (tcp 0.5 s, zmq 1.0 s, grpc 0.2..0.5 s);
#: in environment ``process`` the peer is a thread.
PEER_START_S = 0.5
THREAD_PEER_START_S = 0.05
#: One round trip's fixed part, and the rate a message is copied at on loopback (a 1 MiB
#: ZeroMQ round trip took 1.7 ms, raw TCP 0.4 ms at 256 KiB).
ROUND_TRIP_S = 60e-6
LOOPBACK_BPS = 1.3e9
#: One sequential echo call per configuration (gRPC, 64 B: in process 0.26 ms, over
#: loopback 0.33 ms, with TLS 0.38 ms).
ECHO_CALL_S = {"inprocess": 260e-6, "network": 330e-6, "tls": 380e-6}
#: One scaling round: starting k client processes and releasing them (6 rounds in 2.9 s).
SCALE_ROUND_S = 0.4
#: One call of a burst (1200 calls took 0.1..0.3 s).
BURST_CALL_S = 200e-6
#: One transfer's fixed part per tool (scp: an ssh handshake, 0.6 s per 16 MB transfer),
#: the payload moving at LOOPBACK_BPS.
TRANSFER_FIXED_S = {"scp": 0.55, "tcp_streams": 0.01, "zmq": 0.01}
#: A MUSCLE3 run: muscle_manager and its two instances starting and registering (3.6 s
#: with 22 sizes × 51 round trips, examples/net-seed-muscle-relay.yaml's quick variant).
MUSCLE_START_S = 3.0
#: The relay's own cost per pass beyond its delay (asyncio's timer, the copy): the quick
#: muscle-relay variant's 1122 round trips through a 5 ms relay took 13..15 ms each.
RELAY_PASS_S = 2e-3
#: The relay's copy rate per pass, and building each test's message (random bytes, the
#: framing copy) once per test: from the full muscle-relay run (64 MiB round trips took
#: 56..99 ms directly and 158..286 ms through the relay; each 64M step spent 20..60 s
#: beyond its round trips), on the same 2 shared cores while other runs used them.
RELAY_BPS = 1.0e9
PAYLOAD_BPS = 150e6
#: Starting the command, analysis and the reports (4 s measured).
RUN_FIXED_S = 4.0


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
    return [t for t in spec.pingpong.transports if t != "muscle3" or env in ("host", "remote")]


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
        if spec.rr.enabled:
            n = len(spec.rr.buffers) or 1
            for proto in spec.rr.protocols:
                out.append(Step(env, "rr", proto, f"{proto} transactions x{n} buffers", n))
            if spec.rr.udp:
                out.append(Step(env, "rr", "stream", f"iperf3 -u x{n} buffers", n))
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


def round_trip_s(spec: NetSpec, env: Environment, size: int) -> float:
    """One ping-pong round trip of ``size`` bytes: the fixed part, the message copied each
    way, and (through the relay) its delay line held twice."""
    relay = 2 * (spec.relay.delay + RELAY_PASS_S + size / RELAY_BPS) if env == "relay" else 0.0
    return ROUND_TRIP_S + 2 * size / LOOPBACK_BPS + relay


def pingpong_seconds(spec: NetSpec, env: Environment, transport: str) -> float:
    """A peer's start, then every size's warm-up and T tests of M round trips, each test
    building its message first."""
    pp = spec.pingpong
    per_size = pp.warmup + pp.tests * pp.round_trips
    builds = (pp.tests + (1 if pp.warmup else 0)) / PAYLOAD_BPS
    trips = sum(per_size * round_trip_s(spec, env, n) + n * builds for n in pp.sizes.values())
    start = MUSCLE_START_S if transport == "muscle3" else peer_start_s(env)
    return start + trips


def peer_start_s(env: Environment) -> float:
    """A peer in its own process, or a thread in environment ``process``; through the relay
    the forwarder starts too."""
    if env == "process":
        return THREAD_PEER_START_S
    return 2 * PEER_START_S if env == "relay" else PEER_START_S


def floor_seconds(spec: NetSpec, tool: str) -> float:
    """sockperf once per size it accepts, iperf3 four times (1 and N streams, both ways)."""
    secs = max(1, math.ceil(spec.floor.duration))
    if tool == "iperf3":
        return 4 * (spec.floor.duration + IPERF3_EXTRA_S)
    sizes = [n for n in floor_sizes(spec) if SOCKPERF_MIN <= n <= SOCKPERF_MAX]
    return len(sizes) * (secs + SOCKPERF_EXTRA_S)


def step_seconds(spec: NetSpec, step: Step) -> float:
    """About how long one step takes (see the calibration constants above)."""
    env, e = step.env, spec.echo
    if step.pattern == "floor":
        return floor_seconds(spec, step.what)
    if step.pattern == "rr":  # one run of whole seconds per buffer size, plus its start
        runs = len(spec.rr.buffers) or 1
        return runs * (max(1, math.ceil(spec.rr.duration)) + SOCKPERF_EXTRA_S)
    if step.pattern == "pingpong":
        return pingpong_seconds(spec, env, step.what)
    if step.pattern == "echo":
        calls = sum(e.calls) * e.repetitions
        start = THREAD_PEER_START_S if step.config == "inprocess" else peer_start_s(env)
        return start + calls * ECHO_CALL_S[step.config]
    if step.pattern == "echo_scale":
        call = ECHO_CALL_S[scaling_config(spec)]
        rounds = [SCALE_ROUND_S + k * e.client_calls * call for k in e.clients]
        return peer_start_s(env) + e.scale_repetitions * sum(rounds)
    if step.pattern == "burst":
        b = spec.burst
        return peer_start_s(env) + b.repetitions * b.calls * BURST_CALL_S
    t = spec.transfer  # transfer
    one = TRANSFER_FIXED_S.get(step.what, 0.0) + t.size / LOOPBACK_BPS
    return peer_start_s(env) + 2 * t.repetitions * one


def estimated_seconds(spec: NetSpec) -> float:
    """The whole run: every step plus the fixed start and reports."""
    return RUN_FIXED_S + sum(step_seconds(spec, s) for s in steps(spec))


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
