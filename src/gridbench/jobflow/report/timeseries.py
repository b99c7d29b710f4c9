"""Per-trial time-series charts of a job-flow experiment (throughput over time, queues,
latency distributions): one trial at a time, chosen in a menu."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gridbench.fmt import fmt_number
from gridbench.jobflow.report.charts import chart, layout, segment_colours
from gridbench.jobflow.report.model import (
    OTHER,
    OVERALL,
    as_dict,
    chain_view,
    num,
    points,
    rate_label,
    representative_trial,
    throughput_stages,
    trials,
)
from gridbench.plotting import OTHER_COLOUR, colours, ptext
from gridbench.sections import Chart

#: Above this many trials the time-series selectors offer only each point's representative.
MAX_SELECTABLE_TRIALS = 20


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
        f"by min/max per bucket (each bucket keeps its lowest and highest point) "
        f"({', '.join(ds)})."
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
    layout(fig, title)
    _with_selector(fig, groups, _default_choice(choices), title, height=700, layouts=ranges)
    fig.update_xaxes(title_text="time since trial start (s)", row=2, col=1)
    fig.update_yaxes(title_text="jobs/s", row=1, col=1)
    fig.update_yaxes(title_text="jobs/s", row=2, col=1)
    window = num(as_dict(as_dict(series[choices[0][0]]).get("windowed")).get("window_s"))
    wtext = f" over a {fmt_number(window)} s window" if window else ""
    return chart(
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
    layout(fig, title)
    _with_selector(fig, groups, _default_choice(choices), title, height=500)
    fig.update_xaxes(title_text="time since trial start (s)")
    fig.update_yaxes(title_text="jobs in segment", rangemode="tozero")
    return chart(
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
    layout(fig, title, bargap=0)
    _with_selector(fig, groups, _default_choice(choices), title, height=160 + 240 * nrows)
    fig.update_xaxes(title_text="seconds", row=nrows)
    fig.update_yaxes(title_text="jobs", col=1)
    return chart(
        "latency-hist",
        "Latency distributions",
        "Histogram of job latencies per segment and overall, for the chosen trial."
        + _series_note(series, [c[0] for c in choices]),
        fig,
    )
