"""Plotly helpers kept under their old names for io's own page (``gridbench.io.html``)
until io renders through typed sections; new code uses :mod:`gridbench.plotting`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gridbench.plotting import OTHER_COLOUR, PALETTE, TEMPLATE, colours, ptext


@dataclass(frozen=True, slots=True)
class Chart:
    """One figure of io's page with its anchor id, title and caption."""

    id: str
    title: str
    caption: str
    figure: Any  # plotly.graph_objects.Figure (plotly ships no type hints)


__all__ = ["OTHER_COLOUR", "PALETTE", "TEMPLATE", "Chart", "colours", "ptext"]
