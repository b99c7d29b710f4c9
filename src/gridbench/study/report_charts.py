"""The study's charts as :class:`~gridbench.sections.Chart` sections (plotly figure JSON):
each tool's SUS scores over the Sauro-Lewis grade bands, task-time box plots, Likert
answers as diverging stacked bars (the standard display: disagreement left of zero,
agreement right, the neutral answer split across zero) and the install survey's trend
across releases. Pure functions of a checked ``gridbench.study/1`` document; a chart
with no data is None. Every label from the data goes through
:func:`gridbench.plotting.ptext`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.plotting import TEMPLATE, colours, figure_data, ptext
from gridbench.sections import Chart, part
from gridbench.study.report_format import num, tools
from gridbench.study.sus import GRADES

#: Diverging colours, answer 1 to 5 (red ... blue), neutral grey.
LIKERT_COLOURS = ("#B2182B", "#EF8A62", "#BDBDBD", "#67A9CF", "#2166AC")
LIKERT_WORDS = {
    "satisfaction": ("very dissatisfied", "dissatisfied", "neutral", "satisfied", "very satisfied"),
    "difficulty": ("very easy", "easy", "neutral", "difficult", "very difficult"),
}


def _chart(id: str, title: str, note: str, fig: Any) -> Chart:
    return Chart(id=id, title=title, figure=figure_data(fig), note=note)


def _names(metrics: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(t.get("title") or k) for k, t in tools(metrics).items()}


def sus_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Each tool's SUS scores (points and box, the mean marked) over the grade bands."""
    names = _names(metrics)
    scored = {k: part(t, "sus") for k, t in tools(metrics).items() if part(t, "sus").get("scores")}
    if not scored:
        return None
    col = colours(list(names.values()))
    fig = go.Figure()
    bands = [(lo, GRADES[i - 1][0] if i else 100.0, g) for i, (lo, g) in enumerate(GRADES)]
    for i, (lo, hi, g) in enumerate(bands):
        fig.add_vrect(
            x0=lo,
            x1=hi,
            fillcolor="#000000",
            opacity=0.04 if i % 2 else 0.09,
            line_width=0,
            layer="below",
        )
        fig.add_annotation(
            x=(lo + hi) / 2, y=1.02, yref="paper", text=g, showarrow=False, font={"size": 10}
        )
    for k, s in scored.items():
        name = ptext(names[k])
        fig.add_box(
            x=[float(v) for v in s["scores"] if num(v) is not None],
            name=name,
            orientation="h",
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker={"color": col[names[k]]},
            line={"color": col[names[k]]},
            boxmean=True,
            showlegend=False,
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis={"title": "SUS score", "range": [0, 100]},
        height=140 + 70 * len(scored),
        margin={"t": 40},
    )
    return _chart(
        "sus-grades",
        "SUS scores per tool over the grade bands",
        "One point per participant; the box shows quartiles, the dashed line the mean. Shaded "
        "bands: the Sauro–Lewis curved grades (F below 51.7, A+ from 84.1).",
        fig,
    )


def time_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Box plots of each tool's per-participant mean task time."""
    names = _names(metrics)
    found = {k: part(t, "tasks").get("times_s") for k, t in tools(metrics).items()}
    times: dict[str, list[Any]] = {k: v for k, v in found.items() if isinstance(v, list) and v}
    if not times:
        return None
    col = colours(list(names.values()))
    fig = go.Figure()
    for k, v in times.items():
        fig.add_box(
            x=[float(x) for x in v if num(x) is not None],
            name=ptext(names[k]),
            orientation="h",
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker={"color": col[names[k]]},
            boxmean=True,
            showlegend=False,
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis={"title": "mean seconds per task", "rangemode": "tozero"},
        height=140 + 70 * len(times),
    )
    return _chart(
        "task-times",
        "Task time per tool",
        "One point per participant: the mean of their timed tasks with that tool (Start to Stop, "
        "timed on the server).",
        fig,
    )


def likert_chart(metrics: Mapping[str, Any], item: str) -> Chart | None:
    """Diverging stacked bars of one Likert item (``satisfaction`` or ``difficulty``):
    % of answers per level, 1-2 left of zero, 4-5 right, 3 split across zero."""
    names = _names(metrics)
    counts: dict[str, list[float]] = {}
    for k, t in tools(metrics).items():
        c = part(t, "tasks").get(f"{item}_counts")
        if isinstance(c, list) and len(c) == 5 and sum(float(x or 0) for x in c) > 0:
            total = sum(float(x or 0) for x in c)
            counts[names[k]] = [100.0 * float(x or 0) / total for x in c]
    if not counts:
        return None
    words = LIKERT_WORDS[item]
    # blue is the good end: satisfied, or easy
    palette = LIKERT_COLOURS if item == "satisfaction" else LIKERT_COLOURS[::-1]
    ys = [ptext(n) for n in counts]
    fig = go.Figure()
    # relative bars stack away from zero in trace order: the nearest level first
    for level, sign, show in (
        (2, -0.5, False),
        (1, -1.0, True),
        (0, -1.0, True),
        (2, 0.5, True),
        (3, 1.0, True),
        (4, 1.0, True),
    ):
        vals = [sign * v[level] for v in counts.values()]
        fig.add_bar(
            x=vals,
            y=ys,
            orientation="h",
            name=f"{level + 1} {words[level]}",
            marker={"color": palette[level]},
            legendgroup=str(level),
            legendrank=level + 1,
            showlegend=show,
            customdata=[abs(x) for x in vals],
            hovertemplate="%{y}: %{customdata:.1f}%<extra>"
            + f"{level + 1} {words[level]}"
            + "</extra>",
        )
    fig.update_layout(
        template=TEMPLATE,
        barmode="relative",
        xaxis={
            "title": "% of task answers",
            "range": [-100, 100],
            "zeroline": True,
            "tickvals": [-100, -50, 0, 50, 100],
            "ticktext": ["100", "50", "0", "50", "100"],
        },
        height=160 + 50 * len(counts),
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        margin={"t": 60},
    )
    return _chart(
        f"likert-{item}",
        f"Perceived {item} per tool (Likert, after each task)",
        "Diverging stacked bars: answers 1-2 left of zero, 4-5 right, the neutral 3 split "
        "half each side; % of all task answers for the tool.",
        fig,
    )


def install_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Each item's mean rating per release, and the overall mean (bold)."""
    s = part(metrics, "install_survey")
    rels = [r for r in s.get("releases") or [] if isinstance(r, Mapping)]
    if not rels:
        return None
    x = [ptext(r.get("release")) for r in rels]
    items = [str(i) for i in s.get("items") or []]
    col = colours(items)
    fig = go.Figure()
    for it in items:
        fig.add_scatter(
            x=x,
            y=[num(part(part(r, "items"), it).get("mean")) for r in rels],
            mode="lines+markers",
            name=ptext(it),
            line={"color": col[it]},
        )
    fig.add_scatter(
        x=x,
        y=[num(r.get("overall")) for r in rels],
        mode="lines+markers",
        name="overall",
        line={"color": "#000000", "width": 4},
    )
    fig.update_layout(
        template=TEMPLATE,
        xaxis={"title": "release", "type": "category"},
        yaxis={
            "title": f"mean rating (1-{s.get('scale')})",
            "range": [1, float(s.get("scale") or 6)],
        },
        height=440,
    )
    return _chart(
        "install-trend",
        "Install/configuration survey across releases",
        "Mean rating per item and release; black: all ratings of the release.",
        fig,
    )


def charts(metrics: Mapping[str, Any]) -> list[Chart]:
    """Every chart with data, in the report's order."""
    found = (
        sus_chart(metrics),
        time_chart(metrics),
        likert_chart(metrics, "satisfaction"),
        likert_chart(metrics, "difficulty"),
        install_chart(metrics),
    )
    return [c for c in found if c is not None]
