"""The study's pages in the dashboard: the participant's session, the admin page and the
observer page (docs/study.md).

The participant pages (``/p/<run>/<secret>``) need no admin token: the secret in the URL
is the participant's personal link, and it reaches that participant's session only. They
link to nothing else. Every answer goes to :class:`~gridbench.study.delivery.StudyDelivery`,
which checks it and appends it to the run's log (fsynced) before this module redirects:
post/redirect/get, so a reload never posts again, and a replayed post is a
:class:`~gridbench.study.delivery.StepConflict` that changes nothing. The admin and
observer pages (``/studies/<run>``) are behind the token like every dashboard page.

No study logic lives here beyond turning a form into a call on the delivery engine.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gridbench.errors import GridbenchError
from gridbench.store.layout import RunDir
from gridbench.study.delivery import AnswerError, StepConflict, StudyDelivery
from gridbench.study.model import StudySpec, Task, Tool
from gridbench.study.records import BackgroundAnswers, FreeText, now_ns, read_log
from gridbench.study.steps import SessionView, Step
from gridbench.web.runs import resolve_in_root

log = logging.getLogger(__name__)

NOT_VALID = "This link is not valid (it may have been replaced)."
#: The form fields that are not answers.
CONTROL_FIELDS = ("csrf", "step", "action")

#: The System Usability Scale, as published (Brooke 1996), item 1 first.
SUS_STATEMENTS = (
    "I think that I would like to use this system frequently.",
    "I found the system unnecessarily complex.",
    "I thought the system was easy to use.",
    "I think that I would need the support of a technical person to be able to use this system.",
    "I found the various functions in this system were well integrated.",
    "I thought there was too much inconsistency in this system.",
    "I would imagine that most people would learn to use this system very quickly.",
    "I found the system very cumbersome to use.",
    "I felt very confident using the system.",
    "I needed to learn a lot of things before I could get going with this system.",
)
AGREEMENT = ("Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree")
#: The per-task Likert items (records.LikertAnswer: 5 = most difficult / most satisfied).
LIKERT_ITEMS = (
    (
        "difficulty",
        "How difficult was this task?",
        ("Very easy", "Easy", "Neither easy nor difficult", "Difficult", "Very difficult"),
    ),
    (
        "satisfaction",
        "How satisfied are you with how you did it with this tool?",
        ("Very dissatisfied", "Dissatisfied", "Neutral", "Satisfied", "Very satisfied"),
    ),
)
FAILURE_LABELS = (
    "Succeeded unaided",
    "Minor problems",
    "Needed some help",
    "Needed a lot of help",
    "Failed",
)


class PageFn(Protocol):
    """app.py's ``page``: a template rendered with the CSRF token and the common context."""

    def __call__(
        self, request: Request, template: str, status: int = 200, **ctx: Any
    ) -> HTMLResponse: ...


class Studies:
    """The study runs this server delivers: one :class:`StudyDelivery` per run, opened on
    first use and kept (it holds the run's log in memory and serialises its appends, so
    there must be one per run and process). The log on disk is the truth: a restarted
    server opens it again and every session resumes where it was."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: dict[Path, StudyDelivery] = {}
        self._runs: dict[str, RunDir] = {}  # rid -> a study run found before
        self._lock = threading.Lock()

    def run(self, rid: str) -> RunDir | None:
        """The study run ``rid`` (folder name or id, resolved as the CLI does), or None
        when there is none or it is another family's."""
        known = self._runs.get(rid)
        if known is not None and known.experiment_file.is_file():
            return known  # (a participant's every page: no scan of the root, no JSON read)
        run = resolve_in_root(self.root, rid)
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
        a study, a forged or revoked secret: all the same to the caller)."""
        if len(secret) > 200:
            return None
        run = self.run(rid)
        if run is None:
            return None
        try:
            delivery = self.delivery(run)
        except GridbenchError as exc:
            log.warning("study %s cannot be delivered: %s", rid, exc)
            return None
        who = delivery.participant_for(secret)
        return None if who is None else (delivery, who)


# -- what a step shows -------------------------------------------------------------------------
def _task(spec: StudySpec, step: Step) -> tuple[Tool | None, Task | None]:
    tool = spec.tool(step.tool) if step.tool else None
    task = next((t for t in tool.tasks if t.id == step.task), None) if tool else None
    return tool, task


def step_label(spec: StudySpec, step: Step | None) -> str:
    """One line saying where a participant is (admin and observer pages)."""
    if step is None:
        return "not started"
    tool, task = _task(spec, step)
    names = {
        "purpose": "reading the purpose",
        "background": "background questions",
        "free_text": "final comments",
        "done": "finished",
    }
    if step.kind in names:
        return names[step.kind]
    what = f"{tool.title if tool else step.tool}"
    if task is not None:
        what += f" / {task.title}"
    return {"task": "task", "likert": "rating", "sus": "SUS"}[step.kind] + f": {what}"


def _clock(t_ns: int) -> str:
    return datetime.fromtimestamp(t_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _hms(ms: float) -> str:
    s = int(ms // 1000)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def step_context(spec: StudySpec, view: SessionView) -> dict[str, Any]:
    """What the step's template needs (pure apart from the clock for the elapsed time)."""
    step = view.step
    tool, task = _task(spec, step)
    tasks = [s for s in view.steps if s.kind == "task"]
    ctx: dict[str, Any] = {
        "step": step,
        "study": spec.name,
        "number": view.index + 1,
        "total": view.total,
        "tool": tool,
        "task": task,
        "task_no": next(
            (i for i, s in enumerate(tasks, 1) if s.task == step.task and s.tool == step.tool), 0
        ),
        "tasks_total": len(tasks),
    }
    if step.kind == "purpose":
        ctx["purpose"] = spec.purpose
    elif step.kind in ("background", "free_text"):
        q = spec.questionnaires
        ctx["questions"] = q.background if step.kind == "background" else q.free_text
    elif step.kind == "task" and view.task_started_ns is not None:
        elapsed_ms = max(0.0, (now_ns() - view.task_started_ns) / 1e6)
        ctx.update(
            started_ns=view.task_started_ns,
            started_text=_clock(view.task_started_ns),
            elapsed_ms=round(elapsed_ms),
            elapsed_text=_hms(elapsed_ms),
        )
    elif step.kind == "likert":
        ctx["items"] = LIKERT_ITEMS
    elif step.kind == "sus":
        ctx["statements"] = SUS_STATEMENTS
        ctx["agreement"] = AGREEMENT
    return ctx


def _answers(form: Any) -> dict[str, str]:
    return {k: v for k, v in form.items() if isinstance(v, str) and k not in CONTROL_FIELDS}


def _error(exc: GridbenchError) -> dict[str, str]:
    return {"field": exc.where or "", "message": exc.message, "fix": exc.fix or ""}


# -- admin and observer data -----------------------------------------------------------------
def admin_context(run: RunDir, delivery: StudyDelivery) -> dict[str, Any]:
    """Participants and their progress, and the answers given in words (shown escaped)."""
    spec = delivery.spec
    rows = [{"p": p, "label": step_label(spec, p.step)} for p in delivery.overview()]
    free: list[tuple[str, str, str]] = []
    background: list[tuple[str, str, str]] = []
    texts = {
        q.id: q.text for q in (*spec.questionnaires.free_text, *spec.questionnaires.background)
    }
    for rec in read_log(run.path):
        if isinstance(rec, FreeText):
            free += [(rec.participant, texts.get(k, k), v) for k, v in rec.answers.items() if v]
        elif isinstance(rec, BackgroundAnswers):
            background += [
                (rec.participant, texts.get(k, k), "" if v is None else str(v))
                for k, v in rec.answers.items()
            ]
    return {"spec": spec, "rows": rows, "free_text": free, "background": background}


def observer_context(delivery: StudyDelivery, only: str = "") -> dict[str, Any]:
    """Per participant: where they are, and each task with the latest verdict (``only``:
    that participant's forms alone, for an observer sitting beside one person)."""
    spec = delivery.spec
    people = []
    overview = delivery.overview()
    index = [{"p": p, "label": step_label(spec, p.step)} for p in overview]
    only = only if only in spec.participants else ""
    for p in overview:
        if only and p.participant != only:
            continue
        current = p.step if p.step is not None and p.step.kind in ("task", "likert") else None
        tasks = []
        for tool in spec.tools:
            for task in tool.tasks:
                seen = p.observations.get((tool.id, task.id))
                tasks.append(
                    {
                        "tool": tool,
                        "task": task,
                        "current": current is not None
                        and (current.tool, current.task) == (tool.id, task.id),
                        "seen": seen,
                    }
                )
        people.append(
            {
                "p": p,
                "label": step_label(spec, p.step),
                "open": p.started,
                "tasks": tasks,
            }
        )
    return {
        "spec": spec,
        "index": index,
        "only": only,
        "tasks_total": sum(len(t.tasks) for t in spec.tools),
        "people": people,
        "failure_scale": spec.questionnaires.failure_scale,
        "failure_labels": FAILURE_LABELS,
    }


def parse_observation(form: dict[str, str]) -> tuple[bool, int | None, str]:
    """success, failure and note from the observer's form; AnswerError naming the field."""
    success = form.get("success", "")
    if success not in ("yes", "no"):
        raise AnswerError("say whether the task succeeded", where="success", fix="yes or no")
    failure: int | None = None
    raw = form.get("failure", "").strip()
    if raw:
        if not raw.isdigit() or not 1 <= int(raw) <= 5:
            raise AnswerError(
                f"failure scale {raw!r} is not 1..5",
                where="failure",
                fix="choose 1 (succeeded unaided) to 5 (failed), or leave it empty",
            )
        failure = int(raw)
    note = form.get("note", "")
    if len(note) > 5000:
        raise AnswerError(
            "the note is longer than 5,000 characters", where="note", fix="shorten it"
        )
    return success == "yes", failure, note


# -- routes ------------------------------------------------------------------------------------
def mount_study(app: FastAPI, root: Path, page: PageFn) -> None:
    """Add the participant, admin and observer routes to the dashboard ``app``."""
    studies = Studies(root)
    app.state.studies = studies

    def invalid(request: Request) -> HTMLResponse:
        return page(request, "study_invalid.html", 404, message=NOT_VALID)

    def show_step(
        request: Request,
        spec: StudySpec,
        view: SessionView,
        here: str,
        status: int = 200,
        error: dict[str, str] | None = None,
        values: dict[str, str] | None = None,
    ) -> HTMLResponse:
        ctx = step_context(spec, view)
        return page(
            request,
            f"study_{view.step.kind}.html",
            status,
            here=here,
            error=error,
            values=values or {},
            **ctx,
        )

    def unsaved(request: Request, exc: GridbenchError) -> HTMLResponse:
        # the log could not be read or written: say so, keep the link (nothing was lost)
        log.error("study answer not saved: %s", exc)
        msg = "Your answer could not be saved just now. Please try again in a minute."
        return page(request, "study_invalid.html", 503, message=msg)

    @app.get("/p/{rid}/{secret}", response_class=HTMLResponse)
    async def participant_page(request: Request, rid: str, secret: str) -> Response:
        def render() -> HTMLResponse:
            found = studies.participant(rid, secret)
            if found is None:
                return invalid(request)
            delivery, who = found
            try:
                view = delivery.view(who)  # the first visit starts the session: a write
            except GridbenchError as exc:
                return unsaved(request, exc)
            return show_step(request, delivery.spec, view, request.url.path)

        # one hop to the thread pool: the loop stays free for live runs and 40 participants
        return await asyncio.to_thread(render)

    @app.post("/p/{rid}/{secret}", response_class=HTMLResponse)
    async def participant_answer(request: Request, rid: str, secret: str) -> Response:
        form = await request.form()
        step, action = str(form.get("step") or ""), str(form.get("action") or "")
        fields = _answers(form)
        here = request.url.path

        def answer() -> Response:
            found = studies.participant(rid, secret)
            if found is None:
                return invalid(request)
            delivery, who = found
            try:
                # the engine appends (fsync) before it returns: acknowledged means on disk
                delivery.act(who, step, action, fields)
            except StepConflict:
                pass  # a replay, a second tab, a double click: show the current step
            except AnswerError as exc:
                view = delivery.view(who)
                if view.step.id == step:
                    return show_step(request, delivery.spec, view, here, 422, _error(exc), fields)
            except GridbenchError as exc:
                return unsaved(request, exc)
            return RedirectResponse(here, status_code=303)

        return await asyncio.to_thread(answer)

    @app.api_route("/p/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
    def participant_other(request: Request, rest: str) -> HTMLResponse:
        """Any other path under /p/: the same answer as a forged link."""
        return invalid(request)

    def admin_page(
        request: Request, rid: str, run: RunDir, status: int = 200, **extra: Any
    ) -> HTMLResponse:
        try:
            delivery = studies.delivery(run)
            ctx = admin_context(run, delivery)
        except GridbenchError as exc:
            return page(request, "error.html", 422, title="Unreadable study", message=str(exc))
        return page(
            request,
            "study_admin.html",
            status,
            rid=rid,
            **{"new_link": None, "error": None, **extra},
            **ctx,
        )

    def unknown(request: Request, rid: str) -> HTMLResponse:
        return page(
            request,
            "error.html",
            404,
            title="Not found",
            message=f"No study {rid!r} in the results store.",
        )

    @app.get("/studies/{rid}", response_class=HTMLResponse)
    def study_admin(request: Request, rid: str) -> HTMLResponse:
        run = studies.run(rid)
        return unknown(request, rid) if run is None else admin_page(request, rid, run)

    @app.post("/studies/{rid}/links/{participant}", response_class=HTMLResponse)
    async def study_link(request: Request, rid: str, participant: str) -> Response:
        run = await asyncio.to_thread(studies.run, rid)
        if run is None:
            return unknown(request, rid)
        action = (await request.form()).get("action")

        def change() -> Response:
            delivery = studies.delivery(run)
            try:
                if action == "issue":
                    secret = delivery.issue_link(participant, "admin")
                    url = f"{str(request.base_url).rstrip('/')}/p/{rid}/{secret}"
                    # shown once, on this answer only: the log keeps the hash alone
                    link = {"participant": participant, "url": url}
                    return admin_page(request, rid, run, new_link=link)
                if action == "revoke":
                    delivery.revoke_link(participant)
                    return RedirectResponse(f"/studies/{rid}", status_code=303)
                raise GridbenchError(
                    f"unknown action {action!r}", where="action", fix="issue or revoke"
                )
            except GridbenchError as exc:
                return admin_page(request, rid, run, 422, error=str(exc))

        return await asyncio.to_thread(change)

    def observer_page(
        request: Request, rid: str, run: RunDir, only: str, status: int = 200, **extra: Any
    ) -> HTMLResponse:
        try:
            ctx = observer_context(studies.delivery(run), only)
        except GridbenchError as exc:
            return page(request, "error.html", 422, title="Unreadable study", message=str(exc))
        return page(
            request, "study_observer.html", status, rid=rid, **{"error": None, **extra}, **ctx
        )

    @app.get("/studies/{rid}/observer", response_class=HTMLResponse)
    def study_observer(request: Request, rid: str, participant: str = "") -> HTMLResponse:
        run = studies.run(rid)
        if run is None:
            return unknown(request, rid)
        return observer_page(request, rid, run, participant)

    @app.post("/studies/{rid}/observer", response_class=HTMLResponse)
    async def study_observe(request: Request, rid: str) -> Response:
        run = await asyncio.to_thread(studies.run, rid)
        if run is None:
            return unknown(request, rid)
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        who, only = form.get("participant", ""), form.get("only", "")

        def record() -> Response:
            try:
                success, failure, note = parse_observation(form)
                studies.delivery(run).observe(
                    who, form.get("tool", ""), form.get("task", ""), success, failure, note
                )
            except GridbenchError as exc:
                return observer_page(request, rid, run, only, 422, error=_error(exc))
            back = f"?participant={only}" if only in studies.delivery(run).spec.participants else ""
            return RedirectResponse(f"/studies/{rid}/observer{back}#p-{who}", status_code=303)

        return await asyncio.to_thread(record)
