"""The ``net`` spec: which patterns run, over which transports, in which environments.

Pydantic models with forbid-extra, so a typo is an error that names the field and its fix
(docs/net.md). Sizes are bytes (``4k``, ``64M`` accepted); durations are seconds.
"""

from __future__ import annotations

import builtins
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.hosts.inventory import HostName
from gridbench.hosts.sampling.spec import SamplingSpec
from gridbench.specload import SpecName
from gridbench.testplan import TestPlan
from gridbench.thresholds import ThresholdSpec
from gridbench.units import Duration, Size

#: Where the two ends of a measurement run (docs/net.md "Environments").
Environment = Literal["process", "host", "lan", "relay", "remote"]
#: Ping-pong transports; ``muscle3`` is a driver/mirror pair under ``muscle_manager``.
PingPongTransport = Literal["tcp", "zmq", "muscle3"]
#: Request/response (echo) and burst transports.
EchoTransport = Literal["grpc", "zmq"]
#: How an echo series reaches its service: in the same process, over the environment's
#: network, or over it with TLS (gRPC only).
EchoConfig = Literal["inprocess", "network", "tls"]
TransferTool = Literal["scp", "tcp_streams", "zmq"]

MIB = 1024**2


def _host() -> list[Environment]:
    return ["host"]


def _tcp_zmq() -> list[PingPongTransport]:
    return ["tcp", "zmq"]


def _grpc() -> list[EchoTransport]:
    return ["grpc"]


def _echo_configs() -> list[EchoConfig]:
    return ["inprocess", "network", "tls"]


def _transfer_tools() -> list[TransferTool]:
    return ["tcp_streams", "zmq", "scp"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LanSpec(_Strict):
    """Two network namespaces joined by a veth pair, made by gridbench (root only)."""

    rate: str | None = Field(
        default=None,
        pattern=r"^\d+(\.\d+)?(bit|kbit|mbit|gbit)$",
        description="tc tbf rate on both ends of the veth pair, e.g. 100mbit; none: unshaped",
    )
    delay: Duration | None = Field(
        default=None,
        description="added one-way delay: needs tc netem, which this kernel may lack (refused "
        "with the reason when it does)",
    )
    subnet: str = Field(
        default="10.247.0",
        pattern=r"^10\.\d{1,3}\.\d{1,3}$",
        description="first three octets of the /24 the pair uses (.1 host side, .2 peer side)",
    )


class RelaySpec(_Strict):
    """A forwarding process between the two ends, as MUSCLE's MTO was."""

    tool: Literal["socat", "gridbench"] = Field(
        default="socat",
        description="socat (Debian socat), or gridbench's own forwarder, which can add a delay",
    )
    delay: Duration = Field(
        default=0.0,
        ge=0,
        le=10,
        description="seconds the gridbench forwarder holds each chunk (tool: gridbench only)",
    )

    @model_validator(mode="after")
    def _delay_needs_forwarder(self) -> RelaySpec:
        if self.delay and self.tool != "gridbench":
            raise ValueError("relay.delay needs relay.tool: gridbench (socat adds no delay)")
        return self


class SizesSpec(_Strict):
    """Message sizes: powers of two from ``min`` to ``max``, or an explicit ``list``."""

    min: Size = Field(default=0, description="0 is a zero-byte message, then 1, 2, 4 ...")
    max: Size = Field(default=64 * MIB, le=1024 * MIB)
    # the key is 'list' in YAML; builtins.list because the field shadows the name here
    list: Annotated[builtins.list[Size], Field(max_length=64)] | None = Field(
        default=None, description="explicit sizes in bytes; overrides min and max"
    )

    @model_validator(mode="after")
    def _order(self) -> SizesSpec:
        if self.list is None and self.min > self.max:
            raise ValueError("sizes.min is larger than sizes.max")
        if self.list is not None and any(s > 1024 * MIB for s in self.list):
            raise ValueError("a message size above 1 GiB is not supported")
        return self

    def values(self) -> tuple[int, ...]:
        """The sizes to measure, ascending and without duplicates."""
        if self.list is not None:
            return tuple(sorted(set(self.list)))
        out: list[int] = [0] if self.min == 0 else []
        s = 1
        while s <= self.max:
            if s >= self.min:
                out.append(s)
            s *= 2
        return tuple(out)


class PingPongSpec(_Strict):
    """T tests of M round trips per size (the seed's 30 x 10)."""

    enabled: bool = True
    transports: list[PingPongTransport] = Field(default_factory=_tcp_zmq, min_length=1)
    sizes: SizesSpec = Field(default_factory=SizesSpec)
    tests: int = Field(default=30, ge=1, le=10_000, description="T: tests per size")
    round_trips: int = Field(default=10, ge=1, le=100_000, description="M: round trips per test")
    warmup: int = Field(
        default=1, ge=0, le=100_000, description="untimed round trips before each size"
    )


class EchoSpec(_Strict):
    """Series of calls to an echo service (XtreemOS DIXI, METHODS 3.2)."""

    enabled: bool = True
    transports: list[EchoTransport] = Field(default_factory=_grpc, min_length=1)
    configs: list[EchoConfig] = Field(default_factory=_echo_configs, min_length=1)
    calls: list[Annotated[int, Field(ge=1, le=1_000_000)]] = Field(
        default_factory=lambda: list(range(200, 1601, 200)), min_length=1
    )
    repetitions: int = Field(default=10, ge=1, le=1000)
    payload: Size = Field(default=64, le=4 * MIB, description="bytes per request")
    clients: list[Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32],
        description="client processes for the scaling series (the seed went up to 320)",
    )
    client_calls: int = Field(
        default=200, ge=1, le=1_000_000, description="calls per client when scaling"
    )
    scale_repetitions: int = Field(
        default=3, ge=1, le=100, description="repetitions of each client count when scaling"
    )

    @model_validator(mode="after")
    def _tls_on_grpc(self) -> EchoSpec:
        if "tls" in self.configs and "grpc" not in self.transports:
            raise ValueError("echo config 'tls' needs the grpc transport (zmq runs without TLS)")
        return self


class RemoteSpec(_Strict):
    """The ``remote`` environment: peers on an inventory host, started over SSH; the
    clients here (docs/net.md, "Across hosts")."""

    inventory: str = Field(
        min_length=1,
        max_length=4096,
        description="the hosts file (a lab's: /run/gridbench-lab/NAME/inventory.yaml)",
    )
    peer: HostName = Field(description="the inventory host where the peers run")
    clients: list[HostName] = Field(
        default_factory=list,
        max_length=256,
        description="hosts that each run echo.clients client processes of the scaling "
        "series at once (DIXI: the peer's own host for co-hosted clients, others for remote "
        "ones; 'local': this host); none: every client here",
    )

    @model_validator(mode="after")
    def _distinct(self) -> RemoteSpec:
        if len(set(self.clients)) != len(self.clients):
            raise ValueError("remote.clients must not repeat a host")
        return self


class BurstSpec(_Strict):
    """One client fires N asynchronous calls at once."""

    enabled: bool = True
    transport: EchoTransport = "grpc"
    calls: int = Field(default=1200, ge=1, le=1_000_000)
    payload: Size = Field(default=64, le=4 * MIB)
    repetitions: int = Field(default=3, ge=1, le=1000)


class ScpTarget(_Strict):
    """An existing ssh server for scp transfers; default: gridbench starts a throw-away
    sshd on the peer side of each environment."""

    host: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:\[\]-]+$")
    port: int = Field(default=22, ge=1, le=65535)
    user: str = Field(default="root", pattern=r"^[A-Za-z0-9_.-]+$")
    identity: str | None = Field(default=None, description="ssh private key file (ssh -i)")
    directory: str = Field(default="/tmp", description="where the payload is written remotely")


class TransferSpec(_Strict):
    """Move a payload at least 20 times in each direction (MAPPER MPWide)."""

    enabled: bool = True
    tools: list[TransferTool] = Field(default_factory=_transfer_tools, min_length=1)
    size: Size = Field(default=64 * 1000**2, gt=0, le=16 * 1024**3)
    repetitions: int = Field(default=20, ge=1, le=10_000)
    streams: int = Field(default=4, ge=1, le=256, description="tcp_streams: parallel streams")
    scp: ScpTarget | None = None


class FloorSpec(_Strict):
    """The native floor: sockperf and iperf3, run in each environment in the same run."""

    sockperf: bool = True
    iperf3: bool = True
    duration: Duration = Field(default=2.0, gt=0, le=600, description="seconds per tool run")
    iperf3_streams: int = Field(default=4, ge=2, le=128, description="the multi-stream figure")
    factor: float = Field(
        default=2.0,
        gt=1.0,
        le=1000.0,
        description="a figure this many times worse than the floor is flagged as overhead",
    )


def _both_protocols() -> list[Literal["udp", "tcp"]]:
    return ["udp", "tcp"]


class RrSpec(_Strict):
    """UDP streams and request/response transactions (netperf-style, the seed's 000 §4.4.3)
    with sockperf and iperf3, each socket buffer size in ``buffers`` a run (docs/net.md)."""

    enabled: bool = True
    protocols: list[Literal["udp", "tcp"]] = Field(
        default_factory=_both_protocols, min_length=1, max_length=2,
        description="sockperf ping-pong transactions per second over these",
    )  # fmt: skip
    size: Size = Field(default=64, ge=14, le=65507, description="request and response bytes")
    udp: bool = Field(default=True, description="an iperf3 -u stream per buffer size")
    udp_bitrate: str = Field(
        default="100M", pattern=r"^[1-9][0-9]{0,5}[KMG]?$", description="iperf3 -u -b"
    )
    udp_length: Size = Field(default=1400, ge=16, le=65507, description="UDP datagram bytes")
    buffers: list[Annotated[Size, Field(ge=4096, le=256 * MIB)]] = Field(
        default_factory=list,
        max_length=16,
        description="socket buffer sizes (sockperf --buffer-size, iperf3 -w); [] = system's",
    )
    duration: Duration = Field(default=2.0, gt=0, le=600, description="seconds per run")

    @model_validator(mode="after")
    def _distinct(self) -> RrSpec:
        if len(set(self.buffers)) != len(self.buffers):
            raise ValueError("rr.buffers lists a size twice")
        if len(set(self.protocols)) != len(self.protocols):
            raise ValueError("rr.protocols lists a protocol twice")
        return self


def _rr_off() -> RrSpec:
    return RrSpec(enabled=False)


#: The patterns a spec may name; naming any turns the unnamed ones off.
PATTERNS = ("pingpong", "echo", "burst", "transfer", "rr")


class NetSpec(_Strict):
    """A messaging evaluation: patterns x transports x environments, with a native floor."""

    name: SpecName
    description: str = ""
    environments: list[Environment] = Field(default_factory=_host, min_length=1)
    lan: LanSpec = Field(default_factory=LanSpec)
    relay: RelaySpec = Field(default_factory=RelaySpec)
    remote: RemoteSpec | None = None
    pingpong: PingPongSpec = Field(default_factory=PingPongSpec)
    echo: EchoSpec = Field(default_factory=EchoSpec)
    burst: BurstSpec = Field(default_factory=BurstSpec)
    transfer: TransferSpec = Field(default_factory=TransferSpec)
    floor: FloorSpec = Field(default_factory=FloorSpec)
    rr: RrSpec = Field(default_factory=_rr_off, description="UDP and request/response")
    test_timeout: Duration = Field(
        default=60.0, gt=0, description="seconds one test may take before its peer is declared dead"
    )
    thresholds: list[ThresholdSpec] = Field(
        default_factory=list, description="limits on paths of the net metrics (docs/net.md)"
    )
    plan: TestPlan | None = Field(
        default=None, description="the IEEE 829 test plan: items, features, approach, criteria"
    )
    sampling: SamplingSpec | None = Field(
        default=None,
        description="hosts sampled during the run, each step a phase (docs/hosts.md)",
    )

    @model_validator(mode="before")
    @classmethod
    def _named_patterns_only(cls, data: Any) -> Any:
        """A spec that names any pattern runs the patterns it names; one that names none
        runs them all (a spec with only ``transfer:`` once ran every default pattern)."""
        if not isinstance(data, dict) or not any(k in data for k in PATTERNS):
            return data
        return {**{k: {"enabled": False} for k in PATTERNS if k not in data}, **data}

    @model_validator(mode="after")
    def _consistent(self) -> NetSpec:
        envs = self.environments
        if len(set(envs)) != len(envs):
            raise ValueError("environments must not repeat")
        if "remote" in envs and self.remote is None:
            raise ValueError(
                "the remote environment needs a remote: block naming the peer's host "
                "(remote: {inventory: HOSTS.yaml, peer: NAME})"
            )
        pats = (self.pingpong, self.echo, self.burst, self.transfer, self.rr)
        if not any(p.enabled for p in pats):
            raise ValueError(
                "every pattern is disabled: enable pingpong, echo, burst, transfer or rr"
            )
        muscle = self.pingpong.enabled and "muscle3" in self.pingpong.transports
        if muscle and "host" not in envs and "remote" not in envs:
            raise ValueError(
                "the muscle3 ping-pong runs under muscle_manager on this host, its mirror here "
                "(environment 'host') or on the remote peer's host ('remote'): add host or "
                "remote to environments, or drop muscle3 from pingpong.transports"
            )
        return self
