"""Service operations in io's report: findings (failed requests, what keeping the
connection saves), the latency table against payload size, clients and reuse, the
throughput table against sessions, and latency against size as a chart. Pure functions of
``metrics["service"]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.io.service_analysis import reuse_effect
from gridbench.plotting import TEMPLATE, figure_data
from gridbench.sections import Chart, Column, Finding, RecordLook, Section, part, record_table
from gridbench.units import format_size


def _mode(reuse: Any) -> str:
    return "kept" if reuse else "per request"


def findings(metrics: Mapping[str, Any]) -> list[Finding]:
    s = part(metrics, "service")
    ops = [o for o in s.get("ops", []) if isinstance(o, Mapping)]
    if not ops:
        return []
    out = []
    failed = [o for o in ops if o.get("failed")]
    if failed:
        said = [
            f"{o['op']} {format_size(o['size'])} x{o['clients']} ({_mode(o['reuse'])}): "
            f"{o['failed']} of {o['requests']} ({', '.join(o.get('failures') or [])})"
            for o in failed
        ]
        out.append(Finding("fail", "Service: requests FAILED", "; ".join(said[:5])))
    effect = reuse_effect(s)
    if effect:
        worst = max(effect, key=lambda e: e["ratio"])
        out.append(
            Finding(
                "info",
                f"Service: a new connection per request makes {worst['op']} of "
                f"{format_size(worst['size'])} ({worst['clients']} client(s)) "
                f"{worst['ratio']:.2g}x as slow ({worst['new_ms']:.3g} ms against "
                f"{worst['kept_ms']:.3g} ms with the connection kept)",
            )
        )
    rounds = [r for r in s.get("rounds", []) if r.get("requests_per_s") is not None]
    if rounds:
        best = max(rounds, key=lambda r: r["requests_per_s"])
        out.append(
            Finding(
                "info",
                f"Service: at most {best['requests_per_s']:.0f} requests/s "
                f"({best['clients']} client(s), {format_size(best['size'])}, "
                f"connections {_mode(best['reuse'])})",
            )
        )
    return out


def _lat(key: str) -> Any:
    return lambda o: (o.get("latency_ms") or {}).get(key)


OP_FIELDS = (
    (Column("op"), lambda o: o.get("op")),
    (Column("size", "payload"), lambda o: format_size(int(o.get("size") or 0))),
    (Column("clients", numeric=True), lambda o: o.get("clients")),
    (Column("connection"), lambda o: _mode(o.get("reuse"))),
    (Column("requests", numeric=True), lambda o: o.get("requests")),
    (Column("mean_ms", "mean ms", numeric=True), _lat("mean")),
    (Column("p50_ms", "p50 ms", numeric=True), _lat("p50")),
    (Column("p90_ms", "p90 ms", numeric=True), _lat("p90")),
    (Column("p99_ms", "p99 ms", numeric=True), _lat("p99")),
    (Column("failed", numeric=True), lambda o: o.get("failed")),
)
ROUND_FIELDS = (
    (Column("clients", "sessions", numeric=True), lambda r: r.get("clients")),
    (Column("size", "payload"), lambda r: format_size(int(r.get("size") or 0))),
    (Column("connection"), lambda r: _mode(r.get("reuse"))),
    (Column("requests", numeric=True), lambda r: r.get("requests")),
    (Column("requests_per_s", "requests/s", numeric=True), lambda r: r.get("requests_per_s")),
    (Column("mib_s", "MiB/s", numeric=True), lambda r: r.get("mib_s")),
    (Column("failed", numeric=True), lambda r: r.get("failed")),
)


def sections(metrics: Mapping[str, Any]) -> list[Section]:
    s = part(metrics, "service")
    ops = [o for o in s.get("ops", []) if isinstance(o, Mapping)]
    if not ops:
        return []
    out: list[Section | None] = [
        record_table(
            "service-ops",
            "Service operations: latency against payload size, clients and connection reuse",
            ops,
            OP_FIELDS,
            look=RecordLook(status=lambda o: "fail" if o.get("failed") else None),
            note="Requests that succeeded; connection kept: one keep-alive connection per "
            "client for the round, per request: a new connection for every request.",
        ),
        record_table(
            "service-throughput",
            "Service throughput against sessions",
            list(s.get("rounds", [])),
            ROUND_FIELDS,
            note="All clients at once: successful requests (and PUT/GET bytes) ÷ from the "
            "first request's start to the last one's end.",
        ),
    ]
    sizes = sorted({int(o["size"]) for o in ops})
    if len(sizes) > 1:
        fig = go.Figure()
        lines: dict[tuple[str, int, bool], list[Mapping[str, Any]]] = {}
        for o in sorted(ops, key=lambda o: int(o["size"])):
            lines.setdefault((str(o["op"]), int(o["clients"]), bool(o["reuse"])), []).append(o)
        for (op, clients, reuse), mine in lines.items():
            fig.add_scatter(
                x=[o["size"] for o in mine],
                y=[_lat("mean")(o) for o in mine],
                mode="lines+markers",
                name=f"{op} x{clients} {_mode(reuse)}",
            )
        fig.update_layout(
            template=TEMPLATE, xaxis_title="payload bytes", yaxis_title="mean ms", height=380
        )
        fig.update_xaxes(type="log")
        out.append(
            Chart(
                id="service-latency-size",
                title="Service latency against payload size",
                figure=figure_data(fig),
                note="One line per operation, client count and connection mode.",
            )
        )
    return [x for x in out if x is not None]
