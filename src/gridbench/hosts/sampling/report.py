"""Report sections of a run's samples, for any family (typed :mod:`gridbench.sections`).

:func:`sampling_sections` gives a :class:`Chart` of each host's CPU busy share and memory
over time with the phases marked, a :class:`Table` per phase (one row per host, plus the
named processes), the client-bound finding and the sampler's warnings as
:class:`Statements`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from gridbench.hosts.sampling.analysis import (
    ClientBound,
    Phase,
    Samples,
    client_bound,
    phase_figures,
    process_figures,
)
from gridbench.plotting import TEMPLATE, colours, ptext
from gridbench.sections import Chart, Column, Section, Statements, Status, Table, shown_table

MiB = 1024 * 1024
_HOST_COLUMNS = (
    Column("host", "host"),
    Column("samples", "samples", numeric=True),
    Column("cpu_busy_mean", "CPU busy mean %", numeric=True),
    Column("cpu_busy_max", "CPU busy max %", numeric=True),
    Column("load1_mean", "load1", numeric=True),
    Column("mem_used_max_mib", "memory used max (MiB)", numeric=True),
    Column("disk_read_mibps", "disk read MiB/s", numeric=True),
    Column("disk_write_mibps", "disk write MiB/s", numeric=True),
    Column("net_rx_mibps", "net rx MiB/s", numeric=True),
    Column("net_tx_mibps", "net tx MiB/s", numeric=True),
)
_PROC_COLUMNS = (
    Column("host", "host"),
    Column("process", "process"),
    Column("samples", "samples", numeric=True),
    Column("cpu_mean", "CPU mean % of a core", numeric=True),
    Column("cpu_max", "CPU max %", numeric=True),
    Column("rss_max_mib", "RSS max (MiB)", numeric=True),
)


def _r(v: Any, scale: float = 1.0, nd: int = 2) -> float | None:
    return None if v is None else round(float(v) / scale, nd)


def cpu_memory_chart(
    samples: Samples, phases: Sequence[Phase], *, id: str = "sampling-chart"
) -> Chart:
    """Each host's CPU busy % (top) and memory used (bottom) over the run, seconds from
    its first phase (or sample), phases shaded and named."""
    df = samples.hosts
    starts = [p.start for p in phases] + df["t"].head(1).to_list()
    t0 = min(starts) if starts else 0.0
    hosts = sorted(set(df["host"].to_list()))
    colour = colours(hosts)
    data: list[dict[str, Any]] = []
    for h in hosts:
        d = df.filter(pl.col("host") == h)
        x = [round(t - t0, 3) for t in d["t"].to_list()]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": ptext(f"{h} CPU busy %"),
                "x": x,
                "y": d["cpu_busy"].to_list(),
                "line": {"color": colour[h]},
                "legendgroup": ptext(h),
            }
        )
        mem = [None if v is None else round(v / MiB, 1) for v in d["mem_used"].to_list()]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": ptext(f"{h} memory used MiB"),
                "x": x,
                "y": mem,
                "yaxis": "y2",
                "line": {"color": colour[h], "dash": "dot"},
                "legendgroup": ptext(h),
            }
        )
    shapes, notes = [], []
    for i, ph in enumerate(phases):
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": round(ph.start - t0, 3),
                "x1": round(ph.end - t0, 3),
                "y0": 0,
                "y1": 1,
                "line": {"width": 0},
                "fillcolor": "#888888",
                "opacity": 0.08 if i % 2 else 0.16,
                "layer": "below",
            }
        )
        notes.append(
            {
                "x": round((ph.start + ph.end) / 2 - t0, 3),
                "y": 1.0,
                "xref": "x",
                "yref": "paper",
                "text": ptext(ph.name),
                "showarrow": False,
                "yanchor": "bottom",
                "font": {"size": 10},
            }
        )
    layout = {
        "template": TEMPLATE,
        "title": {"text": "Hosts over the run: CPU busy and memory, phases shaded"},
        "xaxis": {"title": {"text": "seconds from the start"}},
        "yaxis": {
            "title": {"text": "CPU busy (% of all CPUs)"},
            "domain": [0.52, 1.0],
            "range": [0, 105],
        },
        "yaxis2": {"title": {"text": "memory used (MiB)"}, "domain": [0.0, 0.44], "anchor": "x"},
        "shapes": shapes,
        "annotations": notes,
        "legend": {"orientation": "h"},
    }
    return Chart(
        id=id,
        title="Hosts' CPU and memory over time",
        figure={"data": data, "layout": layout},
        note="sampled from each host's node_exporter, or the SSH probe where it has none",
    )


def phase_tables(
    samples: Samples, phases: Sequence[Phase], *, prefix: str = "sampling"
) -> list[Table]:
    """A table per phase: each host's figures, then its named processes."""
    figs = phase_figures(samples, phases)
    procs = process_figures(samples, phases)
    out: list[Table] = []
    for i, ph in enumerate(phases):
        rows = [
            [
                r["host"],
                r["samples"],
                _r(r["cpu_busy_mean"], nd=1),
                _r(r["cpu_busy_max"], nd=1),
                _r(r["load1_mean"]),
                _r(r["mem_used_max"], MiB, 1),
                _r(r["disk_read_bps"], MiB, 3),
                _r(r["disk_write_bps"], MiB, 3),
                _r(r["net_rx_bps"], MiB, 3),
                _r(r["net_tx_bps"], MiB, 3),
            ]
            for r in figs.filter(pl.col("phase") == ph.name).iter_rows(named=True)
        ]
        if not rows:
            rows = [["(no samples)", 0, None, None, None, None, None, None, None, None]]
        out.append(
            shown_table(
                f"{prefix}-phase-{i + 1}",
                f"Hosts during {ph.name}",
                _HOST_COLUMNS,
                rows,
                scope="full",
            )
        )
        prow = [
            [
                r["host"],
                r["label"],
                r["samples"],
                _r(r["cpu_mean"], nd=1),
                _r(r["cpu_max"], nd=1),
                _r(r["rss_max"], MiB, 1),
            ]
            for r in procs.filter(pl.col("phase") == ph.name).iter_rows(named=True)
        ]
        if prow:
            out.append(
                shown_table(
                    f"{prefix}-processes-{i + 1}",
                    f"Processes during {ph.name}",
                    _PROC_COLUMNS,
                    prow,
                    scope="full",
                )
            )
    return out


def sampling_statements(
    samples: Samples, bound: ClientBound | None, *, id: str = "sampling-notes"
) -> Statements | None:
    """The client-bound finding and every warning the sampler recorded."""
    lines: list[tuple[Status, str]] = []
    if bound is not None:
        lines.append(("warn" if bound.flagged else "pass", bound.reason))
    seen: set[tuple[str, str]] = set()
    for w in samples.warnings:
        key = (w["host"], w["text"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(("warn", f"{w['host']}: [{w['code']}] {w['text']}"))
        if len(seen) >= 50:
            lines.append(("info", "more warnings in RUN/samples/*.jsonl"))
            break
    if samples.bad_lines:
        lines.append(
            ("warn", f"{samples.bad_lines} unreadable line(s) in RUN/samples/*.jsonl left out")
        )
    if not lines:
        return None
    return Statements(id=id, title="Sampling: validity and warnings", lines=tuple(lines))


def sampling_sections(
    samples: Samples,
    phases: Sequence[Phase],
    *,
    client: str | None = None,
    servers: Sequence[str] = (),
) -> list[Section]:
    """Chart, per-phase tables and notes of a run's samples (none when nothing was
    sampled). ``client``: the load's own host, for the client-bound rule."""
    if samples.empty:
        return []
    bound = None
    if client is not None:
        bound = client_bound(phase_figures(samples, phases), phases, client, servers)
    out: list[Section] = []
    notes = sampling_statements(samples, bound)
    if notes is not None:
        out.append(notes)
    if not samples.hosts.is_empty():
        out.append(cpu_memory_chart(samples, phases))
    out.extend(phase_tables(samples, phases))
    return out
