"""N concurrent HTTP clients in io's report: findings (failed transfers, refusals with
their time), a table per client count and direction, the aggregate against the number of
clients. Pure functions of ``metrics["http_clients"]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.plotting import TEMPLATE, figure_data
from gridbench.sections import (
    Chart,
    Column,
    Finding,
    RecordLook,
    Section,
    record_table,
    rep_mean,
)


def _groups(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [g for g in metrics.get("http_clients") or [] if isinstance(g, Mapping)]


def _ms(secs: float | None) -> float | None:
    return None if secs is None else secs * 1000.0


def findings(metrics: Mapping[str, Any]) -> list[Finding]:
    gs = _groups(metrics)
    if not gs:
        return []
    out = []
    failed = [f"{g['clients']} clients {g['op']}: {x}" for g in gs for x in g.get("failed") or []]
    if failed:
        out.append(
            Finding(
                "fail", f"HTTP clients: {len(failed)} transfer(s) FAILED", "; ".join(failed[:5])
            )
        )
    for g in gs:
        if g.get("refused"):
            secs = rep_mean(g.get("refusal_s"))
            after = f" after {secs * 1000:.1f} ms on average" if secs is not None else ""
            statuses = ", ".join(g.get("statuses") or [])
            text = (
                f"HTTP: {g['refused']} of {g['transfers']} upload(s) with {g['clients']} "
                f"client(s) refused (HTTP {statuses}){after}"
            )
            out.append(Finding("warn", text))
    best = max(gs, key=lambda g: rep_mean(g.get("aggregate_mib_s")) or 0.0)
    if not failed and rep_mean(best.get("aggregate_mib_s")):
        out.append(
            Finding(
                "info",
                f"HTTP clients: best aggregate {rep_mean(best['aggregate_mib_s']):.1f} MiB/s "
                f"({best['op']}, {best['clients']} clients)",
            )
        )
    return out


FIELDS = (
    (Column("clients", numeric=True), lambda g: g.get("clients")),
    (Column("op", "direction"), lambda g: g.get("op")),
    (
        Column("aggregate", "aggregate MiB/s", numeric=True),
        lambda g: rep_mean(g.get("aggregate_mib_s")),
    ),
    (Column("sum", "sum of client MiB/s", numeric=True), lambda g: rep_mean(g.get("sum_mib_s"))),
    (
        Column("client", "per client MiB/s (mean)", numeric=True),
        lambda g: rep_mean(g.get("client_mib_s")),
    ),
    (
        Column("slowest", "slowest client MiB/s", numeric=True),
        lambda g: (g.get("client_mib_s") or {}).get("min"),
    ),
    (Column("refused", numeric=True), lambda g: g.get("refused")),
    (
        Column("refusal_ms", "time to refusal ms", numeric=True),
        lambda g: _ms(rep_mean(g.get("refusal_s"))),
    ),
    (Column("status", "HTTP status"), lambda g: ", ".join(g.get("statuses") or [])),
)


def sections(metrics: Mapping[str, Any]) -> list[Section]:
    gs = _groups(metrics)
    table = record_table(
        "http-clients",
        "HTTP/WebDAV clients at once",
        gs,
        FIELDS,
        look=RecordLook(status=lambda g: "fail" if g.get("failed") else None),
        note="Aggregate: all bytes moved ÷ first start to last end (mean over repetitions); "
        "every client PUTs at once, then every client GETs at once.",
    )
    out: list[Section] = [table] if table is not None else []
    if len({g.get("clients") for g in gs}) > 1:
        fig = go.Figure()
        for op in ("upload", "download"):
            mine = [g for g in gs if g.get("op") == op]
            fig.add_scatter(
                x=[g["clients"] for g in mine],
                y=[rep_mean(g.get("aggregate_mib_s")) for g in mine],
                mode="lines+markers",
                name=f"{op} aggregate",
            )
        fig.update_layout(template=TEMPLATE, xaxis_title="clients", yaxis_title="MiB/s", height=380)
        out.append(
            Chart(
                id="http-clients-scaling",
                title="HTTP aggregate rate against clients",
                figure=figure_data(fig),
                note="All bytes moved ÷ from the first start to the last end.",
            )
        )
    return out
