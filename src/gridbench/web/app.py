"""The dashboard's FastAPI application: it builds the app, its shared state and includes
the routers of each concern (web/routes/) and of each family with pages of its own
(:class:`~gridbench.family.dashboard.WebPages`: job flow's /new, presets and agents, the study's).

The same results store and runners as the CLI: pages read RUN directories through the
store, runs a family's pages start go through the family's runner on the run manager,
reports through the HTML report's builders. Heavy page work runs in the thread pool (sync
endpoints) so that the event loop, shared with live runs, stays free for their timing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.formparsers import MultiPartException

from gridbench import __version__
from gridbench.family import families
from gridbench.family.dashboard import WebPages
from gridbench.listing import catalogue
from gridbench.web.compare_view import warm_samples
from gridbench.web.dashboard import Dashboard, WebConfig
from gridbench.web.results import warm
from gridbench.web.routes import (
    auth,
    campaigns,
    compare,
    experiments,
    metrics,
    run_control,
    start,
)
from gridbench.web.security import BodyLimit, HeadAsGet, bad_form, make_middleware

__all__ = ["WebConfig", "create_app"]

#: the dashboard's own pages, for runs of every family (analyse is any family's; stop,
#: abort and the event stream are the run manager's, whatever started the run); a
#: family's own pages come through :class:`~gridbench.family.dashboard.WebPages`
ROUTERS = (auth, experiments, run_control, start, compare, metrics, campaigns)
WARM_RECENT = 20
WARM_SAMPLES = 5


def create_app(cfg: WebConfig) -> FastAPI:
    """The dashboard application for one results root."""
    dash = Dashboard(cfg)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warming = asyncio.create_task(asyncio.to_thread(warm_recent, cfg.root))
        yield
        warming.cancel()
        await dash.manager.shutdown()  # like Ctrl-C for every run this server started

    app = FastAPI(
        title="gridbench",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.dashboard = dash
    # a form an endpoint cannot read (its CSRF token came in a header) is 400, not 500
    app.add_exception_handler(MultiPartException, lambda _r, exc: bad_form(exc))
    app.middleware("http")(make_middleware(cfg.policy))
    app.add_middleware(BodyLimit)  # caps bodies before anything reads them
    app.add_middleware(HeadAsGet)  # outermost: HEAD is GET without the body
    for fam in families():  # a family's own pages (job flow's, the study's) come first
        if isinstance(fam, WebPages):
            pages = fam.web_pages(dash)
            if pages.templates is not None:
                dash.add_templates(pages.templates)
            if pages.static is not None:  # mounted before /static, which would take it
                static = StaticFiles(packages=[(pages.static, "static")])
                app.mount(f"/static/{fam.name}", static, name=f"static-{fam.name}")
            for router in pages.routers:
                app.include_router(router)
    app.mount("/static", StaticFiles(packages=[("gridbench.web", "static")]), name="static")
    for module in ROUTERS:
        app.include_router(module.router)
    return app


def warm_recent(root: Path) -> None:
    """Build the results views of the newest analysed runs, then read their per-job
    samples for comparisons, so that first views are fast."""
    recent = [Path(str(e["path"])) for e in catalogue(root)[:WARM_RECENT]]
    analysed = [p for p in recent if (p / "metrics.json").is_file()]
    for path in analysed:
        with contextlib.suppress(Exception):  # a broken run shows its error when opened
            warm(path, root)
    warm_samples(root, [str(p) for p in analysed[:WARM_SAMPLES]])
