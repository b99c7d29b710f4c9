"""The transfer rate against the swept values, beside the transfer's time: one chart of
the ``staging`` blocks of a job-flow experiment's trials (pure: metrics in, figure out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gridbench.jobflow.report.charts import chart, layout
from gridbench.jobflow.report.model import (
    MIB,
    Row,
    as_dict,
    num,
    point_label,
    points,
    rate_label,
    scaled,
    trials,
)
from gridbench.plotting import colours, ptext
from gridbench.sections import Chart


def staging_points(metrics: Mapping[str, Any]) -> dict[str, list[Row]]:
    """Per transfer kind, one row per point: its label (the swept values, or the rate)
    and the means over its valid trials of the median rate (MiB/s) and the median
    transfer time (s), with the rate's standard deviation across those trials."""
    out: dict[str, list[Row]] = {}
    for p in points(metrics):
        per: dict[str, list[tuple[float | None, float | None]]] = {}
        for t in trials(p):
            if not t.get("valid", True):
                continue
            for kind, d in as_dict(t.get("staging")).items():
                d = as_dict(d)
                per.setdefault(str(kind), []).append(
                    (scaled(d.get("rate_bps_p50"), 1 / MIB), num(d.get("seconds_p50")))
                )
        for kind, vals in per.items():
            rates = np.array([r for r, _ in vals if r is not None], dtype=np.float64)
            secs = np.array([s for _, s in vals if s is not None], dtype=np.float64)
            out.setdefault(kind, []).append(
                {
                    "x": point_label(p) or rate_label(p),
                    "rate_mean": float(rates.mean()) if rates.size else None,
                    "rate_std": float(rates.std()) if rates.size > 1 else None,
                    "seconds_mean": float(secs.mean()) if secs.size else None,
                }
            )
    return out


def staging_chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Each transfer's rate (MiB/s, left axis) against the swept values, beside its time
    (s, dashed, right axis); None when no trial timed a transfer."""
    per = staging_points(metrics)
    if not per:
        return None
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    col = colours(list(per))
    for kind, rows in per.items():
        x = [ptext(r["x"]) for r in rows]
        fig.add_trace(
            go.Scatter(
                name=ptext(f"{kind} rate"),
                x=x,
                y=[r["rate_mean"] for r in rows],
                error_y={"type": "data", "array": [r["rate_std"] for r in rows]},
                mode="lines+markers",
                line={"color": col[kind]},
                hovertemplate="%{y:.3g} MiB/s",
            ),
            secondary_y=False,
        )
        fig.add_trace(
            go.Scatter(
                name=ptext(f"{kind} time"),
                x=x,
                y=[r["seconds_mean"] for r in rows],
                mode="lines+markers",
                line={"color": col[kind], "dash": "dash"},
                marker={"symbol": "square-open"},
                hovertemplate="%{y:.3g} s",
            ),
            secondary_y=True,
        )
    layout(fig, "Transfer rate and time per point")
    fig.update_yaxes(title_text="rate (MiB/s, median per trial)", secondary_y=False)
    fig.update_yaxes(title_text="transfer time (s, median)", secondary_y=True)
    fig.update_yaxes(rangemode="tozero")
    return chart(
        "staging-rate",
        "Data staging: rate beside time",
        "Each timed transfer's median rate (bytes ÷ its own time; mean ± std over the "
        "point's valid trials) against the swept values, and its median time on the right "
        "axis (dashed). A rate that stays flat while the time grows with the size is the "
        "link's bandwidth; a rate that rises with the size is a per-file or per-transfer "
        "cost being amortised.",
        fig,
    )
