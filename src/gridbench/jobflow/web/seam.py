"""Job flow's pages as the family seam returns them (:func:`web_pages`, called by
``JobFlow.web_pages``): each page module's router, built on :class:`.pages.Web`."""

from __future__ import annotations

from gridbench.family.dashboard import Pages, WebContext
from gridbench.jobflow.web import agents_pages, new_run, presets_pages
from gridbench.jobflow.web.pages import Web


def web_pages(ctx: WebContext) -> Pages:
    """``/new`` with its form's round trips, ``/presets``, ``/agents``: job flow's routers,
    built on the dashboard's context, and their templates (this package's ``templates/``)."""
    web = Web(ctx)
    routers = (
        new_run.make_router(web),
        presets_pages.make_router(web),
        agents_pages.make_router(web),
    )
    # scripts and templates: this package's static/ (served at /static/jobflow/) and templates/
    return Pages(routers=routers, templates="gridbench.jobflow.web", static="gridbench.jobflow.web")
