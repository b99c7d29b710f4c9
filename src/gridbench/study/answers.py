"""A participant's posted answers checked against the study's questions, and the two
refusals the delivery engine gives (pure: nothing here writes)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from gridbench.errors import GridbenchError
from gridbench.study.model import Question, StudySpec
from gridbench.study.records import Observation, now_ns

#: Longest text answer kept (the log's FreeText limit).
MAX_TEXT = 20_000
MAX_NOTE = 5000


class StepConflict(GridbenchError):
    """A post for a step that is not the current one (a replay, a second tab, a double
    click): nothing is written; the web answers by showing the current step."""


class AnswerError(GridbenchError):
    """A form field is missing or out of range: ``where`` is the field name, ``fix`` says
    what to do. Nothing is written."""


def form_field(form: Mapping[str, str], name: str) -> str:
    """A form field as text ('' when absent; a non-text value, e.g. an upload, is refused)."""
    value = form.get(name, "")
    if not isinstance(value, str):
        raise AnswerError(f"{name} is not a text field", where=name, fix="send it as text")
    return value


def scale_answer(form: Mapping[str, str], name: str, label: str) -> int:
    """A 1..5 answer; AnswerError naming the field when missing, not a number or out of range."""
    raw = form_field(form, name).strip()
    fix = f"choose one of 1 to 5 for {label}"
    if not raw:
        raise AnswerError(f"{label} is not answered", where=name, fix=fix)
    if not (raw.isascii() and raw.isdigit()):
        raise AnswerError(f"{label} is {raw[:20]!r}, not a number", where=name, fix=fix)
    value = int(raw)
    if not 1 <= value <= 5:
        raise AnswerError(f"{label} is {value}, outside 1 to 5", where=name, fix=fix)
    return value


def text_answer(form: Mapping[str, str], name: str, limit: int = MAX_TEXT) -> str:
    """A text answer of at most ``limit`` characters (AnswerError naming the field)."""
    value = form_field(form, name)
    if len(value) > limit:
        raise AnswerError(
            f"the answer is {len(value)} characters long; at most {limit} are kept",
            where=name,
            fix="shorten the answer",
        )
    return value


def background_answer(q: Question, form: Mapping[str, str]) -> str | float | None:
    """One background answer, checked against its question."""
    raw = text_answer(form, q.id).strip()
    if not raw:
        if q.required:
            raise AnswerError("this question must be answered", where=q.id, fix="answer it")
        return None
    if q.kind == "number":
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise AnswerError(f"{raw[:20]!r} is not a number", where=q.id, fix="give a number")
        return value
    if q.kind == "choice" and raw not in q.choices:
        raise AnswerError(
            f"{raw[:40]!r} is not one of the choices",
            where=q.id,
            fix=f"choose one of: {', '.join(q.choices)}",
        )
    return raw


def observation(
    spec: StudySpec,
    participant: str,
    tool: str,
    task: str,
    success: bool,
    failure: int | None,
    note: str,
) -> Observation:
    """The observer's verdict on one task as a record, checked (AnswerError naming the
    field: an unknown participant, tool or task, a success that is not a bool, a failure
    scale outside 1..5, a note too long)."""
    if participant not in spec.participants:
        raise AnswerError(
            f"{participant[:60]!r} is not a participant",
            where="participant",
            fix="choose a participant of the study",
        )
    tools = {t.id: t for t in spec.tools}
    if tool not in tools:
        raise AnswerError(
            f"{tool[:60]!r} is not a tool of the study",
            where="tool",
            fix=f"choose one of: {', '.join(tools)}",
        )
    tasks = [k.id for k in tools[tool].tasks]
    if task not in tasks:
        raise AnswerError(
            f"{task[:60]!r} is not a task of {tool}",
            where="task",
            fix=f"choose one of: {', '.join(tasks)}",
        )
    if not isinstance(success, bool):
        # a form's "false" is a true string: the page must send a real yes/no
        raise AnswerError(
            f"success is {success!r}, not yes or no",
            where="success",
            fix="choose success or failure",
        )
    if failure is not None and (isinstance(failure, bool) or not 1 <= failure <= 5):
        raise AnswerError(
            f"the failure scale is {failure!r}, outside 1 to 5",
            where="failure",
            fix="choose 1 (success) to 5 (failed), or leave it empty",
        )
    if len(note) > MAX_NOTE:
        raise AnswerError(
            f"the note is {len(note)} characters long; at most {MAX_NOTE} are kept",
            where="note",
            fix="shorten the note",
        )
    return Observation(
        t_ns=now_ns(),
        source="observer",
        participant=participant,
        tool=tool,
        task=task,
        success=success,
        failure=failure,
        note=note,
    )
