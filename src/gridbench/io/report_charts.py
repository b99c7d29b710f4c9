"""io's report charts as :class:`~gridbench.sections.Chart` sections (plotly figure JSON):
throughput per test, latency CDFs, latency over time and concurrency scaling. Pure
functions of ``metrics.json``; a chart with no data is None."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.io.matrix import LABEL
from gridbench.plotting import TEMPLATE, colours, figure_data, ptext
from gridbench.sections import Chart


def _chart(id: str, title: str, note: str, fig: Any) -> Chart:
    return Chart(id=id, title=title, figure=figure_data(fig), note=note)


def bars(metrics: Mapping[str, Any]) -> Chart | None:
    """Mean kB/s per test and target, ±1 sd error bars."""
    mat = metrics.get("matrix", [])
    if not mat:
        return None
    targets = list(dict.fromkeys(m["target"] for m in mat))
    col = colours(targets)
    fig = go.Figure()
    for t in targets:
        ms = [m for m in mat if m["target"] == t]
        fig.add_bar(
            name=ptext(t),
            x=[ptext(LABEL.get(m["test"], m["test"])) for m in ms],
            y=[m["kbps"]["mean"] for m in ms],
            error_y={"type": "data", "array": [m["kbps"]["std"] or 0 for m in ms]},
            marker_color=col[t],
        )
    fig.update_layout(template=TEMPLATE, barmode="group", yaxis_title="kB/s", height=420)
    return _chart(
        "bars",
        "Throughput per test",
        "Mean kB/s per test and target; error bars: ±1 sd across repetitions.",
        fig,
    )


def _lines(
    rows: list[Any],
    x: str,
    y: str,
    name: Callable[[Mapping[str, Any]], str],
    mode: str,
    layout: Mapping[str, Any],
) -> Any:
    """One line per row (``row[x]`` against ``row[y]``), coloured by its target."""
    col = colours(list(dict.fromkeys(r["target"] for r in rows)))
    fig = go.Figure()
    for r in rows:
        fig.add_scatter(
            x=r[x], y=r[y], mode=mode, line={"color": col[r["target"]]}, name=ptext(name(r))
        )
    fig.update_layout(template=TEMPLATE, **layout)
    return fig


def _test(r: Mapping[str, Any]) -> str:
    return f"{r['target']} · {LABEL.get(r['test'], r['test'])}"


def latency(metrics: Mapping[str, Any]) -> Chart | None:
    """The CDF of per-I/O latency per target and test."""
    cdfs = metrics.get("latency_cdf", [])
    if not cdfs:
        return None
    layout = {
        "xaxis_type": "log",
        "xaxis_title": "latency (ms, log)",
        "yaxis_title": "fraction of I/Os",
        "height": 460,
    }
    return _chart(
        "latency",
        "Latency distributions",
        "CDF of per-I/O latency from fio's JSON+ histograms, merged over repetitions.",
        _lines(cdfs, "ms", "cdf", _test, "lines", layout),
    )


def over_time(metrics: Mapping[str, Any]) -> Chart | None:
    """p99 latency per time bin of the first repetition (``latency_log: true``); the bin is
    narrower than a second for short tests (``bin_ms``), so they are more than one point."""
    series = [x for x in metrics.get("latency_series", []) if x.get("rep") == 0]
    if not series:
        return None
    widths = sorted({str(x.get("bin_ms") or 1000) for x in series}, key=float)
    layout = {
        "xaxis_title": "time into the test (s)",
        "yaxis_title": "p99 latency (ms)",
        "height": 420,
    }
    return _chart(
        "overtime",
        "Latency over time",
        f"p99 latency per {' or '.join(widths)} ms from fio's per-I/O latency log (first "
        "repetition); each point is its bin's start.",
        _lines(
            series,
            "second",
            "p99_ms_per_s",
            lambda x: f"{_test(x)} · {x['direction']}",
            "lines+markers",
            layout,
        ),
    )


def scaling(metrics: Mapping[str, Any]) -> Chart | None:
    """Aggregate kB/s against the number of clients, last done and first done."""
    conc = metrics.get("concurrency", [])
    if not conc:
        return None
    fig = go.Figure()
    keys = list(dict.fromkeys((c["target"], c["test"], c["files"]) for c in conc))
    col = colours(list(dict.fromkeys(k[0] for k in keys)))
    for target, test, files in keys:
        cs = sorted(
            (c for c in conc if (c["target"], c["test"], c["files"]) == (target, test, files)),
            key=lambda c: c["clients"],
        )
        x = [c["clients"] for c in cs]
        for which, dash in (("last_done_kbps", "solid"), ("first_done_kbps", "dot")):
            fig.add_scatter(
                x=x,
                y=[c[which]["mean"] for c in cs],
                mode="lines+markers",
                line={"color": col[target], "dash": dash},
                name=ptext(
                    f"{target} · {test} · {files} files · "
                    + ("last done" if which == "last_done_kbps" else "first done (estimate)")
                ),
            )
    fig.update_layout(
        template=TEMPLATE, xaxis_title="clients", yaxis_title="aggregate kB/s", height=420
    )
    return _chart(
        "scaling",
        "Concurrency scaling",
        "Aggregate kB/s against clients: solid 'last done' (all bytes ÷ slowest client), "
        "dotted 'first done', an estimate: the sum of the clients' mean rates, assuming each "
        "client's rate was steady over its run.",
        fig,
    )


def replay_streams(metrics: Mapping[str, Any]) -> Chart | None:
    """The trace replays' aggregate kB/s and p50 latency against the number of concurrent
    streams, a line per target, direction and O_SYNC (000 §4.9.6, Fig. 4.40-4.43)."""
    rows = [r for r in metrics.get("replay", []) if isinstance(r, Mapping)]
    if len({r.get("streams") for r in rows}) < 2:
        return None
    keys = list(dict.fromkeys((r["target"], r["direction"], bool(r["sync"])) for r in rows))
    col = colours(list(dict.fromkeys(k[0] for k in keys)))
    fig = go.Figure()
    for key in keys:
        target, direction, sync = key
        rs = sorted(
            (r for r in rows if (r["target"], r["direction"], bool(r["sync"])) == key),
            key=lambda r: r["streams"],
        )
        label = f"{target} · {direction} · {'O_SYNC' if sync else 'no O_SYNC'}"
        dash = "dot" if sync else "solid"
        fig.add_scatter(
            x=[r["streams"] for r in rs],
            y=[r["kbps"]["mean"] for r in rs],
            mode="lines+markers",
            line={"color": col[target], "dash": dash},
            name=ptext(label + " · kB/s"),
        )
        fig.add_scatter(
            x=[r["streams"] for r in rs],
            y=[(r.get("lat_ms") or {}).get("p50") for r in rs],
            mode="lines+markers",
            line={"color": col[target], "dash": dash},
            marker={"symbol": "diamond"},
            name=ptext(label + " · p50 ms"),
            yaxis="y2",
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="concurrent streams",
        yaxis_title="aggregate kB/s",
        yaxis2={"title": "p50 latency (ms)", "overlaying": "y", "side": "right"},
        height=440,
    )
    return _chart(
        "replay-streams",
        "Trace replay against concurrent streams",
        "Aggregate kB/s (circles) and p50 latency (diamonds, right axis) of the replayed trace "
        "against the number of concurrent streams; dotted: with O_SYNC.",
        fig,
    )


def charts(metrics: Mapping[str, Any]) -> list[Chart]:
    """Every chart with data, in the report's order."""
    return [
        c
        for c in (
            bars(metrics),
            latency(metrics),
            over_time(metrics),
            scaling(metrics),
            replay_streams(metrics),
        )
        if c is not None
    ]
