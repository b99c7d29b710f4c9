"""Login and logout (pages need them only when the server has a token), and plotly.js."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gridbench.web.bodies import form_doc
from gridbench.web.dashboard import Dash, Dashboard
from gridbench.web.security import AUTH_COOKIE, SESSION_MAX_AGE_S

router = APIRouter()


@router.get("/vendor/plotly.min.js")
def plotly_js(request: Request, dash: Dash) -> Response:
    headers = {"cache-control": "public, max-age=31536000, immutable", "etag": dash.plotly_etag}
    if request.headers.get("if-none-match") == dash.plotly_etag:
        return Response(status_code=304, headers=headers)
    return Response(dash.plotly_body, media_type="text/javascript", headers=headers)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, dash: Dash) -> HTMLResponse:
    return dash.render(request, "login.html", error=None)


@router.post("/login", openapi_extra=form_doc("token", "csrf", required=["token"]))
async def login(request: Request, dash: Dash) -> Response:
    form = await request.form()
    token = form.get("token")
    client = request.client.host if request.client else ""
    policy = dash.policy
    with policy.attempt(client) as allowed:
        if not allowed:  # parallel guesses would otherwise share one wait
            return busy_login(request, dash, client)
        # guessing is slowed down: each failure from an address doubles the next wait
        await asyncio.sleep(policy.login_delay(client))
        sid = policy.login(token if isinstance(token, str) else "", client)
    if sid is None:
        return dash.render(request, "login.html", 401, error="That token is not valid.")
    resp = RedirectResponse("/", status_code=303)
    resp.set_cookie(
        AUTH_COOKIE, sid, httponly=True, samesite="strict", path="/",
        max_age=SESSION_MAX_AGE_S, secure=request.url.scheme == "https",
    )  # fmt: skip
    return resp


def busy_login(request: Request, dash: Dashboard, client: str) -> HTMLResponse:
    """429: a login from the same address is still being checked."""
    wait = max(1, round(dash.policy.login_delay(client)))
    error = f"A login from this address is being checked; try again in {wait} s."
    resp = dash.render(request, "login.html", 429, error=error)
    resp.headers["retry-after"] = str(wait)
    return resp


@router.post("/logout")
def logout(request: Request, dash: Dash) -> Response:
    dash.policy.logout(request.cookies.get(AUTH_COOKIE))
    resp = RedirectResponse("/login" if dash.policy.needs_token else "/", status_code=303)
    resp.delete_cookie(AUTH_COOKIE, path="/")
    return resp
