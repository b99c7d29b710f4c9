"""net's figure tables as typed :class:`~gridbench.sections.Table` sections: per ping-pong
series the seed's layout (``Size (kiB) | Total (ms) | Avg (ms) | StdDev (ms) | StdDev (%)
| Speed (MB/s)``) with one-way time, percentiles and the floor beside it; echo series,
client scaling, bursts and transfers; and the formatters the tables share. Raw values go
to CSV/JSON, text to people. Pure functions of a checked ``gridbench.net/1`` document; a
table with nothing to show is None. The verdict and caveat tables (overheads, the floor,
thresholds, validity) are in :mod:`gridbench.messaging.report_checks`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.messaging.overheads import env_phrase, size_text
from gridbench.sections import (
    Column,
    Field,
    RecordLook,
    Shown,
    Status,
    Table,
    listed,
    record_table,
)

MISSING = "–"

# -- formatters ---------------------------------------------------------------------------


def num(x: Any) -> float | None:
    """A number as a float; None for anything else (booleans too)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def fmt4(x: Any) -> str:
    """4 significant digits as the seed printed (1.172 ms, 1.747 MB/s); thousands whole."""
    v = num(x)
    if v is None:
        return MISSING
    return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:.4g}"


def cell(x: Any) -> Shown:
    """A number shown with :func:`fmt4`, raw as itself."""
    return Shown(num(x), fmt4(x))


def ratio_cell(ratio: Any, overhead: Any) -> Shown:
    """'3.0×', flagged (warn) when it is an overhead."""
    r = num(ratio)
    return Shown(r, MISSING if r is None else f"{r:.2f}×", "warn" if overhead is True else None)


def row_status(failed: Any, overhead: Any = False) -> Status | None:
    """fail for a row with failures, warn for an overhead, else none."""
    if failed:
        return "fail"
    return "warn" if overhead is True else None


def table_id(*parts: Any) -> str:
    """A safe table id (an HTML anchor and a CSV file name) from untrusted names."""
    raw = "-".join(str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-")[:80] or "table"


def _spread(d: Any) -> Shown:
    """'mean ± sd' of a spread object, raw the mean."""
    if not isinstance(d, Mapping) or num(d.get("mean")) is None:
        return Shown(None, MISSING)
    text = fmt4(d["mean"])
    if num(d.get("sd")) is not None:
        text += f" ± {fmt4(d['sd'])}"
    return Shown(num(d["mean"]), text)


def _errors(r: Mapping[str, Any]) -> str:
    return "; ".join(str(e) for e in r.get("errors") or [])


# -- ping-pong ----------------------------------------------------------------------------


def _floor(r: Mapping[str, Any]) -> Shown:
    fl = r.get("floor")
    if not isinstance(fl, Mapping) or num(fl.get("value")) is None:
        return Shown(None, MISSING)
    unit = "ms" if fl.get("figure") == "rtt_ms" else "MB/s"
    at = fl.get("size_bytes")
    where = f" at {size_text(int(at))}" if isinstance(at, int) and at != r.get("size_bytes") else ""
    return Shown(num(fl["value"]), f"{fmt4(fl['value'])} {unit} ({fl.get('tool')}{where})")


def _rtt(key: str) -> Any:
    return lambda r: cell((r.get("rtt_ms") or {}).get(key))


PINGPONG: tuple[Field, ...] = (
    (
        Column("size_kib", "Size (kiB)", numeric=True),
        lambda r: Shown(r["size_bytes"] / 1024, f"{r['size_bytes'] / 1024:.4g}"),
    ),
    (Column("total_ms", "Total (ms)", numeric=True), lambda r: cell(r.get("total_ms"))),
    (Column("avg_ms", "Avg (ms)", numeric=True), _rtt("mean")),
    (Column("sd_ms", "StdDev (ms)", numeric=True), _rtt("sd")),
    (
        Column("sd_pct", "StdDev (%)", numeric=True),
        lambda r: Shown(
            num((r.get("rtt_ms") or {}).get("sd_pct")), fmt4((r.get("rtt_ms") or {}).get("sd_pct"))
        ),
    ),
    (Column("speed_mb_s", "Speed (MB/s)", numeric=True), lambda r: cell(r.get("speed_mb_s"))),
    (Column("one_way_ms", "One-way (ms)", numeric=True), lambda r: cell(r.get("one_way_ms"))),
    (Column("p50_ms", "p50 (ms)", numeric=True), _rtt("p50")),
    (Column("p99_ms", "p99 (ms)", numeric=True), _rtt("p99")),
    (Column("p999_ms", "p99.9 (ms)", numeric=True), _rtt("p999")),
    (Column("floor", "Floor"), _floor),
    (
        Column("ratio", "Ratio", numeric=True),
        lambda r: ratio_cell((r.get("floor") or {}).get("ratio"), r.get("overhead")),
    ),
    (
        Column("failed_tests", "Failed", numeric=True),
        lambda r: Shown(
            r.get("failed_tests"),
            f"{r.get('failed_tests')} of {r.get('tests')}" if r.get("failed_tests") else "",
        ),
    ),
)


#: The terminal's compact form: the seed's six columns, which fit 80 columns (the ratios
#: are in the headline and the overheads table).
BRIEF_KEYS = ("size_kib", "total_ms", "avg_ms", "sd_ms", "sd_pct", "speed_mb_s")
PINGPONG_NOTE = (
    "Per size, the T·M round trips pooled: Total = their sum, Avg = Total / (T·M), StdDev "
    "over the round trips, Speed = 2·s / Avg (MB/s = 10^6 B/s), one-way ≈ Avg / 2; "
    "percentiles from an HDR histogram (3 significant digits), withheld (–) under 100 (p99) "
    "or 1000 (p99.9) samples. Ratio: Avg / floor RTT, or floor speed / Speed."
)


def pingpong_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Per (transport, environment), one row per size: the full table in the seed's
    layout with one-way time, percentiles and the floor (the HTML page, CSV), and its
    compact form for the terminal (the seed's six columns)."""
    out = []
    brief = tuple(f for f in PINGPONG if f[0].key in BRIEF_KEYS)
    for i, s in enumerate(listed(metrics, "pingpong")):
        rows = [r for r in s.get("rows", []) if isinstance(r, Mapping)]
        title = f"Ping-pong: {s['transport']} {env_phrase(str(s['env']))}"
        for fields, scope, tid in (
            (PINGPONG, "full", table_id("pingpong", i, s["transport"], s["env"])),
            (brief, "brief", table_id("pingpong-brief", i, s["transport"], s["env"])),
        ):
            t = record_table(
                tid,
                title,
                rows,
                fields,
                look=RecordLook(
                    status=lambda r: row_status(r.get("failed_tests"), r.get("overhead"))
                ),
                note=PINGPONG_NOTE,
                scope="full" if scope == "full" else "brief",
                export=scope == "full",
            )
            if t is not None:
                out.append(t)
    return out


# -- echo, scaling, burst -----------------------------------------------------------------


def _label(*parts: Any) -> str:
    return " · ".join(str(p) for p in parts)


def with_errors(fields: tuple[Field, ...], records: Sequence[Mapping[str, Any]]) -> list[Field]:
    """``fields`` and, when any record has errors, an Errors column."""
    if any(r.get("errors") for r in records):
        return [*fields, (Column("errors", "Errors"), _errors)]
    return list(fields)


def _series_floor(s: Mapping[str, Any]) -> str:
    who = _label(s.get("transport"), s.get("config"), s.get("env"))
    fl = s.get("floor")
    if not isinstance(fl, Mapping):
        why = "in process, no network" if s.get("config") == "inprocess" else "none measured"
        return f"{who}: no floor ({why})"
    return (
        f"{who}: {fmt4(fl.get('value'))} ms, sockperf at "
        f"{size_text(int(fl.get('size_bytes') or 0))} for a "
        f"{size_text(int(fl.get('payload_bytes') or 0))} payload"
    )


ECHO: tuple[Field, ...] = (
    (
        Column("series", "Series"),
        lambda r: _label(r["_s"]["transport"], r["_s"]["config"], r["_s"]["env"]),
    ),
    (Column("calls", "Calls", numeric=True), lambda r: r["calls"]),
    (Column("reps", "Reps", numeric=True), lambda r: r.get("reps")),
    (Column("mean_ms", "Avg (ms)", numeric=True), lambda r: cell(r.get("mean_ms"))),
    (Column("sd_ms", "StdDev (ms)", numeric=True), lambda r: cell(r.get("sd_ms"))),
    (Column("p50_ms", "p50 (ms)", numeric=True), lambda r: cell(r.get("p50_ms"))),
    (Column("p99_ms", "p99 (ms)", numeric=True), lambda r: cell(r.get("p99_ms"))),
    (Column("total_ms", "Series (ms)", numeric=True), lambda r: _spread(r.get("total_ms"))),
    (
        Column("ratio", "Ratio", numeric=True),
        lambda r: ratio_cell((r["_s"].get("floor") or {}).get("ratio"), r["_s"].get("overhead")),
    ),
)


def echo_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every echo series: per series length the per-call latency and the series' time;
    the series' ratio to its floor (the floors in the note)."""
    series = listed(metrics, "echo")
    rows = [{**r, "_s": s} for s in series for r in s.get("rows", []) if isinstance(r, Mapping)]
    return record_table(
        "echo",
        "Echo service: series of calls",
        rows,
        with_errors(ECHO, rows),
        look=RecordLook(status=lambda r: row_status(r.get("failed_reps"), r["_s"].get("overhead"))),
        note=(
            "Avg and StdDev over every call of every repetition; Series: the series' time "
            "(sum of its calls), mean ± sd across repetitions; Ratio: the series' mean per "
            "call against its floor. Floors: " + "; ".join(_series_floor(s) for s in series)
        ),
    )


SCALING: tuple[Field, ...] = (
    (
        Column("series", "Series"),
        lambda r: _label(r["_s"]["transport"], r["_s"]["config"], r["_s"]["env"]),
    ),
    (Column("clients", "Clients", numeric=True), lambda r: r["clients"]),
    (Column("reps", "Reps", numeric=True), lambda r: r.get("reps")),
    (Column("mean_ms", "Avg (ms)", numeric=True), lambda r: cell(r.get("mean_ms"))),
    (Column("sd_ms", "StdDev (ms)", numeric=True), lambda r: cell(r.get("sd_ms"))),
    (Column("p50_ms", "p50 (ms)", numeric=True), lambda r: cell(r.get("p50_ms"))),
    (Column("p99_ms", "p99 (ms)", numeric=True), lambda r: cell(r.get("p99_ms"))),
    (
        Column("client_sd_ms", "Client spread (ms)", numeric=True),
        lambda r: cell(r.get("client_sd_ms")),
    ),
    (Column("total_clients", "All clients", numeric=True), lambda r: r.get("total_clients")),
    (
        Column("throughput_per_s", "Calls/s", numeric=True),
        lambda r: cell(r.get("throughput_per_s")),
    ),
    (
        Column("cohosted_mean_ms", "Co-hosted avg (ms)", numeric=True),
        lambda r: cell(r.get("cohosted_mean_ms")),
    ),
    (
        Column("remote_mean_ms", "Remote avg (ms)", numeric=True),
        lambda r: cell(r.get("remote_mean_ms")),
    ),
)


def scaling_table(metrics: Mapping[str, Any]) -> Table | None:
    """Latency against the number of concurrent clients."""
    rows = [
        {**p, "_s": s}
        for s in listed(metrics, "echo_scaling")
        for p in s.get("points", [])
        if isinstance(p, Mapping)
    ]
    return record_table(
        "echo-scaling",
        "Echo service: concurrent clients",
        rows,
        with_errors(SCALING, rows),
        look=RecordLook(status=lambda r: row_status(r.get("failed_reps"))),
        note="Clients: per client host (All clients: on every host at once). Client spread: "
        "the sd of the clients' own mean latencies (how evenly served). Calls/s: all clients "
        "/ mean latency (one call in flight per client). Co-hosted: clients on the service's "
        "own host; remote: on other hosts.",
    )


def _gap(key: str) -> Any:
    return lambda b: cell((b.get("gap_ms") or {}).get(key))


BURST: tuple[Field, ...] = (
    (Column("series", "Burst"), lambda b: _label(b["transport"], b["env"])),
    (Column("calls", "Calls", numeric=True), lambda b: b.get("calls")),
    (Column("reps", "Reps", numeric=True), lambda b: b.get("reps")),
    (
        Column("enqueue_ms", "Enqueue wall (ms)", numeric=True),
        lambda b: _spread(b.get("enqueue_ms")),
    ),
    (
        Column("enqueue_cpu_ms", "Enqueue CPU (ms)", numeric=True),
        lambda b: _spread(b.get("enqueue_cpu_ms")),
    ),
    (Column("first_ms", "First (ms)", numeric=True), lambda b: _spread(b.get("first_ms"))),
    (Column("total_ms", "Last (ms)", numeric=True), lambda b: _spread(b.get("total_ms"))),
    (Column("gap_p50_ms", "Gap p50 (ms)", numeric=True), _gap("p50")),
    (Column("gap_p99_ms", "Gap p99 (ms)", numeric=True), _gap("p99")),
    (Column("gap_max_ms", "Gap max (ms)", numeric=True), _gap("max")),
)


def burst_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each burst: enqueue time, first response, gaps between later responses."""
    bursts = listed(metrics, "burst")
    return record_table(
        "burst",
        "Bursts of asynchronous calls",
        bursts,
        with_errors(BURST, bursts),
        look=RecordLook(status=lambda b: row_status(b.get("failed_reps"))),
        note="From the first send: until every call was enqueued (wall time, and the CPU "
        "time the client's enqueuing thread spent meanwhile: the client's own cost, without "
        "the time a loaded machine gave to other processes), until the first and the last "
        "response (mean ± sd across repetitions); gaps between successive responses, pooled.",
    )


# -- transfers ----------------------------------------------------------------------------


def _mb(n: Any) -> str:
    # decimal, as the MB/s beside it (the seed moved a 64 MB payload)
    v = num(n)
    return MISSING if v is None else f"{v / 1e6:.4g} MB"


def _tfloor(t: Mapping[str, Any]) -> Shown:
    fl = t.get("floor")
    if not isinstance(fl, Mapping):
        return Shown(None, MISSING)
    return Shown(
        num(fl.get("value_mb_s")), f"{fmt4(fl.get('value_mb_s'))} (-P {fl.get('streams')})"
    )


TRANSFER: tuple[Field, ...] = (
    (Column("series", "Transfer"), lambda t: _label(t["tool"], t["env"], t["direction"])),
    (Column("streams", "Streams", numeric=True), lambda t: t["streams"]),
    (Column("bytes", "Payload"), lambda t: Shown(t.get("bytes"), _mb(t.get("bytes")))),
    (Column("reps", "Reps", numeric=True), lambda t: t.get("reps")),
    (Column("mb_s", "MB/s", numeric=True), lambda t: _spread(t.get("mb_s"))),
    (Column("min_mb_s", "Min", numeric=True), lambda t: cell((t.get("mb_s") or {}).get("min"))),
    (Column("max_mb_s", "Max", numeric=True), lambda t: cell((t.get("mb_s") or {}).get("max"))),
    (Column("floor_mb_s", "iperf3 (MB/s)", numeric=True), _tfloor),
    (
        Column("ratio", "Ratio", numeric=True),
        lambda t: ratio_cell((t.get("floor") or {}).get("ratio"), t.get("overhead")),
    ),
)


def transfer_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each transfer tool per direction: MB/s against iperf3 with the same streams."""
    transfers = listed(metrics, "transfer")
    return record_table(
        "transfer",
        "Transfers",
        transfers,
        with_errors(TRANSFER, transfers),
        look=RecordLook(status=lambda t: row_status(t.get("failed_reps"), t.get("overhead"))),
        note="MB/s = 10^6 bytes/s, mean ± sd across repetitions; the floor is iperf3 in the "
        "same direction with the same number of streams; ratio = floor / MB/s.",
    )


def figure_tables(metrics: Mapping[str, Any]) -> list[Table | None]:
    """Every figure table in the report's order."""
    return [
        *pingpong_tables(metrics),
        echo_table(metrics),
        scaling_table(metrics),
        burst_table(metrics),
        transfer_table(metrics),
    ]
