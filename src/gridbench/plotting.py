"""Plotly conventions shared by every family's charts: one palette, one template, and
label text made safe for plotly.js (which renders a subset of HTML in labels)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: A colour-blind-friendly qualitative palette (Okabe-Ito, then Tableau) for stable colours.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
    "#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7",
)  # fmt: skip
#: The colour of a remainder series (named ``other``).
OTHER = "other"
OTHER_COLOUR = "#9E9E9E"
TEMPLATE = "plotly_white"


def ptext(value: Any) -> str:
    """Text safe for plotly labels: '<', '>' and '&' as entities (plotly.js shows them
    as characters and never as tags)."""
    return html.escape(str(value), quote=False)


def colours(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per name, in order; ``other`` is grey."""
    out: dict[str, str] = {}
    for i, n in enumerate(x for x in names if x != OTHER):
        out[n] = PALETTE[i % len(PALETTE)]
    out[OTHER] = OTHER_COLOUR
    return out


def figure_data(fig: Any) -> dict[str, Any]:
    """A plotly figure as plain JSON data (``{"data": [...], "layout": {...}}``), what a
    :class:`gridbench.sections.Chart` holds."""
    import json

    import plotly.io as pio

    data: dict[str, Any] = json.loads(pio.to_json(fig, validate=False, pretty=False))
    return data


#: The most points a plotted line keeps (series.json, the dashboard's charts).
MAX_POINTS = 500
F64 = NDArray[np.float64]


def minmax_downsample(t: F64, v: F64, max_points: int = MAX_POINTS) -> tuple[F64, F64, bool]:
    """At most ``max_points`` points keeping each bucket's min and max (NaN values dropped)."""
    ok = np.isfinite(t) & np.isfinite(v)
    if t.size <= max_points or not ok.all():  # long and all finite: no copy needed
        t, v = t[ok], v[ok]
    n = t.size
    if n <= max_points:
        return t, v, False
    buckets = max(1, max_points // 2)
    k = math.ceil(n / buckets)
    buckets = math.ceil(n / k)
    # full buckets as a view; the short last one apart (no NaN padding, no nanarg* copies)
    full = n // k
    rows = v[: full * k].reshape(full, k)
    starts = np.arange(buckets) * k
    lo = np.empty(buckets, dtype=np.intp)
    hi = np.empty(buckets, dtype=np.intp)
    lo[:full] = np.argmin(rows, axis=1)
    hi[:full] = np.argmax(rows, axis=1)
    if full < buckets:
        lo[full] = np.argmin(v[full * k :])
        hi[full] = np.argmax(v[full * k :])
    idx = np.unique(np.concatenate([lo + starts, hi + starts]))  # sorted: time order
    return t[idx], v[idx], True
