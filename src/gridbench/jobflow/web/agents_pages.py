"""``/agents``: saved presets that name agents, and their connectivity check (bounded
like the new-experiment page's check, sharing its slots)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from gridbench.errors import GridbenchError
from gridbench.family.dashboard import error_dict, form_doc
from gridbench.jobflow.experiment.agent_check import STEP_NAMES, check_agents
from gridbench.jobflow.web import agents_page
from gridbench.jobflow.web.new_run import checks_busy
from gridbench.jobflow.web.pages import Web


def agents_view(request: Request, dash: Web, status: int = 200, **extra: Any) -> HTMLResponse:
    """The agents page, with a check's result or error."""
    ctx: dict[str, Any] = {"error": None, "result": None, **extra}
    pres = agents_page.agent_presets(dash.root)
    return dash.render(request, "agents.html", status, presets=pres, step_names=STEP_NAMES, **ctx)


def make_router(dash: Web) -> APIRouter:
    """The routes of this module, built on the dashboard's context."""
    router = APIRouter()

    @router.get("/agents", response_class=HTMLResponse)
    def agents(request: Request) -> HTMLResponse:
        return agents_view(request, dash)

    @router.post("/agents", openapi_extra=form_doc("name", "csrf", required=["name"]))
    async def agents_check(request: Request) -> HTMLResponse:
        """Test the connectivity of a saved preset's agents (bounded as the other checks)."""
        form = await request.form()
        name = form.get("name")
        name = name if isinstance(name, str) else ""
        try:
            spec = await asyncio.to_thread(agents_page.preset_spec, dash.root, name)
        except GridbenchError as exc:
            return await asyncio.to_thread(agents_view, request, dash, 422, error=error_dict(exc))
        if dash.checks().locked():
            return await asyncio.to_thread(agents_view, request, dash, 429, error=checks_busy(dash))
        t0 = time.perf_counter()
        async with dash.checks():
            try:
                rows = await check_agents(spec, job_timeout_s=agents_page.CHECK_JOB_TIMEOUT_S)
            except GridbenchError as exc:
                return await asyncio.to_thread(
                    agents_view, request, dash, 422, error=error_dict(exc)
                )
        block = spec.load.remote_agents
        result = {
            "name": name,
            "where": agents_page.where(block.model_dump() if block is not None else {}),
            "seconds": round(time.perf_counter() - t0, 1),
            "ok": bool(rows) and all(r.ok for r in rows),
            "rows": agents_page.rows_view(rows),
        }
        return await asyncio.to_thread(agents_view, request, dash, result=result)

    return router
