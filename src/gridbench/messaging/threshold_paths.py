"""net's threshold paths checked before anything runs (``validate``, ``plan``, ``run``): a
path under a pattern is walked through the metrics schema's own rows
(:mod:`gridbench.messaging.metrics_schema`) keyed as
:func:`gridbench.messaging.analysis.threshold_document` keys them, its names checked
against the transports, environments, configs and clients net knows and the spec
declares; any other path against the metrics document itself. So
``pingpong.tcp.host.1024.rtt_ms.p99x`` is refused with "did you mean
'pingpong.tcp.host.1024.rtt_ms.p99'?" instead of failing after the whole run as "not
measured"."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, get_args

from gridbench.hosts.sampling.spec import sampling_problem
from gridbench.messaging.metrics_schema import (
    Burst,
    EchoSeries,
    Iperf3,
    NetMetrics,
    PingRow,
    ScalePoint,
    Sockperf,
    Transfer,
)
from gridbench.messaging.model import (
    EchoConfig,
    EchoTransport,
    Environment,
    NetSpec,
    PingPongTransport,
    TransferTool,
)
from gridbench.schema import OpenModel, path_problem
from gridbench.specload import SpecProblem, misspelt_threshold


class FloorAt(OpenModel):
    """One environment's floor as thresholds read it."""

    sockperf: dict[str, Sockperf]  # <size_bytes>
    iperf3: dict[str, dict[str, Iperf3]]  # <streams>.<direction>


class NetThresholds(OpenModel):
    """The pattern figures net's thresholds read (analysis.threshold_document), keyed
    (only walked by :func:`gridbench.schema.path_problem`, never built)."""

    pingpong: dict[str, dict[str, dict[str, PingRow]]]  # <transport>.<env>.<size_bytes>
    # <transport>.<env>.<config>, the series as a whole; its <calls> rows are not walked
    echo: dict[str, dict[str, dict[str, EchoSeries]]]
    # <transport>.<env>.<config>.<clients> (or .fit)
    echo_scaling: dict[str, dict[str, dict[str, dict[str, ScalePoint]]]]
    burst: dict[str, dict[str, Burst]]  # <transport>.<env>
    transfer: dict[str, dict[str, dict[str, dict[str, Transfer]]]]  # <tool>.<env>.<dir>.<n>
    floor: dict[str, FloorAt]  # <env>


#: The transports (tools) each pattern can have: a near miss of one is a misspelling.
_FIRST: dict[str, Collection[str]] = {
    "pingpong": get_args(PingPongTransport),
    "echo": get_args(EchoTransport),
    "echo_scaling": get_args(EchoTransport),
    "burst": get_args(EchoTransport),
    "transfer": get_args(TransferTool),
    "floor": get_args(Environment),
}


def threshold_problem(metric: str, spec: NetSpec) -> tuple[str, str | None] | None:
    """Why ``metric`` names no figure of a net run of ``spec``: (what is wrong, the path
    it probably meant or None); None when it may."""
    if metric.partition(".")[0] not in NetThresholds.model_fields:
        return path_problem(NetMetrics, metric)  # the metrics document itself
    clients = {str(c) for c in spec.echo.clients} | {"fit"}

    def known(prefix: tuple[str, ...]) -> Collection[str] | None:
        pattern, depth = prefix[0], len(prefix)
        if depth == 1:
            return _FIRST[pattern]
        if depth == 2 and pattern != "floor":
            return get_args(Environment)
        if depth == 3 and pattern in ("echo", "echo_scaling"):
            return get_args(EchoConfig)
        if depth == 4 and pattern == "echo_scaling":
            return clients
        return None

    return path_problem(NetThresholds, metric, known)


def check_net_spec(spec: NetSpec, data: dict[str, Any]) -> SpecProblem | None:
    """The first threshold of ``spec`` whose path no net run of it can have."""
    problem = misspelt_threshold(data, lambda m: threshold_problem(m, spec), "docs/net.md")
    # a sampled host, or the remote peer's, that the inventory lacks
    return problem or sampling_problem(spec.sampling) or remote_problem(spec)


def remote_problem(spec: NetSpec) -> SpecProblem | None:
    """The remote environment's peer host when its inventory lacks it (with a did-you-mean),
    or the inventory when it is not a hosts file; None when the file is not here to read
    (``run`` reads it, and says so)."""
    if spec.remote is None or "remote" not in spec.environments:
        return None
    from pathlib import Path

    from gridbench.errors import SpecError
    from gridbench.hosts.inventory import load_inventory
    from gridbench.hosts.sampling.spec import LOCAL

    if not Path(spec.remote.inventory).is_file():
        return None
    try:
        inv = load_inventory(spec.remote.inventory)
        inv.host(spec.remote.peer, "remote.peer")
        for i, name in enumerate(spec.remote.clients):
            if name != LOCAL or name in inv.hosts:
                inv.host(name, f"remote.clients[{i}]")
    except SpecError as exc:
        loc: tuple[int | str, ...] = ("remote", "inventory")
        if exc.where == "remote.peer":
            loc = ("remote", "peer")
        elif (exc.where or "").startswith("remote.clients["):
            loc = ("remote", "clients", int((exc.where or "")[len("remote.clients[") : -1]))
        return SpecProblem(loc, exc.message, exc.fix or f"see {spec.remote.inventory}")
    return None
