"""Plotly conventions shared by every family's charts: one palette, one template, and
label text made safe for plotly.js (which renders a subset of HTML in labels)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

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
