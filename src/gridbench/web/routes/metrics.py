"""``/metrics``: the live trials in the OpenMetrics text format (web/metrics.py)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from gridbench.web.dashboard import Dash
from gridbench.web.metrics import exposition

router = APIRouter()


@router.get("/metrics")
def metrics(dash: Dash) -> Response:
    body, ctype = exposition(dash.registry)
    return Response(body, media_type=ctype)
