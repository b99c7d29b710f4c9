"""net's report charts as :class:`~gridbench.sections.Chart` sections (plotly figure JSON):
RTT and speed against message size (log–log, the floor dashed), latency against client
count with its spread, burst completion timelines and transfer speeds with ± sd. Pure
functions of a checked ``gridbench.net/1`` document; a chart with no data is None. Every
label from the data goes through :func:`gridbench.plotting.ptext`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.plotting import TEMPLATE, colours, figure_data, ptext
from gridbench.sections import Chart, listed, rep_mean

#: The floor's line per environment: black, a dash pattern each.
_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _chart(id: str, title: str, note: str, fig: Any) -> Chart:
    return Chart(id=id, title=title, figure=figure_data(fig), note=note)


def _sizes(metrics: Mapping[str, Any]) -> tuple[float, float] | None:
    sizes = [
        float(r["size_bytes"])
        for s in listed(metrics, "pingpong")
        for r in s["rows"]
        if r["size_bytes"] > 0
    ]
    return (min(sizes), max(sizes)) if sizes else None


def _floor_line(
    fig: go.Figure, envs: list[str], env: str, x: list[Any], y: list[Any], name: str
) -> None:
    """The network's floor in ``env``: a black line, dashed by the environment."""
    dash = _DASHES[envs.index(env) % len(_DASHES)]
    line = {"dash": dash, "color": "#000000"}
    fig.add_scatter(x=x, y=y, mode="lines", name=ptext(name), line=line)


def _against_size(fig: go.Figure, y_title: str) -> None:
    """Log-log axes: message size across, ``y_title`` up."""
    fig.update_layout(
        template=TEMPLATE,
        xaxis={"type": "log", "title": "message size (bytes, log)"},
        yaxis={"type": "log", "title": y_title},
        height=460,
    )


def rtt_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Mean RTT against message size, log–log; one line per transport × environment,
    sockperf's RTT per environment dashed."""
    series = listed(metrics, "pingpong")
    if not series:
        return None
    envs = list(dict.fromkeys(str(s["env"]) for s in series))
    col = colours([f"{s['transport']} · {s['env']}" for s in series])
    fig = go.Figure()
    for s in series:
        rows = [r for r in s["rows"] if r["size_bytes"] > 0 and rep_mean(r["rtt_ms"]) is not None]
        name = f"{s['transport']} · {s['env']}"
        fig.add_scatter(
            x=[r["size_bytes"] for r in rows],
            y=[r["rtt_ms"]["mean"] for r in rows],
            error_y={"type": "data", "array": [r["rtt_ms"].get("sd") or 0 for r in rows]},
            mode="lines+markers",
            name=ptext(name),
            line={"color": col[name]},
        )
    for f in listed(metrics, "floor"):
        if str(f.get("env")) not in envs:
            continue
        pts = [p for p in f.get("sockperf", []) if p["size_bytes"] > 0 and rep_mean(p["rtt_ms"])]
        if pts:
            x = [p["size_bytes"] for p in pts]
            y = [p["rtt_ms"]["mean"] for p in pts]
            _floor_line(fig, envs, str(f["env"]), x, y, f"floor (sockperf) · {f['env']}")
    _against_size(fig, "mean RTT (ms, log)")
    return _chart(
        "rtt-size",
        "Round-trip time against message size",
        "Mean RTT per size (error bars ±1 sd over the round trips); dashed: the network's "
        "floor, sockperf's RTT in the same environment. Zero-byte messages are left out of "
        "the log axis.",
        fig,
    )


def speed_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Ping-pong speed (2·s / RTT) against message size; iperf3's one-stream speed per
    environment as a dashed level."""
    series = listed(metrics, "pingpong")
    span = _sizes(metrics)
    if not series or span is None:
        return None
    col = colours([f"{s['transport']} · {s['env']}" for s in series])
    fig = go.Figure()
    for s in series:
        rows = [r for r in s["rows"] if r["size_bytes"] > 0 and r.get("speed_mb_s") is not None]
        name = f"{s['transport']} · {s['env']}"
        fig.add_scatter(
            x=[r["size_bytes"] for r in rows],
            y=[r["speed_mb_s"] for r in rows],
            mode="lines+markers",
            name=ptext(name),
            line={"color": col[name]},
        )
    envs = list(dict.fromkeys(str(s["env"]) for s in series))
    for f in listed(metrics, "floor"):
        one = [i["mb_s"] for i in f.get("iperf3", []) if i["streams"] == 1 and i.get("mb_s")]
        if one and str(f.get("env")) in envs:
            level = sum(one) / len(one)
            label = f"floor (iperf3 -P 1) · {f['env']}"
            _floor_line(fig, envs, str(f["env"]), list(span), [level, level], label)
    _against_size(fig, "speed (MB/s, log)")
    return _chart(
        "speed-size",
        "Ping-pong speed against message size",
        "Speed = 2·s / mean RTT (MB/s = 10^6 B/s); dashed: iperf3's single-stream "
        "throughput in the same environment.",
        fig,
    )


def fit_curve(fit: Any, lo: float, hi: float, points: int = 50) -> tuple[list[float], list[float]]:
    """The fitted growth curve ``a + b·f(x)`` over [lo, hi] (nothing for an unknown model)."""
    if not isinstance(fit, Mapping) or fit.get("model") not in _SHAPE or hi <= lo:
        return [], []
    coef = fit.get("coefficients") or {}
    a, b = float(coef.get("a") or 0.0), float(coef.get("b") or 0.0)
    xs = [lo + (hi - lo) * i / (points - 1) for i in range(points)]
    return xs, [a + b * _shape(str(fit["model"]), x) for x in xs]


def _shape(model: str, x: float) -> float:
    if model == "linear":
        return x
    if model == "nlogn":
        return x * math.log(x) if x > 0 else 0.0
    if model == "quadratic":
        return x * x
    return 0.0  # constant


_SHAPE = ("constant", "linear", "nlogn", "quadratic")


def scaling_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Mean per-call latency against concurrent clients, ±1 sd, with the fitted curve."""
    series = listed(metrics, "echo_scaling")
    if not series:
        return None
    names = [f"{s['transport']} · {s['config']} · {s['env']}" for s in series]
    col = colours(names)
    fig = go.Figure()
    for s, name in zip(series, names, strict=True):
        pts = [p for p in s["points"] if p.get("mean_ms") is not None]
        fig.add_scatter(
            x=[p["clients"] for p in pts],
            y=[p["mean_ms"] for p in pts],
            error_y={"type": "data", "array": [p.get("sd_ms") or 0 for p in pts]},
            mode="markers",
            marker={"color": col[name]},
            name=ptext(name),
        )
        fit = s.get("fit")
        xs, ys = (
            fit_curve(fit, min(p["clients"] for p in pts), max(p["clients"] for p in pts))
            if pts
            else ([], [])
        )
        if xs and isinstance(fit, Mapping):
            fig.add_scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": col[name], "dash": "dot"},
                name=ptext(f"{name}: fit {fit.get('model')}"),
            )
    fig.update_layout(
        template=TEMPLATE, xaxis_title="concurrent clients", yaxis_title="ms per call", height=420
    )
    return _chart(
        "echo-scaling",
        "Echo latency against concurrent clients",
        "Mean latency per call over every call of every client; error bars ±1 sd; dotted: "
        "the growth curve fitted to the means (constant, linear, n·ln n or quadratic by AIC).",
        fig,
    )


def burst_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Responses completed against time from the first send, per burst."""
    bursts = [b for b in listed(metrics, "burst") if (b.get("timeline") or {}).get("t_ms")]
    if not bursts:
        return None
    fig = go.Figure()
    for b in bursts:
        fig.add_scatter(
            x=b["timeline"]["t_ms"],
            y=b["timeline"]["completed"],
            mode="lines",
            line={"shape": "hv"},
            name=ptext(f"{b['transport']} · {b['env']} · {b.get('calls')} calls"),
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="ms from the first send",
        yaxis_title="responses completed",
        height=420,
    )
    return _chart(
        "burst-timeline",
        "Burst: responses over time",
        "The first good repetition of each burst (at most 500 points drawn).",
        fig,
    )


def transfer_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """MB/s per tool, direction and streams, ±1 sd, grouped by environment, beside the
    iperf3 floor it is compared with."""
    rows = listed(metrics, "transfer")
    if not rows:
        return None
    envs = list(dict.fromkeys(str(t["env"]) for t in rows))
    col = colours(envs)
    fig = go.Figure()
    for env in envs:
        ts = [t for t in rows if t["env"] == env]
        x = [ptext(f"{t['tool']} {t['direction']} ×{t['streams']}") for t in ts]
        fig.add_bar(
            name=ptext(env),
            x=x,
            y=[rep_mean(t.get("mb_s")) for t in ts],
            error_y={"type": "data", "array": [(t.get("mb_s") or {}).get("sd") or 0 for t in ts]},
            marker_color=col[env],
        )
        fig.add_scatter(
            name=ptext(f"floor (iperf3) · {env}"),
            x=x,
            y=[(t.get("floor") or {}).get("value_mb_s") for t in ts],
            mode="markers",
            marker={"symbol": "line-ew-open", "size": 28, "color": "#000000"},
        )
    fig.update_layout(template=TEMPLATE, barmode="group", yaxis_title="MB/s", height=420)
    return _chart(
        "transfer",
        "Transfer speed",
        "Mean MB/s (10^6 B/s) per tool, direction and stream count, ±1 sd across "
        "repetitions; a black dash: the iperf3 floor it is compared with.",
        fig,
    )


def charts(metrics: Mapping[str, Any]) -> list[Chart]:
    """Every chart with data, in the report's order."""
    found = (
        rtt_chart(metrics),
        speed_chart(metrics),
        scaling_chart(metrics),
        burst_chart(metrics),
        transfer_chart(metrics),
    )
    return [c for c in found if c is not None]
