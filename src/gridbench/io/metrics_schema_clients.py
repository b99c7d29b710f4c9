"""The ``clients`` part of an io ``metrics.json`` (fio from many client hosts), checked as
the rest of :mod:`gridbench.io.metrics_schema`: extra fields allowed, what is there typed."""

from __future__ import annotations

from gridbench.schema import Count, Num, OpenModel, Rep, Text


class Latency(OpenModel):
    """Latency percentiles in ms (metrics_schema.Latency's fields; that module imports
    this one)."""

    p50: Num = None
    p90: Num = None
    p99: Num = None
    p999: Num = None


class ClientSeries(OpenModel):
    """One (target, test, N) of the DEISA series, or the same-file read."""

    target: Text = None
    test: Text = None
    clients: Count = None
    hosts: list[Text] = []
    last_done_kbps: Rep | None = None
    sum_kbps: Rep | None = None
    per_client_kbps: dict[str, Num] = {}
    lat_ms: Latency | None = None
    speedup: Num = None
    scaling: Num = None


class HostCompared(OpenModel):
    """One host alone on one (target, test)."""

    target: Text = None
    test: Text = None
    host: Text = None
    kbps: Rep | None = None
    lat_ms: Latency | None = None
    reference: Text = None
    speedup: Num = None


class LostHost(OpenModel):
    host: Text = None
    target: Text = None
    layout: Text = None
    test: Text = None
    clients: Count = None
    detail: Text = None


class Clients(OpenModel):
    hosts: list[Text] = []
    series: list[ClientSeries] = []
    same_file: list[ClientSeries] = []
    hosts_compared: list[HostCompared] = []
    lost: list[LostHost] = []
