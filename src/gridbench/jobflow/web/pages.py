""":class:`Web`, the dashboard's :class:`~gridbench.family.dashboard.WebContext` with typed
responses, as job flow's pages use it (they are assembled in :mod:`.seam`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse

from gridbench.family.dashboard import LiveRuns, WebContext


def _html(page: Any) -> HTMLResponse:
    assert isinstance(page, HTMLResponse), type(page)
    return page


class Web:
    """What job flow's pages use of the dashboard: its WebContext, responses typed."""

    def __init__(self, ctx: WebContext) -> None:
        self.ctx = ctx
        self.root: Path = ctx.root

    @property
    def runs(self) -> LiveRuns:
        """The dashboard's run manager."""
        return self.ctx.runs

    @property
    def max_checks(self) -> int:
        return self.ctx.max_checks

    def render(
        self, request: Request, template: str, status: int = 200, **ctx: Any
    ) -> HTMLResponse:
        """A template rendered by the dashboard (CSRF token and common context)."""
        return _html(self.ctx.render(request, template, status, **ctx))

    def error(self, request: Request, status: int, title: str, message: str) -> HTMLResponse:
        """The dashboard's error page."""
        return _html(self.ctx.error(request, status, title, message))

    def checks(self) -> asyncio.Semaphore:
        """The connectivity checks' slots (shared with the dashboard's other pages)."""
        return self.ctx.checks()

    async def json_body(self, request: Request) -> tuple[Any, JSONResponse | None]:
        """The posted JSON, or the 422 response saying what is wrong with it."""
        body, bad = await self.ctx.json_body(request)
        assert bad is None or isinstance(bad, JSONResponse)
        return body, bad
