"""Plotly figures of an experiment, built in Python from metrics and per-trial series.

Each builder returns a :class:`Chart` (or None when its data is absent). Text that ends up
in a figure (trace names, titles) passes through :func:`ptext`, because plotly.js renders
a subset of HTML in labels. The HTML writer embeds the figures as JSON.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gridbench.report.fmt import fmt_number
from gridbench.report.model import (
    OTHER,
    OVERALL,
    as_dict,
    chain_view,
    latency_components,
    num,
    points,
    rate_label,
    representative_trial,
    throughput_stages,
    trials,
)
from gridbench.report.tables import failure_rows, latency_rows, throughput_rows

#: A colour-blind-friendly qualitative palette (Okabe-Ito, then Tableau) for stable colours.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7",
)  # fmt: skip
OTHER_COLOUR = "#9E9E9E"
#: Above this many trials the time-series selectors offer only each point's representative.
MAX_SELECTABLE_TRIALS = 20
TEMPLATE = "plotly_white"


def ptext(value: Any) -> str:
    """Text safe for plotly labels: '<', '>' and '&' as entities (plotly.js shows them
    as characters and never as tags)."""
    return html.escape(str(value), quote=False)


@dataclass(frozen=True, slots=True)
class Chart:
    """One figure of the report with its anchor id, title and caption."""

    id: str
    title: str
    caption: str
    figure: Any  # plotly.graph_objects.Figure (plotly ships no type hints)


def colours(names: list[str]) -> dict[str, str]:
    """A stable colour per name; 'other' is grey."""
    out: dict[str, str] = {}
    for i, n in enumerate(x for x in names if x != OTHER):
        out[n] = PALETTE[i % len(PALETTE)]
    out[OTHER] = OTHER_COLOUR
    return out


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


def _layout(fig: Any, title: str, **kw: Any) -> Any:
    fig.update_layout(
        template=TEMPLATE,
        title={"text": ptext(title)},
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": -0.3},
        **kw,
    )
    return fig


def _rate_axis(metrics: Mapping[str, Any]) -> list[str]:
    return [ptext(rate_label(p)) for p in points(metrics)]


def latency_breakdown(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 26: stacked mean latency per component (plus 'other') per rate, and the
    overall mean with its standard deviation across trials."""
    rows = latency_rows(metrics)
    if not rows:
        return None
    comps = [c for c in latency_components(metrics) if c != OVERALL]
    col = segment_colours(metrics)
    x = _rate_axis(metrics)
    pts = points(metrics)
    by = {(r["point_index"], r["component"]): r for r in rows}
    fig = go.Figure()
    for c in comps:
        ys = [by.get((p.get("index"), c), {}).get("avg_s") for p in pts]
        fig.add_bar(name=ptext(c), x=x, y=ys, marker_color=col[c], hovertemplate="%{y:.3g} s")
    overall = [by.get((p.get("index"), OVERALL), {}) for p in pts]
    fig.add_scatter(
        name="overall (mean ± std)",
        x=x,
        y=[o.get("avg_s") for o in overall],
        error_y={"type": "data", "array": [o.get("std_s") for o in overall]},
        mode="markers",
        marker={"symbol": "diamond", "size": 10, "color": "#000000"},
    )
    _layout(fig, "Latency breakdown per offered rate", barmode="relative")
    fig.update_yaxes(title_text="mean latency (s)")
    fig.update_xaxes(title_text="offered rate")
    return Chart(
        "latency-breakdown",
        "Latency breakdown per rate",
        "Mean latency of each component segment, stacked; 'other' is the rest of the overall "
        "latency (network, polling, queues outside the components). Means of trial means.",
        fig,
    )


def latency_share(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 27: each component's share (%) of the overall mean latency per rate."""
    rows = latency_rows(metrics)
    if not rows:
        return None
    comps = [c for c in latency_components(metrics) if c != OVERALL]
    col = segment_colours(metrics)
    x = _rate_axis(metrics)
    by = {(r["point_index"], r["component"]): r for r in rows}
    fig = go.Figure()
    for c in comps:
        ys = [by.get((p.get("index"), c), {}).get("share_pct") for p in points(metrics)]
        fig.add_bar(name=ptext(c), x=x, y=ys, marker_color=col[c], hovertemplate="%{y:.1f}%")
    _layout(fig, "Share of each component in the overall latency", barmode="relative")
    fig.update_yaxes(title_text="share of overall mean latency (%)")
    fig.update_xaxes(title_text="offered rate")
    return Chart(
        "latency-share",
        "Latency share per component",
        "Each component's mean as a percentage of the overall mean latency.",
        fig,
    )


def throughput_vs_rate(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 22: throughput per stage against offered rate, std error bars, y = x line."""
    rows = throughput_rows(metrics)
    stages = throughput_stages(metrics)
    if not rows or not stages:
        return None
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
    _layout(fig, "Throughput against offered rate")
    fig.update_xaxes(title_text="offered rate (jobs/s)", rangemode="tozero")
    fig.update_yaxes(title_text="throughput (jobs/s, mean ± std)", rangemode="tozero")
    return Chart(
        "throughput",
        "Throughput against offered rate",
        "Average throughput of each stage (EDGI definition, warm-up trimmed), mean ± standard "
        "deviation across trials. A stage below the dashed line does not keep up.",
        fig,
    )


def expected_ratio(metrics: Mapping[str, Any]) -> Chart | None:
    """Figure 23: actual/expected throughput per stage (TR1..TRn), one bar group per rate."""
    rows = throughput_rows(metrics)
    stages = throughput_stages(metrics)
    if not rows or not stages:
        return None
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
    _layout(fig, "Actual ÷ expected throughput per stage", barmode="group")
    fig.update_yaxes(title_text="actual / expected", rangemode="tozero")
    return Chart(
        "expected-ratio",
        "Actual ÷ expected throughput per stage",
        "Expected throughput is the offered rate. The first stage whose ratio breaks is the "
        "bottleneck; every stage after it is limited by it.",
        fig,
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
    _layout(fig, "Failures against offered rate", barmode="stack")
    fig.update_yaxes(title_text="failed jobs per trial (mean)", secondary_y=False)
    return Chart(
        "failures",
        "Failures against offered rate",
        "Failed jobs per trial by kind (mean ± std across valid trials), with the last stage's "
        "throughput on the right axis.",
        fig,
    )


# --- per-trial time series ---------------------------------------------------------------


def selectable_trials(
    metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str, bool]]:
    """(trial_id, menu label, is_representative) for trials that have series, point by point,
    each point's representative first; only representatives when there are too many."""
    out: list[tuple[str, str, bool]] = []
    for p in points(metrics):
        rep = representative_trial(p, metrics)
        ids = [str(t.get("trial_id")) for t in trials(p)]
        ordered = ([rep] if rep in ids else []) + [i for i in ids if i != rep]
        for tid in ordered:
            if tid in series:
                tag = " (representative)" if tid == rep else ""
                out.append((tid, f"{rate_label(p)} — {tid}{tag}", tid == rep))
    if len(out) > MAX_SELECTABLE_TRIALS:
        out = [o for o in out if o[2]]
    return out


def _default_choice(choices: list[tuple[str, str, bool]]) -> int:
    """The representative trial of the highest rate, where overload shows most."""
    reps = [i for i, c in enumerate(choices) if c[2]]
    return reps[-1] if reps else len(choices) - 1


#: Pixels above the plot area of a trial-selectable chart: the title, then the menu.
SELECTOR_TOP_PX = 110
BOTTOM_PX = 50


def _with_selector(
    fig: Any,
    groups: list[tuple[str, int]],
    default: int,
    title: str,
    height: int,
    layouts: Sequence[Mapping[str, Any]] | None = None,
) -> Any:
    """Show one trial's traces at a time, chosen with a dropdown.

    ``groups`` lists (menu label, number of traces) in the order the traces were added;
    ``layouts`` optional per-group layout updates (e.g. axis ranges) in plotly's dotted
    form. The title sits at the top of the figure and the menu on its own row below it.
    """
    total = sum(n for _, n in groups)
    buttons = []
    start = 0
    spans = []
    for _, n in groups:
        spans.append((start, start + n))
        start += n
    extra = list(layouts) if layouts is not None else [{} for _ in groups]
    for (label, _), (a, b), lay in zip(groups, spans, extra, strict=True):
        vis = [a <= i < b for i in range(total)]
        buttons.append(
            {
                "label": ptext(label),
                "method": "update",
                "args": [{"visible": vis}, {"title.text": ptext(f"{title}: {label}"), **lay}],
            }
        )
    a, b = spans[default]
    if extra[default]:
        fig.update_layout(dict(extra[default]))
    for i, tr in enumerate(fig.data):
        tr.visible = a <= i < b
    plot_px = max(height - SELECTOR_TOP_PX - BOTTOM_PX, 1)
    fig.update_layout(
        height=height,
        margin={"t": SELECTOR_TOP_PX, "b": BOTTOM_PX},
        title={
            "text": ptext(f"{title}: {groups[default][0]}"),
            "yref": "container",
            "y": 1.0,
            "yanchor": "top",
            "pad": {"t": 12},
        },
        updatemenus=[
            {
                "buttons": buttons,
                "active": default,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                # 45 px below the top of the figure, whatever its height.
                "y": 1.0 + (SELECTOR_TOP_PX - 45) / plot_px,
                "yanchor": "top",
                "showactive": True,
            }
        ],
    )
    return fig


def _xy(d: Any) -> tuple[list[Any], list[Any]]:
    dd = as_dict(d)
    t, v = dd.get("t"), dd.get("v")
    if isinstance(t, list) and isinstance(v, list):
        return t, v
    return [], []


def _hist(d: Any) -> tuple[list[float], list[float]]:
    """(edges, counts) of a histogram object, or empty lists when it is malformed."""
    dd = as_dict(d)
    edges, counts = dd.get("edges"), dd.get("counts")
    if isinstance(edges, list) and isinstance(counts, list) and len(edges) == len(counts) + 1:
        return edges, counts
    return [], []


def _pairs(metrics: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(p, t) for p in points(metrics) for t in trials(p)]


def _punctual_range(rate: float | None, windowed: Mapping[str, Any]) -> dict[str, Any]:
    """A y range for the punctual panel: its first points divide by almost no time and
    would flatten the rest, so cap the axis at 1.25 x the larger of the offered rate and
    the highest windowed rate (the user can still zoom out)."""
    top = rate or 0.0
    for v in windowed.values():
        _, ys = _xy(v)
        finite = [f for f in map(num, ys) if f is not None]
        if finite:
            top = max(top, max(finite))
    if top <= 0:
        return {}
    return {"yaxis.range": [0.0, 1.25 * top], "yaxis.autorange": False}


def _series_note(series: Mapping[str, Mapping[str, Any]], ids: list[str]) -> str:
    ds = [i for i in ids if as_dict(series.get(i)).get("downsampled")]
    if not ds:
        return ""
    return (
        f" Series of {len(ds)} trial(s) were down-sampled to at most 500 points per line "
        f"({', '.join(ds)}); short spikes may not show."
    )


def throughput_over_time(
    metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]
) -> Chart | None:
    """Figure 21 and windowed throughput: per stage over time, one trial at a time."""
    choices = selectable_trials(metrics, series)
    stages = throughput_stages(metrics)
    choices = [c for c in choices if as_dict(series[c[0]]).get("punctual")]
    if not choices:
        return None
    col = colours(stages)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("punctual throughput (cumulative)", "windowed throughput"),
    )
    groups: list[tuple[str, int]] = []
    ranges: list[dict[str, Any]] = []
    rates = {str(t.get("trial_id")): num(p.get("offered_rate_per_s")) for p, t in _pairs(metrics)}
    for tid, label, _ in choices:
        s = as_dict(series[tid])
        n = 0
        win = as_dict(s.get("windowed"))
        ranges.append(_punctual_range(rates.get(tid), win))
        for row, part in ((1, as_dict(s.get("punctual"))), (2, win)):
            names = [k for k in stages if k in part] + [
                k for k in part if k not in stages and isinstance(part[k], dict)
            ]
            for st in names:
                t, v = _xy(part[st])
                fig.add_trace(
                    go.Scatter(
                        x=t,
                        y=v,
                        name=ptext(st),
                        legendgroup=ptext(st),
                        showlegend=row == 1,
                        mode="lines",
                        line={"color": col.get(st, OTHER_COLOUR)},
                    ),
                    row=row,
                    col=1,
                )
                n += 1
        for key, dash in (("offered", "dash"), ("submitted", "dot")):
            t, v = _xy(s.get(key))
            if t:
                fig.add_trace(
                    go.Scatter(
                        x=t,
                        y=v,
                        name=key,
                        mode="lines",
                        line={"dash": dash, "color": "#555555"},
                    ),
                    row=2,
                    col=1,
                )
                n += 1
        groups.append((label, n))
    title = "Throughput over time"
    _layout(fig, title)
    _with_selector(fig, groups, _default_choice(choices), title, height=700, layouts=ranges)
    fig.update_xaxes(title_text="time since trial start (s)", row=2, col=1)
    fig.update_yaxes(title_text="jobs/s", row=1, col=1)
    fig.update_yaxes(title_text="jobs/s", row=2, col=1)
    window = num(as_dict(as_dict(series[choices[0][0]]).get("windowed")).get("window_s"))
    wtext = f" over a {fmt_number(window)} s window" if window else ""
    return Chart(
        "throughput-time",
        "Throughput over time",
        "Top: punctual throughput, jobs past the stage so far ÷ time since the first upstream "
        f"entry (the seed's Figure 21). Bottom: jobs past each stage{wtext}, with the offered "
        "and submitted rates. Choose the trial in the menu."
        + _series_note(series, [c[0] for c in choices]),
        fig,
    )


def queues_over_time(
    metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]
) -> Chart | None:
    """Figure 24: jobs inside each segment (entered, not yet left) over time."""
    choices = [c for c in selectable_trials(metrics, series) if as_dict(series[c[0]]).get("queues")]
    if not choices:
        return None
    order = [s.name for s in chain_view(metrics).segments]
    seen = [k for c in choices for k in as_dict(as_dict(series[c[0]]).get("queues"))]
    col = segment_colours(metrics, seen)
    fig = go.Figure()
    groups: list[tuple[str, int]] = []
    for tid, label, _ in choices:
        q = as_dict(as_dict(series[tid]).get("queues"))
        names = [k for k in order if k in q] + [k for k in q if k not in order]
        for g in names:
            t, v = _xy(q[g])
            fig.add_scatter(
                x=t, y=v, name=ptext(g), mode="lines", line={"color": col.get(g, OTHER_COLOUR)}
            )
        groups.append((label, len(names)))
    title = "Jobs waiting in each segment"
    _layout(fig, title)
    _with_selector(fig, groups, _default_choice(choices), title, height=500)
    fig.update_xaxes(title_text="time since trial start (s)")
    fig.update_yaxes(title_text="jobs in segment", rangemode="tozero")
    return Chart(
        "queues",
        "Jobs waiting in each segment over time",
        "Jobs that entered a segment and have not left it yet. A line that grows while "
        "submission runs marks a component that cannot keep up."
        + _series_note(series, [c[0] for c in choices]),
        fig,
    )


def latency_histograms(
    metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]
) -> Chart | None:
    """Latency distribution per segment (and overall), one small histogram each."""
    choices = [
        c for c in selectable_trials(metrics, series) if as_dict(series[c[0]]).get("latency_hist")
    ]
    if not choices:
        return None
    order = [s.name for s in chain_view(metrics).segments] + [OTHER, OVERALL]
    seen: list[str] = []
    for tid, _, _ in choices:
        for k in as_dict(as_dict(series[tid]).get("latency_hist")):
            if k not in seen:
                seen.append(k)
    keys = [k for k in order if k in seen] + [k for k in seen if k not in order]
    col = segment_colours(metrics, keys)
    ncols = 2 if len(keys) > 1 else 1
    nrows = -(-len(keys) // ncols)
    fig = make_subplots(
        rows=nrows,
        cols=ncols,
        subplot_titles=[ptext(k) for k in keys],
        vertical_spacing=min(0.3 / nrows, 0.12),
        horizontal_spacing=0.08,
    )
    groups: list[tuple[str, int]] = []
    for tid, label, _ in choices:
        h = as_dict(as_dict(series[tid]).get("latency_hist"))
        for i, k in enumerate(keys):
            edges, counts = _hist(h.get(k))
            fig.add_trace(
                go.Bar(
                    x=[(a + b) / 2 for a, b in itertools.pairwise(edges)],
                    y=counts,
                    width=[b - a for a, b in itertools.pairwise(edges)],
                    name=ptext(k),
                    marker_color=col.get(k, OTHER_COLOUR),
                    showlegend=False,
                    hovertemplate="%{x:.3g} s: %{y} jobs",
                ),
                row=i // ncols + 1,
                col=i % ncols + 1,
            )
        groups.append((label, len(keys)))
    title = "Latency distributions"
    _layout(fig, title, bargap=0)
    _with_selector(fig, groups, _default_choice(choices), title, height=160 + 240 * nrows)
    fig.update_xaxes(title_text="seconds", row=nrows)
    fig.update_yaxes(title_text="jobs", col=1)
    return Chart(
        "latency-hist",
        "Latency distributions",
        "Histogram of job latencies per segment and overall, for the chosen trial."
        + _series_note(series, [c[0] for c in choices]),
        fig,
    )


def all_charts(metrics: Mapping[str, Any], series: Mapping[str, Mapping[str, Any]]) -> list[Chart]:
    """Every chart that has data, in report order."""
    made = [
        latency_breakdown(metrics),
        latency_share(metrics),
        throughput_vs_rate(metrics),
        expected_ratio(metrics),
        throughput_over_time(metrics, series),
        queues_over_time(metrics, series),
        failures(metrics),
        latency_histograms(metrics, series),
    ]
    return [c for c in made if c is not None]
