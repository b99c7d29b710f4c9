"""``/presets``: the presets the new-experiment page offers; saved ones edited, tried
against sample output, deleted (the logic is in jobflow/web/presets.py)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gridbench.errors import GridbenchError, ResultsError
from gridbench.jobflow.backends.command import presets as command_presets
from gridbench.jobflow.web import presets as presets_mod
from gridbench.jobflow.web.literal_secrets import redact_text
from gridbench.jobflow.web.pages import Web
from gridbench.specload import dump_yaml

NEW_PRESET = "description: ''\nbackend:\n  type: command\n  options: {}\n"


def preset_page(
    request: Request, dash: Web, name: str, text: str, status: int = 200, **extra: Any
) -> HTMLResponse:
    """The editor of preset ``name`` showing ``text`` (secrets redacted)."""
    rows: list[dict[str, str]] = []
    with contextlib.suppress(GridbenchError):
        rows = presets_mod.template_rows(presets_mod.parse_preset(text, "preset")["backend"])
    ctx: dict[str, Any] = {"error": None, "tried": None, "op": "status", "sample": ""}
    ctx.update(extra)
    text = redact_text(text)
    return dash.render(request, "preset_edit.html", status, name=name, text=text, rows=rows, **ctx)


def preset_action(request: Request, dash: Web, form: dict[str, str]) -> Response:
    """Save, delete or try (a pattern on sample output) the posted preset."""
    name, text = form.get("name", ""), form.get("text", "")
    action = form.get("action")
    try:
        if action == "delete":
            presets_mod.delete_preset(dash.root, name)
        elif action == "try":
            op, sample = str(form.get("op") or "status"), str(form.get("sample") or "")
            backend = presets_mod.parse_preset(text, "preset")["backend"]
            try:
                tried = presets_mod.try_pattern(backend, op, sample)
            except GridbenchError as exc:
                return preset_page(
                    request, dash, name, text, 422, op=op, sample=sample, error=str(exc)
                )
            return preset_page(request, dash, name, text, op=op, sample=sample, tried=tried)
        else:
            presets_mod.save_preset(dash.root, name, text)
    except GridbenchError as exc:
        return preset_page(request, dash, name, text, 422, error=str(exc))
    return RedirectResponse("/presets", status_code=303)


def make_router(dash: Web) -> APIRouter:
    """The routes of this module, built on the dashboard's context."""
    router = APIRouter()

    @router.get("/presets", response_class=HTMLResponse)
    def presets_page(request: Request) -> HTMLResponse:
        shipped = [
            {"info": i, "yaml": dump_yaml(presets_mod.command_preset_options(i.name))}
            for i in command_presets.listing()
        ]
        return dash.render(
            request,
            "presets.html",
            presets=presets_mod.all_presets(dash.root),
            shipped=shipped,
            saved=presets_mod.saved_presets(dash.root),
        )

    @router.get("/presets/edit", response_class=HTMLResponse)
    def preset_edit(request: Request, name: str = "", copy: str = "") -> HTMLResponse:
        text = NEW_PRESET
        if copy:
            try:
                opts = presets_mod.command_preset_options(copy)
            except GridbenchError as exc:
                return dash.error(request, 404, "No preset", str(exc))
            text = dump_yaml(
                {"description": f"copy of {copy}", "backend": {"type": "command", "options": opts}}
            )
            name = name or f"my-{copy}"
        elif name:
            try:
                text = presets_mod.read_saved_preset(dash.root, name) or text
            except ResultsError as exc:
                return dash.error(request, 422, "Unreadable preset", str(exc))
        return preset_page(request, dash, name, text)

    @router.post("/presets/edit", response_class=HTMLResponse)
    async def preset_save(request: Request) -> Response:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        return await asyncio.to_thread(preset_action, request, dash, fields)

    return router
