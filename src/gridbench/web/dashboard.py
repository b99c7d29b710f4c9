"""The dashboard's shared state, handed to every route as a typed dependency.

One :class:`Dashboard` per app, kept on ``app.state.dashboard``: the results root and
access policy, the run manager, the templates and the bounded connectivity checks. Routes
take it with ``dash: Dash`` instead of closing over ``create_app``'s locals, so each
concern lives in its own router module (web/routes/).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import BaseLoader, ChoiceLoader, Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from prometheus_client.registry import CollectorRegistry

from gridbench import __version__
from gridbench.report.html import json_for_script, offline_plotlyjs
from gridbench.states import state_tone, verdict_tone
from gridbench.store.layout import RunDir, json_safe
from gridbench.web.bodies import json_or_422
from gridbench.web.manager import RunManager
from gridbench.web.metrics import make_registry
from gridbench.web.runs import resolve_in_root
from gridbench.web.security import AccessPolicy, csrf_token
from gridbench.web.spec_runs import SpecRuns

MAX_CHECKS = 2  # connectivity checks at once (each may submit a job)


@dataclass
class WebConfig:
    """Everything the app needs from ``gridbench serve``."""

    root: Path
    policy: AccessPolicy = field(default_factory=AccessPolicy)
    max_running: int = 4
    max_queued: int = 16


def template_env(loader: ChoiceLoader) -> Environment:
    """The dashboard's Jinja environment, with its filters."""
    env = Environment(
        loader=loader,
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clock"] = lambda t: datetime.fromtimestamp(float(t), UTC).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    # one vocabulary (gridbench.states): a badge's colour follows its words
    env.filters["state_tone"] = state_tone
    env.filters["verdict_tone"] = verdict_tone
    env.filters["tojson_script"] = lambda v: Markup(
        json_for_script(json.dumps(json_safe(v), allow_nan=False, default=str))
    )
    return env


def plotly_bytes() -> tuple[bytes, str]:
    """plotly.js from the installed package, and the ETag it is served with."""
    body = offline_plotlyjs().encode("utf-8")
    return body, hashlib.sha256(body).hexdigest()[:16]


class Dashboard:
    """The state every page shares; it is also the :class:`gridbench.family.dashboard.WebContext`
    that a family's own pages receive (``root``, ``render``, ``resolve``, ``error``, the run
    manager as ``runs``, the checks' slots, ``json_body``)."""

    max_checks = MAX_CHECKS

    def __init__(self, cfg: WebConfig) -> None:
        self.cfg = cfg
        self.root = cfg.root
        self.policy = cfg.policy
        self.manager = RunManager(cfg.root, max_running=cfg.max_running, max_queued=cfg.max_queued)
        self.spec_runs = SpecRuns(cfg.root, cfg.max_running)
        self.registry: CollectorRegistry = make_registry(self.manager.live)
        # the dashboard's templates first: a family's templates add pages, never replace one
        self._loaders: list[BaseLoader] = [PackageLoader("gridbench.web", "templates")]
        self.env = template_env(ChoiceLoader(self._loaders))  # the loader keeps this list
        self.plotly_body, self.plotly_etag = plotly_bytes()
        self._checks: asyncio.Semaphore | None = None

    def checks(self) -> asyncio.Semaphore:
        """The connectivity checks' slots, shared by /new and /agents (created in the
        running loop, at first use)."""
        if self._checks is None:
            self._checks = asyncio.Semaphore(MAX_CHECKS)
        return self._checks

    @property
    def runs(self) -> RunManager:
        """The run manager (:class:`gridbench.family.dashboard.LiveRuns` to a family's pages)."""
        return self.manager

    async def json_body(self, request: Request) -> tuple[Any, JSONResponse | None]:
        """The posted JSON (bounded in depth), or the 422 response saying what is wrong."""
        return await json_or_422(request)

    def add_templates(self, package: str) -> None:
        """Look for templates in ``package``'s ``templates`` folder too (a family's pages)."""
        self._loaders.append(PackageLoader(package, "templates"))

    def render(
        self, request: Request, template: str, status: int = 200, **ctx: Any
    ) -> HTMLResponse:
        """A template rendered with the CSRF token and the context every page has."""
        body = self.env.get_template(template).render(
            csrf=csrf_token(request),
            version=__version__,
            plotly_url=f"/vendor/plotly.min.js?v={self.plotly_etag}",
            auth=self.policy.needs_token,
            **ctx,
        )
        return HTMLResponse(body, status_code=status)

    def resolve(self, rid: str) -> RunDir | None:
        """The run ``rid`` names in the results root (folder name or id), or None."""
        return resolve_in_root(self.root, rid)

    def not_found(self, request: Request, what: str) -> HTMLResponse:
        """The 404 page saying what was not found."""
        return self.render(request, "error.html", 404, title="Not found", message=what)

    def error(self, request: Request, status: int, title: str, message: str) -> HTMLResponse:
        """The error page."""
        return self.render(request, "error.html", status, title=title, message=message)


def get_dashboard(request: Request) -> Dashboard:
    """The app's :class:`Dashboard` (a FastAPI dependency)."""
    dash: Dashboard = request.app.state.dashboard
    return dash


Dash = Annotated[Dashboard, Depends(get_dashboard)]
