"""UDP streams and request/response transactions in net's report: a finding per worst
UDP loss and the best transactions per second, the transactions table and the UDP table,
each row a socket buffer size. Pure functions of ``metrics["rr"]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.sections import Column, Finding, RecordLook, Section, part, record_table
from gridbench.units import format_size


def _buf(v: Any) -> str:
    return "system" if v is None else format_size(int(v))


def findings(metrics: Mapping[str, Any]) -> list[Finding]:
    rr = part(metrics, "rr")
    out = []
    tx = [t for t in rr.get("transactions", []) if isinstance(t, Mapping)]
    for proto in ("udp", "tcp"):
        mine = [t for t in tx if t.get("proto") == proto]
        if mine:
            best = max(mine, key=lambda t: float(t["tps"]))
            out.append(
                Finding(
                    "info",
                    f"{proto.upper()} request/response: {best['tps']:,.0f} transactions/s "
                    f"at most ({best['env']}, {best['size_bytes']} B, buffer "
                    f"{_buf(best['buffer'])})",
                )
            )
    udp = [u for u in rr.get("udp", []) if isinstance(u, Mapping)]
    if udp:
        worst = max(udp, key=lambda u: float(u["lost_share"]))
        out.append(
            Finding(
                "warn" if worst["lost_share"] > 0 else "info",
                f"UDP stream at {worst['bitrate']}bit/s: {100 * worst['lost_share']:.2f}% of "
                f"datagrams lost, jitter {worst['jitter_ms']:.3g} ms ({worst['env']}, buffer "
                f"{_buf(worst['buffer'])})",
            )
        )
    if rr.get("failed"):
        said = "; ".join(
            f"{x.get('tool')} {x.get('proto')}: {x.get('error')}" for x in rr["failed"]
        )
        out.append(Finding("fail", f"UDP/RR: {len(rr['failed'])} run(s) failed", said[:500]))
    return out


TX_FIELDS = (
    (Column("env"), lambda t: t.get("env")),
    (Column("proto"), lambda t: t.get("proto")),
    (Column("size", "message B", numeric=True), lambda t: t.get("size_bytes")),
    (Column("buffer", "socket buffer"), lambda t: _buf(t.get("buffer"))),
    (Column("rx_buffer", "kernel gave B", numeric=True), lambda t: t.get("rx_buffer")),
    (Column("tps", "transactions/s", numeric=True), lambda t: t.get("tps")),
    (Column("rtt_p50_ms", "median RTT ms", numeric=True), lambda t: t.get("rtt_p50_ms")),
)
UDP_FIELDS = (
    (Column("env"), lambda u: u.get("env")),
    (Column("bitrate", "target bit/s"), lambda u: u.get("bitrate")),
    (Column("size", "datagram B", numeric=True), lambda u: u.get("size_bytes")),
    (Column("buffer", "socket buffer"), lambda u: _buf(u.get("buffer"))),
    (Column("mbit_s", "Mbit/s", numeric=True), lambda u: u.get("mbit_s")),
    (Column("jitter_ms", "jitter ms", numeric=True), lambda u: u.get("jitter_ms")),
    (Column("lost_pct", "lost %", numeric=True), lambda u: 100 * float(u.get("lost_share") or 0)),
    (Column("lost", "lost datagrams", numeric=True), lambda u: u.get("lost_packets")),
)


def sections(metrics: Mapping[str, Any]) -> list[Section]:
    rr = part(metrics, "rr")
    out = [
        record_table(
            "rr-transactions",
            "Request/response: transactions per second (sockperf ping-pong)",
            list(rr.get("transactions", [])),
            TX_FIELDS,
            note="One request answered before the next: transactions/s = answers ÷ sockperf's "
            "valid duration (netperf's UDP_RR, TCP_RR). Each socket buffer size is a run.",
        ),
        record_table(
            "rr-udp",
            "UDP stream: rate, jitter and loss (iperf3 -u)",
            list(rr.get("udp", [])),
            UDP_FIELDS,
            look=RecordLook(status=lambda u: "warn" if u.get("lost_share") else None),
            note="The receiver's figures; each socket buffer size (iperf3 -w) is a run.",
        ),
    ]
    return [s for s in out if s is not None]
