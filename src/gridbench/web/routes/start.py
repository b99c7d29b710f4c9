"""``/start``: a run of any family that can start from a spec (``StartsFromSpec`` in
gridbench.family), from its YAML; job flow has its own page (/new)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gridbench.errors import GridbenchError, SpecError
from gridbench.family import StartsFromSpec, families
from gridbench.specload import MAX_SPEC_BYTES
from gridbench.web.bodies import error_dict, form_doc
from gridbench.web.dashboard import Dash, Dashboard
from gridbench.web.manager import QueueFull
from gridbench.web.terms import error_in_dashboard_terms

log = logging.getLogger(__name__)
router = APIRouter()


def check_size(text: str) -> None:
    """SpecError when the text is over the spec size limit."""
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        raise SpecError("the spec is larger than 1 MiB", where="spec", fix="a spec is short")


def startable() -> dict[str, StartsFromSpec]:
    """The families whose runs start from a spec, by name."""
    return {f.name: f for f in families() if isinstance(f, StartsFromSpec)}


def start_page(request: Request, dash: Dashboard, status: int = 200, **extra: Any) -> HTMLResponse:
    """The page, with the chosen family, the text and an error when given."""
    choices = [(f.name, f.title) for f in families() if f.name in startable()]
    ctx: dict[str, Any] = {"kind": "", "yaml_text": "", "error": None, **extra}
    return dash.render(request, "start.html", status, families=choices, **ctx)


@router.get("/start", response_class=HTMLResponse)
def start_form(request: Request, dash: Dash, kind: str = "") -> HTMLResponse:
    return start_page(request, dash, kind=kind)


@router.post("/start", openapi_extra=form_doc("kind", "yaml", "csrf", required=["kind", "yaml"]))
async def start_submit(request: Request, dash: Dash) -> Response:
    form = await request.form()
    kind, text = form.get("kind"), form.get("yaml")
    kind = kind if isinstance(kind, str) else ""
    text = text if isinstance(text, str) else ""
    fam = startable().get(kind)
    if fam is None:
        error = {"message": f"no family {kind!r} starts from a spec here", "where": "kind"}
        return start_page(request, dash, 422, kind=kind, yaml_text=text, error=error)
    try:
        check_size(text)
        # validating reads the spec and may look for tools: a thread, not the loop
        runner = await asyncio.to_thread(fam.runner_for, text, dash.root)
        run = await dash.spec_runs.start(runner)
    except GridbenchError as exc:
        status = 429 if isinstance(exc, QueueFull) else 422
        error = error_in_dashboard_terms(error_dict(exc))  # no command-line fixes here
        return start_page(request, dash, status, kind=kind, yaml_text=text, error=error)
    except Exception as exc:  # a bug: the log has the traceback, the page does not
        log.exception("starting a %s run failed", kind)
        return dash.error(
            request,
            500,
            "The run could not start",
            f"an internal error ({type(exc).__name__}) stopped the run from starting; "
            "the server's log has the details",
        )
    return RedirectResponse(f"/experiments/{run.id}", status_code=303)
