"""``/new``: a job-flow experiment from the form or its YAML, planned, checked, started;
and the form's round trips (``/api/spec/parse``, ``/api/spec/dump``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.datastructures import FormData, UploadFile

from gridbench.errors import GridbenchError
from gridbench.family.dashboard import STRING, QueueFull, body_doc, error_dict
from gridbench.jobflow.experiment.check import check
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.spec.plan import Plan, needs_confirmation
from gridbench.jobflow.web import presets as presets_mod
from gridbench.jobflow.web.literal_secrets import redact_text
from gridbench.jobflow.web.live import JobFlowRun
from gridbench.jobflow.web.pages import Web
from gridbench.jobflow.web.spec_form import fields as form_fields
from gridbench.jobflow.web.spec_text import (
    NEW_SPEC,
    parse_for_form,
    parse_spec,
    plan_view,
    spec_yaml,
)
from gridbench.specload import MAX_SPEC_BYTES

CHECK_JOB_TIMEOUT_S = 30.0

log = logging.getLogger(__name__)


def checks_busy(dash: Web) -> dict[str, str]:
    """The error of a check asked for while every slot is taken."""
    return {
        "message": f"{dash.max_checks} connectivity checks are running already",
        "fix": "wait a few seconds and check again",
    }


def new_page(
    request: Request, dash: Web, yaml_text: str, status: int = 200, **extra: Any
) -> HTMLResponse:
    """The new-experiment page showing ``yaml_text`` (secrets redacted)."""
    pres = presets_mod.all_presets(dash.root)
    return dash.render(
        request,
        "new.html",
        status,
        yaml_text=redact_text(yaml_text),
        sections=form_fields(),
        presets=pres,
        preset_data={p.key: p.data for p in pres},
        preset_agents={p.key: p.agents for p in pres if p.agents},
        running=dash.runs.running(),
        **{"error": None, "plan": None, "steps": None, "confirm_needed": False, **extra},
    )


async def posted_text(form: FormData) -> str | None:
    """The spec text of the form: the upload when there is one, else the YAML field;
    None when the upload is not UTF-8."""
    text = form.get("yaml")
    upload = form.get("upload")
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read(MAX_SPEC_BYTES + 1)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return text if isinstance(text, str) else ""


async def start(
    request: Request,
    dash: Web,
    text: str,
    planned: tuple[Plan, dict[str, Any]],
    confirmed: bool,
    ctx: dict[str, Any],
) -> Response:
    """Start the planned run (confirmed when it is large) and go to its page."""
    plan, data = planned
    if ctx["confirm_needed"] and not confirmed:
        error = {
            "message": f"the plan submits {plan.total_jobs} jobs, above "
            f"safety.confirm_above ({plan.spec.safety.confirm_above})",
            "where": "safety.confirm_above",
            "fix": "tick the confirmation box, or reduce the plan",
        }
        return await asyncio.to_thread(new_page, request, dash, text, 422, error=error, **ctx)
    try:
        run_id = dash.runs.start(lambda: JobFlowRun(plan, data, dash.root))
    except QueueFull as exc:
        return new_page(request, dash, text, 429, error=error_dict(exc), **ctx)
    except GridbenchError as exc:
        return new_page(request, dash, text, 422, error=error_dict(exc), **ctx)
    except Exception as exc:  # a bug: the log has the traceback, the page does not
        log.exception("starting %s failed", plan.spec.name)
        return dash.error(
            request,
            500,
            "The run could not start",
            f"an internal error ({type(exc).__name__}) stopped the run from "
            "starting; the server's log has the details",
        )
    return RedirectResponse(f"/experiments/{run_id}", status_code=303)


def make_router(dash: Web) -> APIRouter:
    """The routes of this module, built on the dashboard's context."""
    router = APIRouter()

    @router.get("/new", response_class=HTMLResponse)
    def new_form(request: Request, preset: str = "") -> HTMLResponse:
        text = NEW_SPEC
        if preset:
            chosen = {p.key: p for p in presets_mod.all_presets(dash.root)}.get(preset)
            if chosen is None:
                return new_page(request, dash, text, 404, error={"message": "unknown preset"})
            if chosen.kind == "example":
                text = str(chosen.data["yaml"])
            else:
                data = load_spec_text(NEW_SPEC, "new")[1]
                data["backend"] = chosen.data
                if chosen.agents:  # a saved preset's agents load the experiment too
                    data["load"]["agents"] = chosen.agents
                text = spec_yaml(data)
        return new_page(request, dash, text)

    @router.post("/new", response_class=HTMLResponse)
    async def new_submit(request: Request) -> Response:
        form = await request.form()
        action = str(form.get("action") or "plan")
        text = await posted_text(form)
        if text is None:
            field = form.get("yaml")
            shown = field if isinstance(field, str) else ""
            return new_page(request, dash, shown, 422, error={"message": "the file is not UTF-8"})
        # parsing and rendering run in threads: the loop times the live runs' submissions
        try:
            plan, data = await asyncio.to_thread(parse_spec, text)
        except GridbenchError as exc:
            return await asyncio.to_thread(
                new_page, request, dash, text, 422, error=error_dict(exc)
            )
        ctx: dict[str, Any] = {"plan": plan_view(plan), "confirm_needed": needs_confirmation(plan)}
        if action == "check":
            if dash.checks().locked():
                return await asyncio.to_thread(
                    new_page, request, dash, text, 429, error=checks_busy(dash), **ctx
                )
            async with dash.checks():
                steps = await check(plan.spec, job_timeout_s=CHECK_JOB_TIMEOUT_S)
            ctx["steps"] = [
                {"name": s.name, "ok": s.ok, "detail": s.detail, "fix": s.fix} for s in steps
            ]
        elif action == "start":
            return await start(request, dash, text, (plan, data), form.get("confirm") == "yes", ctx)
        return await asyncio.to_thread(new_page, request, dash, text, **ctx)

    @router.post(
        "/api/spec/parse", openapi_extra=body_doc("application/json", {"yaml": STRING}, ["yaml"])
    )
    async def api_parse(request: Request) -> JSONResponse:
        """YAML text to spec data (for the form), with the validation error if any: 422
        when the YAML itself cannot be read (no data), 200 when it reads but is invalid."""
        body, bad = await dash.json_body(request)
        if bad is not None:
            return bad
        text = str(body.get("yaml", "")) if isinstance(body, dict) else ""
        parsed = await asyncio.to_thread(parse_for_form, text)
        return JSONResponse(parsed, status_code=422 if parsed["data"] is None else 200)

    @router.post(
        "/api/spec/dump",
        openapi_extra=body_doc("application/json", {"data": {"type": "object"}}, ["data"]),
    )
    async def api_dump(request: Request) -> JSONResponse:
        """Spec data (from the form) to YAML text."""
        body, bad = await dash.json_body(request)
        if bad is not None:
            return bad
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            return JSONResponse({"error": "data must be an object"}, status_code=422)
        return JSONResponse({"yaml": await asyncio.to_thread(spec_yaml, data)})

    return router
