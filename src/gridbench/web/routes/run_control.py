"""Runs this server started: stop, abort, analyse, and their live updates (SSE)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from gridbench.errors import GridbenchError
from gridbench.store.layout import json_safe
from gridbench.web.dashboard import Dash
from gridbench.web.manager import ManagedRun, analyse

SSE_KEEPALIVE_S = 15.0
MAX_SUBSCRIBERS = 32  # event streams per run (browser tabs, scripts)
NO_LIVE_RUN = "no live run with this id on this server"

router = APIRouter()


def sse(kind: str, data: Any) -> str:
    """One server-sent event."""
    text = json.dumps(json_safe(data), allow_nan=False, separators=(",", ":"), default=str)
    return f"event: {kind}\ndata: {text}\n\n"


async def event_stream(managed: ManagedRun) -> AsyncIterator[str]:
    """A snapshot, then every event of the run until it ends (keep-alives in between)."""
    live = managed.live
    q = live.subscribe()
    try:
        yield sse("snapshot", live.snapshot())
        if live.final and (managed.task is None or managed.task.done()):
            yield sse("end", {"status": live.status})
            return
        while True:
            try:
                kind, data = await asyncio.wait_for(q.get(), SSE_KEEPALIVE_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            yield sse(kind, data)
            if kind == "end":
                return
    finally:
        live.unsubscribe(q)


@router.get("/experiments/{rid}/events")
async def events(dash: Dash, rid: str) -> Response:
    managed = dash.manager.get(rid)
    if managed is None:
        return PlainTextResponse(NO_LIVE_RUN, status_code=404)
    if managed.live.subscribers >= MAX_SUBSCRIBERS:
        return PlainTextResponse(
            f"{MAX_SUBSCRIBERS} event streams of this run are open already: close some tabs",
            status_code=429,
        )
    return StreamingResponse(
        event_stream(managed),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


@router.post("/experiments/{rid}/{action}")
async def control(request: Request, dash: Dash, rid: str, action: str) -> Response:
    if action not in ("stop", "abort", "analyse"):
        return PlainTextResponse("unknown action", status_code=404)
    run = dash.resolve(rid)
    if run is None:
        return dash.not_found(request, f"No experiment {rid!r} in the results store.")
    if action == "analyse":
        managed = dash.manager.get(rid)
        if managed is not None and not managed.live.final:
            return PlainTextResponse("the run is still going", status_code=409)
        try:
            await asyncio.to_thread(analyse, run.path, dash.root)
        except GridbenchError as exc:
            return dash.error(request, 422, "Analysis failed", str(exc))
    else:
        ok = dash.manager.stop(rid) if action == "stop" else dash.manager.abort(rid)
        if not ok:
            return PlainTextResponse(NO_LIVE_RUN, 409)
    if request.headers.get("accept", "").startswith("application/json"):
        return JSONResponse({"ok": True})
    return RedirectResponse(f"/experiments/{rid}", status_code=303)
