"""The campaigns (docs/campaigns.md): the list, and one campaign's page with its
components × units and their verdicts, the incidents, links to each unit's run and to
the IEEE 829 documents; while it runs, its progress (the page reloads itself).

A campaign's page reads two small files (campaign.json and docs/summary.json), never its
units' runs: it stays fast for a campaign of hundreds of units."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gridbench.campaign.folder import (
    DOCS_DIR,
    RUNNING,
    SUMMARY_FILE,
    UNITS_DIR,
    CampaignDir,
    campaigns,
    find_campaign,
)
from gridbench.errors import GridbenchError
from gridbench.store.catalogue import is_run_name
from gridbench.store.layout import read_json
from gridbench.store.safe_open import CAPS, read_store_bytes
from gridbench.web.dashboard import Dash

router = APIRouter()

DOC_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,150}\.(html|md)$")
MEDIA = {".html": "text/html; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
#: seconds between reloads of a running campaign's page
RELOAD_S = 3


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _summary(c: CampaignDir) -> dict[str, Any] | None:
    try:
        data = read_json(c.docs / SUMMARY_FILE)
    except GridbenchError:
        return None
    return data if isinstance(data, dict) else None


def _alive(state: dict[str, Any]) -> bool:
    from gridbench.campaign.processes import alive

    runner = _dict(state.get("runner"))
    return alive(runner.get("pid"), runner.get("create_time"))


def _live_units(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The components and their units with each unit's outcome so far, from the state
    (what a campaign under way has: its summary comes at the end)."""
    records = _dict(state.get("units"))
    attempts = [a for a in state.get("attempts") or [] if isinstance(a, dict)]
    running = set(state.get("running") or [])
    out = []
    for comp in state.get("components") or []:
        if not isinstance(comp, dict):
            continue
        units = []
        for key in comp.get("units") or []:
            rec = _dict(records.get(key))
            mine = [a for a in attempts if a.get("unit") == key]
            runs = [
                {
                    "rep": a.get("rep"),
                    "attempt": a.get("name"),
                    "run": a.get("run"),
                    "outcome": "running" if a.get("name") in running else a.get("outcome"),
                }
                for a in mine
            ]
            outcomes = [r["outcome"] for r in runs]
            verdict = (
                "running"
                if "running" in outcomes
                else outcomes[-1]
                if outcomes and outcomes[-1]
                else "not run"
            )
            units.append(
                {
                    "key": key,
                    "id": str(key).split(".", 1)[-1],
                    "title": rec.get("title") or key,
                    "family": rec.get("family"),
                    "verdict": verdict,
                    "why": "",
                    "runs": runs,
                }
            )
        out.append({"id": comp.get("id"), "title": comp.get("title"), "units": units})
    return out


def campaign_context(c: CampaignDir) -> dict[str, Any]:
    """What the campaign's page shows."""
    state = c.read_state()
    status = str(state.get("status", ""))
    live = status == RUNNING and _alive(state)
    if status == RUNNING and not live:
        status = "stopped (killed): 'gridbench campaign run' resumes it"
    summary = None if live else _summary(c)
    components = _list(summary.get("components")) if summary else _live_units(state)
    docs = sorted(p.name for p in c.docs.glob("*.html")) if (c.docs).is_dir() else []
    order = ["index.html", "test-plan.html", "test-log.html", "incidents.html", "summary.html"]
    docs = [d for d in order if d in docs] + [d for d in docs if d not in order]
    return {
        "campaign": c.id,
        "name": state.get("name"),
        "description": state.get("description"),
        "state": status,  # ("status" is the page's HTTP status)
        "live": live,
        "reload": RELOAD_S,
        "progress": _dict(state.get("progress")),  # campaign.json is foreign input
        "running": [x for x in _list(state.get("running")) if isinstance(x, str)],
        "components": components,
        "incidents": (summary or {}).get("incidents") or [],
        "summary": summary,
        "docs": docs,
    }


@router.get("/campaigns", response_class=HTMLResponse)
def campaign_list(request: Request, dash: Dash) -> HTMLResponse:
    rows: list[dict[str, Any]] = []
    for c in reversed(campaigns(dash.root)):
        try:
            state = c.read_state()
        except GridbenchError as exc:
            rows.append({"id": c.id, "name": c.id, "status": f"unreadable: {exc.message}"})
            continue
        s = _summary(c) or {}
        status = str(state.get("status", ""))
        if status == RUNNING and not _alive(state):
            status = "stopped (killed)"
        rows.append(
            {
                "id": c.id,
                "name": state.get("name"),
                "status": status,
                "progress": _dict(state.get("progress")),
                "passed": _dict(s.get("counts")).get("passed"),
                "total": s.get("total"),
                "incidents": s.get("incident_count"),
            }
        )
    return dash.render(request, "campaigns.html", campaigns=rows)


@router.get("/campaigns/{cid}", response_class=HTMLResponse)
def campaign_page(request: Request, dash: Dash, cid: str) -> HTMLResponse:
    c = find_campaign(dash.root, cid) if is_run_name(cid) else None
    if c is None or c.path.parent.parent.resolve() != dash.root.resolve():
        return dash.not_found(request, f"No campaign {cid!r} in the results store.")
    try:
        ctx = campaign_context(c)
    except GridbenchError as exc:
        return dash.error(request, 422, "Unreadable campaign", f"unreadable: {exc}")
    return dash.render(request, "campaign.html", **ctx)


@router.get("/campaigns/{cid}/docs/{name}")
def campaign_doc(request: Request, dash: Dash, cid: str, name: str) -> Response:
    c = find_campaign(dash.root, cid) if is_run_name(cid) else None
    if (
        c is None
        or not DOC_NAME.match(name)
        or c.path.parent.parent.resolve() != dash.root.resolve()
    ):
        return dash.not_found(request, f"No document {name!r} of campaign {cid!r}.")
    try:
        body = read_store_bytes(c.path / DOCS_DIR / name, cap=CAPS["json"], base=c.path)
    except FileNotFoundError:
        return dash.not_found(request, f"No document {name!r} of campaign {cid!r}.")
    except GridbenchError as exc:
        return dash.error(request, 422, "Unreadable document", str(exc))
    return Response(body, media_type=MEDIA["." + name.rsplit(".", 1)[1]])


@router.get("/campaigns/{cid}/runs/{name}/{rest:path}")
def campaign_run(request: Request, dash: Dash, cid: str, name: str, rest: str) -> Response:
    """A document's link to a unit's run (``../runs/<attempt>/report.html``): that run's
    page, found by the campaign's log (its link is not followed)."""
    from fastapi.responses import RedirectResponse

    from gridbench.campaign.folder import replay

    c = find_campaign(dash.root, cid) if is_run_name(cid) else None
    if c is None or c.path.parent.parent.resolve() != dash.root.resolve():
        return dash.not_found(request, f"No campaign {cid!r} in the results store.")
    try:
        attempt = next((a for a in replay(c.events()).attempts if a.name == name), None)
    except GridbenchError as exc:
        return dash.error(request, 422, "Unreadable campaign", str(exc))
    if attempt is None or not attempt.run or not is_run_name(attempt.run):
        return dash.not_found(request, f"No run of {name!r} in campaign {cid!r}.")
    return RedirectResponse(f"/experiments/{quote(attempt.run)}", status_code=303)


@router.get("/campaigns/{cid}/units/{name}")
def campaign_unit_log(request: Request, dash: Dash, cid: str, name: str) -> Response:
    """What a unit's command printed (a document's ``../units/<attempt>.log`` link)."""
    c = find_campaign(dash.root, cid) if is_run_name(cid) else None
    ok = c is not None and re.match(r"^[A-Za-z0-9._-]{1,200}\.log$", name) is not None
    if c is None or not ok or c.path.parent.parent.resolve() != dash.root.resolve():
        return dash.not_found(request, f"No log {name!r} of campaign {cid!r}.")
    try:
        body = read_store_bytes(c.path / UNITS_DIR / name, cap=CAPS["records"], base=c.path)
    except FileNotFoundError:
        return dash.not_found(request, f"No log {name!r} of campaign {cid!r}.")
    except GridbenchError as exc:
        return dash.error(request, 422, "Unreadable log", str(exc))
    return Response(body, media_type="text/plain; charset=utf-8")
