"""Plotly figures of a job-flow experiment against offered rate, built from metrics.

Each builder returns a :class:`gridbench.sections.Chart` (or None when its data is
absent). Text that ends up in a figure (trace names, titles) passes through
:func:`gridbench.plotting.ptext`, because plotly.js renders a subset of HTML in labels.
The per-trial time series are in :mod:`gridbench.jobflow.report.timeseries`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gridbench.jobflow.report.model import (
    OTHER,
    OVERALL,
    Row,
    chain_view,
    latency_components,
    num,
    points,
    rate_label,
    throughput_stages,
)
from gridbench.jobflow.report.rows import failure_rows, latency_rows, throughput_rows
from gridbench.plotting import PALETTE, TEMPLATE, colours, figure_data, ptext
from gridbench.sections import Chart


def chart(id: str, title: str, caption: str, fig: Any) -> Chart:
    """The section of a plotly figure, with its anchor id, title and caption."""
    return Chart(id=id, title=title, figure=figure_data(fig), note=caption)


def segment_colours(metrics: Mapping[str, Any], extra: Sequence[str] = ()) -> dict[str, str]:
    """One colour per segment for every chart: components first (the most distinct
    colours), then the chain's other segments, then ``extra`` names (series keys the chain
    does not declare), then 'overall'; 'other' is grey."""
    chain = chain_view(metrics)
    comps = chain.components
    rest = [g.name for g in chain.segments if g.name not in comps]
    known = {*comps, *rest, OVERALL, OTHER}
    more = [x for x in dict.fromkeys(extra) if x not in known]
    return colours([*comps, *rest, *more, OVERALL])


def layout(fig: Any, title: str, **kw: Any) -> Any:
    """The report's common figure layout: template, title, margins, legend at the right."""
    fig.update_layout(
        template=TEMPLATE,
        title={"text": ptext(title)},
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        # right of the plot, where no title is: below it, a two-row legend ran into the x
        # axis's title; above it, into the chart's title
        legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
        **kw,
    )
    return fig


@dataclass(frozen=True, slots=True)
class ChartSection:
    """The report section around a figure: its anchor id, title and caption."""

    id: str
    title: str
    caption: str


def finish(
    fig: Any,
    section: ChartSection,
    *,
    heading: str,
    axes: Sequence[tuple[Literal["x", "y"], str]] = (),
    tozero: bool = False,
    **kw: Any,
) -> Chart:
    """Lay ``fig`` out under ``heading`` (:func:`layout`, with ``kw``), title its axes in
    the order given (each from zero when ``tozero``) and make its section (:func:`chart`)."""
    layout(fig, heading, **kw)
    extra = {"rangemode": "tozero"} if tozero else {}
    for axis, text in axes:
        (fig.update_xaxes if axis == "x" else fig.update_yaxes)(title_text=text, **extra)
    return chart(section.id, section.title, section.caption, fig)


def _rate_axis(metrics: Mapping[str, Any]) -> list[str]:
    return [ptext(rate_label(p)) for p in points(metrics)]


def _latency_by_rate(
    metrics: Mapping[str, Any],
) -> tuple[dict[tuple[Any, str], Row], list[str], dict[str, str], list[str]] | None:
    """The latency rows by (point index, component), the components but 'overall', the
    segment colours and the rate axis; None without latency rows."""
    rows = latency_rows(metrics)
    if not rows:
        return None
    comps = [c for c in latency_components(metrics) if c != OVERALL]
    by = {(r["point_index"], r["component"]): r for r in rows}
    return by, comps, segment_colours(metrics), _rate_axis(metrics)


def _throughput_by_stage(metrics: Mapping[str, Any]) -> tuple[list[Row], list[str]] | None:
    """The throughput rows and the stages; None when either is missing."""
    rows = throughput_rows(metrics)
    stages = throughput_stages(metrics)
    return (rows, stages) if rows and stages else None


def _component_bars(
    fig: Any,
    metrics: Mapping[str, Any],
    lat: tuple[dict[tuple[Any, str], Row], list[str], dict[str, str], list[str]],
    key: str,
    hover: str,
) -> None:
    """One bar trace per component (not 'overall'): its latency row's ``key`` per rate."""
    by, comps, col, x = lat
    for c in comps:
        ys = [by.get((p.get("index"), c), {}).get(key) for p in points(metrics)]
        fig.add_bar(name=ptext(c), x=x, y=ys, marker_color=col[c], hovertemplate=hover)


def latency_breakdown(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 26: stacked mean latency per component (plus 'other') per rate, and the
    overall mean with its standard deviation across trials."""
    lat = _latency_by_rate(metrics)
    if lat is None:
        return None
    by, _, _, x = lat
    fig = go.Figure()
    _component_bars(fig, metrics, lat, "avg_s", "%{y:.3g} s")
    overall = [by.get((p.get("index"), OVERALL), {}) for p in points(metrics)]
    fig.add_scatter(
        name="overall (mean ± std)",
        x=x,
        y=[o.get("avg_s") for o in overall],
        error_y={"type": "data", "array": [o.get("std_s") for o in overall]},
        mode="markers",
        marker={"symbol": "diamond", "size": 10, "color": "#000000"},
    )
    return finish(
        fig,
        ChartSection(
            "latency-breakdown",
            "Latency breakdown per rate",
            "Mean latency of each component segment, stacked; 'other' is the rest of the overall "
            "latency (network, polling, queues outside the components). Means of trial means.",
        ),
        heading="Latency breakdown per offered rate",
        axes=[("y", "mean latency (s)"), ("x", "offered rate")],
        barmode="relative",
    )


def latency_share(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 27: each component's share (%) of the overall mean latency per rate."""
    lat = _latency_by_rate(metrics)
    if lat is None:
        return None
    fig = go.Figure()
    _component_bars(fig, metrics, lat, "share_pct", "%{y:.1f}%")
    return finish(
        fig,
        ChartSection(
            "latency-share",
            "Latency share per component",
            "Each component's mean as a percentage of the overall mean latency.",
        ),
        heading="Share of each component in the overall latency",
        axes=[("y", "share of overall mean latency (%)"), ("x", "offered rate")],
        barmode="relative",
    )


def throughput_vs_rate(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 22: throughput per stage against offered rate, std error bars, y = x line."""
    tp = _throughput_by_stage(metrics)
    if tp is None:
        return None
    rows, stages = tp
    col = colours(stages)
    fig = go.Figure()
    rates = [r for p in points(metrics) if (r := num(p.get("offered_rate_per_s"))) is not None]
    if rates:
        top = max(rates) * 1.05
        fig.add_scatter(
            name="expected (= offered)",
            x=[0.0, top],
            y=[0.0, top],
            mode="lines",
            line={"dash": "dash", "color": "#888888"},
        )
    for s in stages:
        mine = [r for r in rows if r["stage"] == s and r["rate_per_s"] is not None]
        fig.add_scatter(
            name=ptext(f"{mine[0]['tr']} {s}" if mine else s),
            x=[r["rate_per_s"] for r in mine],
            y=[r["mean_per_s"] for r in mine],
            error_y={"type": "data", "array": [r["std_per_s"] for r in mine]},
            mode="lines+markers",
            line={"color": col[s]},
        )
    return finish(
        fig,
        ChartSection(
            "throughput",
            "Throughput against offered rate",
            "Average throughput of each stage (EDGI definition, warm-up trimmed), mean ± standard "
            "deviation across trials. A stage below the dashed line does not keep up.",
        ),
        heading="Throughput against offered rate",
        axes=[("x", "offered rate (jobs/s)"), ("y", "throughput (jobs/s, mean ± std)")],
        tozero=True,
    )


def expected_ratio(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 23: actual/expected throughput per stage (TR1..TRn), one bar group per rate."""
    tp = _throughput_by_stage(metrics)
    if tp is None:
        return None
    rows, stages = tp
    tr = {r["stage"]: r["tr"] for r in rows}
    x = [ptext(f"{tr[s]} {s}") for s in stages]
    fig = go.Figure()
    for i, p in enumerate(points(metrics)):
        mine = {r["stage"]: r for r in rows if r["point_index"] == p.get("index")}
        fig.add_bar(
            name=ptext(rate_label(p)),
            x=x,
            y=[mine.get(s, {}).get("ratio_mean") for s in stages],
            error_y={"type": "data", "array": [mine.get(s, {}).get("ratio_std") for s in stages]},
            marker_color=PALETTE[i % len(PALETTE)],
        )
    fig.add_hline(y=1.0, line_dash="dash", line_color="#888888", annotation_text="expected")
    return finish(
        fig,
        ChartSection(
            "expected-ratio",
            "Actual ÷ expected throughput per stage",
            "Expected throughput is the offered rate. The first stage whose ratio breaks is the "
            "bottleneck; every stage after it is limited by it.",
        ),
        heading="Actual ÷ expected throughput per stage",
        axes=[("y", "actual / expected")],
        tozero=True,
        barmode="group",
    )


def failures(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 25: failures per trial by kind against rate, and the last stage's throughput."""
    rows = failure_rows(metrics)
    if not rows or not any(r["total"] for r in rows):
        return None
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    x = _rate_axis(metrics)
    pts = points(metrics)
    by = {(r["point_index"], r["kind"]): r for r in rows}
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for i, k in enumerate(kinds):
        mine = [by.get((p.get("index"), k), {}) for p in pts]
        fig.add_trace(
            go.Bar(
                name=ptext(k),
                x=x,
                y=[m.get("mean") for m in mine],
                error_y={"type": "data", "array": [m.get("std") for m in mine]},
                marker_color=PALETTE[(i + 3) % len(PALETTE)],
            ),
            secondary_y=False,
        )
    stages = throughput_stages(metrics)
    if stages:
        last = stages[-1]
        tp = {r["point_index"]: r for r in throughput_rows(metrics) if r["stage"] == last}
        fig.add_trace(
            go.Scatter(
                name=ptext(f"{last} throughput"),
                x=x,
                y=[tp.get(p.get("index"), {}).get("mean_per_s") for p in pts],
                mode="lines+markers",
                line={"color": "#000000"},
            ),
            secondary_y=True,
        )
        fig.update_yaxes(title_text="throughput (jobs/s)", secondary_y=True, rangemode="tozero")
    layout(fig, "Failures against offered rate", barmode="stack")
    fig.update_yaxes(title_text="failed jobs per trial (mean)", secondary_y=False)
    return chart(
        "failures",
        "Failures against offered rate",
        "Failed jobs per trial by kind (mean ± std across valid trials), with the last stage's "
        "throughput on the right axis.",
        fig,
    )
