"""The plugin's own dashboard page, through gridbench's ``WebPages`` seam: the dashboard
hands in its ``WebContext`` (the results root, template rendering, run lookup); login,
CSRF and the Host checks are the dashboard's and guard this page too."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from gridbench.family.dashboard import Pages, WebContext
from gridbench.store.catalogue import list_runs

KIND = "timeit"


def pages(web: WebContext) -> Pages:
    router = APIRouter()

    @router.get("/timeit", response_class=HTMLResponse)
    def timeit_page(request: Request) -> HTMLResponse:
        runs = [r for r in list_runs(web.root) if r.get("kind") == KIND]
        page: HTMLResponse = web.render(request, "timeit.html", runs=runs)
        return page

    return Pages(routers=(router,), templates="gridbench_timeit")
