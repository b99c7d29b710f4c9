"""The study's pages in the dashboard: the participant's session, the admin page and the
observer page (docs/study.md). The dashboard includes them through the family's
:class:`~gridbench.family.dashboard.WebPages` seam (``Study.web_pages``), handing in the
:class:`~gridbench.family.dashboard.WebContext` that renders templates and finds runs: nothing here
imports the web layer.

The participant pages (``/p/<run>/<secret>``) need no admin token: the secret in the URL
is the participant's personal link, and it reaches that participant's session only. They
link to nothing else. Every answer goes to :class:`~gridbench.study.delivery.StudyDelivery`,
which checks it and appends it to the run's log (fsynced) before this module redirects:
post/redirect/get, so a reload never posts again, and a replayed post is a
:class:`~gridbench.study.answers.StepConflict` that changes nothing. The admin and
observer pages (``/studies/<run>``) are behind the token like every dashboard page.

No study logic lives here beyond turning a form into a call on the delivery engine.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gridbench.errors import GridbenchError
from gridbench.family.dashboard import Pages, WebContext
from gridbench.store.catalogue import is_run_name
from gridbench.store.layout import EXPERIMENT_FILE, RunDir
from gridbench.study.answers import AnswerError, StepConflict
from gridbench.study.delivery import StudyDelivery
from gridbench.study.model import StudySpec
from gridbench.study.steps import SessionView
from gridbench.study.web_views import (
    admin_context,
    answers_of,
    error_of,
    observer_context,
    parse_observation,
    step_context,
)

log = logging.getLogger(__name__)

NOT_VALID = "This link is not valid (it may have been replaced)."


class Studies:
    """The study runs this server delivers: one :class:`StudyDelivery` per run, opened on
    first use and kept (it holds the run's log in memory and serialises its appends, so
    there must be one per run and process). The log on disk is the truth: a restarted
    server opens it again and every session resumes where it was."""

    def __init__(self, web: WebContext) -> None:
        self.root = web.root
        self._resolve = web.resolve
        self._open: dict[Path, StudyDelivery] = {}
        self._runs: dict[str, RunDir] = {}  # rid -> a study run found before
        self._lock = threading.Lock()

    def run(self, rid: str) -> RunDir | None:
        """The study run ``rid`` (folder name or id, resolved as the CLI does), or None
        when there is none or it is another family's."""
        known = self._runs.get(rid)
        if known is not None and known.experiment_file.is_file():
            return known  # (a participant's every page: no scan of the root, no JSON read)
        run = self._resolve(rid)
        if run is None:
            return None
        try:
            kind = run.read_experiment().get("kind")
        except GridbenchError:
            return None
        if kind != "study":
            return None
        with self._lock:
            self._runs[rid] = run
        return run

    def delivery(self, run: RunDir) -> StudyDelivery:
        """The run's delivery engine (GridbenchError when its spec or log is unreadable)."""
        key = run.path.resolve()
        with self._lock:  # two first requests at once must not open two engines
            found = self._open.get(key)
            if found is None:
                found = self._open[key] = StudyDelivery.open(run.path)
            return found

    def participant(self, rid: str, secret: str) -> tuple[StudyDelivery, str] | None:
        """The engine and participant a personal link reaches, or None (no such run, not
        a study, a forged or revoked secret: all the same to the caller). A link names its
        run by folder name, so nothing else is looked for: a made-up name must not make
        this public page read every run's experiment.json (the id and prefix search)."""
        if len(secret) > 200 or not is_run_folder(self.root, rid):
            return None
        run = self.run(rid)
        if run is None:
            return None
        try:
            delivery = self.delivery(run)
            who = delivery.participant_for(secret)  # re-reads a log another process wrote
        except GridbenchError as exc:
            log.warning("study %s cannot be delivered: %s", rid, exc)
            return None
        return None if who is None else (delivery, who)


def is_run_folder(root: Path, rid: str) -> bool:
    """Whether ``rid`` is the name of a run folder right under ``root`` (one stat; the
    name is checked again, links and all, when the run is resolved)."""
    if not is_run_name(rid):  # (a name over 255 bytes must not reach the file system)
        return False
    try:
        return (root / rid / EXPERIMENT_FILE).is_file()
    except OSError:
        return False


# -- routes ------------------------------------------------------------------------------------
def pages(web: WebContext) -> Pages:
    """The study's routers and templates (``Study.web_pages``)."""
    return StudyPages(web).pages()


class StudyPages:
    """The participant, admin and observer pages of every study run in ``web.root``; each
    handler is a method, so the routes share the :class:`Studies` of this dashboard."""

    def __init__(self, web: WebContext) -> None:
        self.web = web
        self.studies = Studies(web)

    def pages(self) -> Pages:
        """The routers (participants' first, the catch-all under /p/ last) and templates."""
        r = APIRouter()
        html = (
            ("/p/{rid}/{secret}", self.participant_page, "GET"),
            ("/p/{rid}/{secret}", self.participant_answer, "POST"),
            ("/studies/{rid}", self.study_admin, "GET"),
            ("/studies/{rid}/links/{participant}", self.study_link, "POST"),
            ("/studies/{rid}/observer", self.study_observer, "GET"),
            ("/studies/{rid}/observer", self.study_observe, "POST"),
        )
        for path, endpoint, method in html:
            r.add_api_route(path, endpoint, methods=[method], response_class=HTMLResponse)
        # after /p/{rid}/{secret}: any other path under /p/ answers as a forged link does
        r.add_api_route(
            "/p/{rest:path}", self.participant_other, methods=["GET", "POST"],
            include_in_schema=False,
        )  # fmt: skip
        return Pages(routers=(r,), templates="gridbench.study", static="gridbench.study")

    def page(self, request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        response: HTMLResponse = self.web.render(request, template, status, **ctx)
        return response

    # -- the participant's session (no token: the secret in the link is the key) -----------
    def invalid(self, request: Request) -> HTMLResponse:
        return self.page(request, "study_invalid.html", 404, message=NOT_VALID)

    def show_step(
        self,
        request: Request,
        spec: StudySpec,
        view: SessionView,
        status: int = 200,
        error: dict[str, str] | None = None,
        values: dict[str, str] | None = None,
    ) -> HTMLResponse:
        ctx = step_context(spec, view)
        return self.page(
            request,
            f"study_{view.step.kind}.html",
            status,
            here=request.url.path,
            error=error,
            values=values or {},
            **ctx,
        )

    def unsaved(self, request: Request, exc: GridbenchError) -> HTMLResponse:
        # the log could not be read or written: say so, keep the link (nothing was lost)
        log.error("study answer not saved: %s", exc)
        msg = "Your answer could not be saved just now. Please try again in a minute."
        return self.page(request, "study_invalid.html", 503, message=msg)

    async def participant_page(self, request: Request, rid: str, secret: str) -> Response:
        def render() -> HTMLResponse:
            found = self.studies.participant(rid, secret)
            if found is None:
                return self.invalid(request)
            delivery, who = found
            try:
                view = delivery.view(who)  # the first visit starts the session: a write
            except GridbenchError as exc:
                return self.unsaved(request, exc)
            return self.show_step(request, delivery.spec, view)

        # one hop to the thread pool: the loop stays free for live runs and 40 participants
        return await asyncio.to_thread(render)

    async def participant_answer(self, request: Request, rid: str, secret: str) -> Response:
        form = await request.form()
        step, action = str(form.get("step") or ""), str(form.get("action") or "")
        fields = answers_of(form)

        def answer() -> Response:
            found = self.studies.participant(rid, secret)
            if found is None:
                return self.invalid(request)
            delivery, who = found
            try:
                # the engine appends (fsync) before it returns: acknowledged means on disk
                delivery.act(who, step, action, fields)
            except StepConflict:
                pass  # a replay, a second tab, a double click: show the current step
            except AnswerError as exc:
                view = delivery.view(who)
                if view.step.id == step:
                    return self.show_step(request, delivery.spec, view, 422, error_of(exc), fields)
            except GridbenchError as exc:
                return self.unsaved(request, exc)
            return RedirectResponse(request.url.path, status_code=303)

        return await asyncio.to_thread(answer)

    def participant_other(self, request: Request, rest: str) -> HTMLResponse:
        """Any other path under /p/: the same answer as a forged link."""
        return self.invalid(request)

    # -- the admin page (behind the token, like every dashboard page) ------------------------
    def admin_page(
        self, request: Request, rid: str, run: RunDir, status: int = 200, **extra: Any
    ) -> HTMLResponse:
        try:
            ctx = admin_context(run, self.studies.delivery(run))
        except GridbenchError as exc:
            return self.unreadable(request, exc)
        extra = {"new_link": None, "error": None, **extra}
        return self.page(request, "study_admin.html", status, rid=rid, **extra, **ctx)

    def unreadable(self, request: Request, exc: GridbenchError) -> HTMLResponse:
        return self.page(request, "error.html", 422, title="Unreadable study", message=str(exc))

    def unknown(self, request: Request, rid: str) -> HTMLResponse:
        message = f"No study {rid!r} in the results store."
        return self.page(request, "error.html", 404, title="Not found", message=message)

    def study_admin(self, request: Request, rid: str) -> HTMLResponse:
        run = self.studies.run(rid)
        return self.unknown(request, rid) if run is None else self.admin_page(request, rid, run)

    async def study_link(self, request: Request, rid: str, participant: str) -> Response:
        run = await asyncio.to_thread(self.studies.run, rid)
        if run is None:
            return self.unknown(request, rid)
        action = (await request.form()).get("action")

        def change() -> Response:
            try:
                delivery = self.studies.delivery(run)  # unreadable log: the 422, not a 500
                if action == "issue":
                    secret = delivery.issue_link(participant, "admin")
                    url = f"{str(request.base_url).rstrip('/')}/p/{run.id}/{secret}"
                    # shown once, on this answer only: the log keeps the hash alone
                    link = {"participant": participant, "url": url}
                    return self.admin_page(request, rid, run, new_link=link)
                if action == "revoke":
                    delivery.revoke_link(participant)
                    return RedirectResponse(f"/studies/{rid}", status_code=303)
                raise GridbenchError(
                    f"unknown action {action!r}", where="action", fix="issue or revoke"
                )
            except GridbenchError as exc:
                return self.admin_page(request, rid, run, 422, error=str(exc))

        return await asyncio.to_thread(change)

    # -- the observer page ----------------------------------------------------------------
    def observer_page(
        self, request: Request, rid: str, run: RunDir, only: str, status: int = 200, **extra: Any
    ) -> HTMLResponse:
        try:
            ctx = observer_context(self.studies.delivery(run), only)
        except GridbenchError as exc:
            return self.unreadable(request, exc)
        extra = {"error": None, **extra}
        return self.page(request, "study_observer.html", status, rid=rid, **extra, **ctx)

    def study_observer(self, request: Request, rid: str, participant: str = "") -> HTMLResponse:
        run = self.studies.run(rid)
        if run is None:
            return self.unknown(request, rid)
        return self.observer_page(request, rid, run, participant)

    async def study_observe(self, request: Request, rid: str) -> Response:
        run = await asyncio.to_thread(self.studies.run, rid)
        if run is None:
            return self.unknown(request, rid)
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        who, only = form.get("participant", ""), form.get("only", "")

        def record() -> Response:
            studies = self.studies
            try:
                success, failure, note = parse_observation(form)
                studies.delivery(run).observe(
                    who, form.get("tool", ""), form.get("task", ""), success, failure, note
                )
            except GridbenchError as exc:
                return self.observer_page(request, rid, run, only, 422, error=error_of(exc))
            back = f"?participant={only}" if only in studies.delivery(run).spec.participants else ""
            return RedirectResponse(f"/studies/{rid}/observer{back}#p-{who}", status_code=303)

        return await asyncio.to_thread(record)
