"""fio from many client hosts in io's report (``metrics["clients"]``): the DEISA series in
the matrix layout (per target, test and N: the aggregate, its speedup against the
baseline, the scaling, the latency), each client's own kB/s, the two clients reading one
file, the client machines compared, and the hosts lost mid-run. Pure functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.sections import (
    Column,
    Finding,
    RecordLook,
    Section,
    part,
    record_table,
    rep_mean,
)


def _pct(v: Any) -> float | None:
    return None if not isinstance(v, int | float) else round(100.0 * v, 1)


def _p(key: str) -> Any:
    return lambda e: (e.get("lat_ms") or {}).get(key)


SERIES = (
    (Column("target"), lambda e: e.get("target")),
    (Column("test"), lambda e: e.get("test")),
    (Column("clients", "N clients (hosts)", numeric=True), lambda e: e.get("clients")),
    (Column("hosts"), lambda e: ", ".join(e.get("hosts") or [])),
    (Column("aggregate", "aggregate kB/s (last done)", numeric=True),
     lambda e: rep_mean(e.get("last_done_kbps"))),
    (Column("sd", "±sd", numeric=True), lambda e: (e.get("last_done_kbps") or {}).get("std")),
    (Column("sum", "sum of client kB/s", numeric=True), lambda e: rep_mean(e.get("sum_kbps"))),
    (Column("speedup", "speedup vs baseline %", numeric=True), lambda e: _pct(e.get("speedup"))),
    (Column("scaling", "× smallest N", numeric=True), lambda e: e.get("scaling")),
    (Column("p50", "p50 ms", numeric=True), _p("p50")),
    (Column("p99", "p99 ms", numeric=True), _p("p99")),
)  # fmt: skip

PER_CLIENT = (
    (Column("target"), lambda e: e.get("target")),
    (Column("test"), lambda e: e.get("test")),
    (Column("clients", "N", numeric=True), lambda e: e.get("clients")),
    (Column("host"), lambda e: e.get("host")),
    (Column("kbps", "kB/s (mean)", numeric=True), lambda e: e.get("kbps")),
)

HOSTS = (
    (Column("target"), lambda e: e.get("target")),
    (Column("test"), lambda e: e.get("test")),
    (Column("host"), lambda e: e.get("host")),
    (Column("kbps", "kB/s (mean)", numeric=True), lambda e: rep_mean(e.get("kbps"))),
    (Column("sd", "±sd", numeric=True), lambda e: (e.get("kbps") or {}).get("std")),
    (Column("speedup", "vs first host %", numeric=True), lambda e: _pct(e.get("speedup"))),
    (Column("p99", "p99 ms", numeric=True), _p("p99")),
)

LOST = (
    (Column("host"), lambda e: e.get("host")),
    (Column("target"), lambda e: e.get("target")),
    (Column("layout"), lambda e: e.get("layout")),
    (Column("test"), lambda e: e.get("test")),
    (Column("clients", "N", numeric=True), lambda e: e.get("clients")),
    (Column("detail", "what was seen"), lambda e: e.get("detail")),
)

AGGREGATE_NOTE = (
    "Each client on its own host, through fio's client/server mode. Aggregate (last done): "
    "all clients' bytes ÷ the slowest client's run time, mean over repetitions; sum: the "
    "clients' own rates added. Speedup = (target − baseline) / baseline at the same N."
)


def _per_client(entries: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**{k: e.get(k) for k in ("target", "test", "clients")}, "host": h, "kbps": v}
        for e in entries
        for h, v in (e.get("per_client_kbps") or {}).items()
    ]


def sections(metrics: Mapping[str, Any]) -> list[Section]:
    c = part(metrics, "clients")
    if not c:
        return []
    series = [e for e in c.get("series") or [] if isinstance(e, Mapping)]
    same = [e for e in c.get("same_file") or [] if isinstance(e, Mapping)]
    tables = [
        record_table("clients-series", "Client hosts: N clients, each on its own host",
                     series, SERIES, note=AGGREGATE_NOTE),
        record_table("clients-per-client", "Client hosts: each client's kB/s",
                     _per_client(series), PER_CLIENT),
        record_table("clients-same-file", "Two client hosts reading one file at once",
                     same, SERIES,
                     note="Both clients read the same file (fio unique_filename=0); each "
                     "host's own rate: " + "; ".join(
                         f"{e['host']} {e['kbps']:.0f} kB/s" for e in _per_client(same)
                         if isinstance(e.get("kbps"), int | float))),
        record_table("clients-hosts", "The client machines compared (each host alone)",
                     [e for e in c.get("hosts_compared") or [] if isinstance(e, Mapping)],
                     HOSTS),
        record_table("clients-lost", "Client hosts lost mid-run",
                     [e for e in c.get("lost") or [] if isinstance(e, Mapping)], LOST,
                     look=RecordLook(status=lambda e: "warn")),
    ]  # fmt: skip
    return [t for t in tables if t is not None]


def findings(metrics: Mapping[str, Any]) -> list[Finding]:
    c = part(metrics, "clients")
    out = []
    for lost in c.get("lost") or []:
        if isinstance(lost, Mapping):
            out.append(
                Finding(
                    "warn",
                    f"client host {lost.get('host')} lost mid-run ({lost.get('layout')} "
                    f"{lost.get('test')} on {lost.get('target')}, {lost.get('clients')} "
                    "clients); what the other hosts measured is kept",
                    str(lost.get("detail") or ""),
                )
            )
    series = [e for e in c.get("series") or [] if isinstance(e, Mapping)]
    best = max(series, key=lambda e: rep_mean(e.get("last_done_kbps")) or 0.0, default=None)
    if best is not None and rep_mean(best.get("last_done_kbps")):
        out.append(
            Finding(
                "info",
                f"client hosts: best aggregate {rep_mean(best['last_done_kbps']):,.0f} kB/s "
                f"({best.get('test')} on {best.get('target')}, {best.get('clients')} hosts)",
            )
        )
    return out
