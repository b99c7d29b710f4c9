"""What the study's pages show: the context of each participant step, the admin and
observer pages, and the observer's form read back (pure apart from the clock and, for the
admin page, the run's log). The routes are in :mod:`gridbench.study.web_pages`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.store.layout import RunDir
from gridbench.study.answers import AnswerError
from gridbench.study.delivery import StudyDelivery
from gridbench.study.model import StudySpec, Task, Tool
from gridbench.study.records import BackgroundAnswers, FreeText, now_ns, read_log
from gridbench.study.steps import SessionView, Step

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


def answers_of(form: Any) -> dict[str, str]:
    """The answer fields of a posted form (text only; not the CSRF token, step or action)."""
    return {k: v for k, v in form.items() if isinstance(v, str) and k not in CONTROL_FIELDS}


def error_of(exc: GridbenchError) -> dict[str, str]:
    """A refused answer for the template: the field, what is wrong, the fix."""
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
