"""From the study log's records to tidy frames, one per kind of answer.

Pure: :func:`build_dataset` takes the records (already validated by
:mod:`gridbench.study.records`) and the spec, and gives polars frames that the analysis
reads. A study is small (tens of participants), so the records are folded per key in
Python; the statistics then work on columns.

**A later record replaces an earlier one for the same key**: a participant who re-answers
a form (after a reload, or going back) has changed their answer, and the log keeps both
(it is append-only). Keys: SUS per (participant, tool); a task's time per (participant,
tool, task), whether from Stop (``TaskStopped.elapsed_ns``) or imported (``TaskTime``);
Likert per (participant, tool, task), the whole answer replaced (a later answer that
leaves an item empty empties it); the observer's verdict per (participant, tool, task);
background and free text per (participant, question); an install rating per (release,
respondent, item). Complaints are all kept.

Records naming a tool or task the spec does not declare are left out, and counted in
``notes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gridbench.study import records as rec
from gridbench.study.model import StudySpec

SUS_COLUMNS = tuple(f"item{i}" for i in range(1, 11))

_TASK_SCHEMA: dict[str, Any] = {
    "participant": pl.String,
    "tool": pl.String,
    "task": pl.String,
    "seconds": pl.Float64,
    "success": pl.Boolean,
    "failure": pl.Int64,
    "difficulty": pl.Int64,
    "satisfaction": pl.Int64,
}
_SUS_SCHEMA: dict[str, Any] = {
    "participant": pl.String,
    "tool": pl.String,
    **{c: pl.Int64 for c in SUS_COLUMNS},
}
_INSTALL_SCHEMA: dict[str, Any] = {
    "release": pl.String,
    "respondent": pl.String,
    "item": pl.String,
    "value": pl.Int64,
}
_PAIR_TEXT: dict[str, Any] = {"participant": pl.String, "question": pl.String, "answer": pl.String}


@dataclass(frozen=True)
class StudyData:
    """The study's answers as frames (see the module docstring for what replaces what)."""

    sus: pl.DataFrame  # participant, tool, item1..item10
    tasks: (
        pl.DataFrame
    )  # participant, tool, task, seconds, success, failure, difficulty, satisfaction
    install: pl.DataFrame  # release, respondent, item, value
    complaints: pl.DataFrame  # release, text
    background: pl.DataFrame  # participant, question, answer (as text)
    free_text: pl.DataFrame  # participant, question, answer
    started: frozenset[str] = frozenset()  # participants whose session started (or imported)
    finished: frozenset[str] = frozenset()
    notes: tuple[str, ...] = field(default=())

    @property
    def with_data(self) -> frozenset[str]:
        """Participants with at least one SUS or task answer."""
        people = set(self.sus["participant"].to_list()) | set(self.tasks["participant"].to_list())
        return frozenset(people)


def _task_row(
    store: dict[tuple[str, str, str], dict[str, Any]], key: tuple[str, str, str]
) -> dict[str, Any]:
    if key not in store:
        store[key] = {
            "participant": key[0],
            "tool": key[1],
            "task": key[2],
            "seconds": None,
            "success": None,
            "failure": None,
            "difficulty": None,
            "satisfaction": None,
        }
    return store[key]


def _answer_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def build_dataset(records: Sequence[rec.Record], spec: StudySpec) -> StudyData:
    """The frames of one study's log (later answers replace earlier ones, per key)."""
    tasks_of = {t.id: {k.id for k in t.tasks} for t in spec.tools}
    sus: dict[tuple[str, str], list[int]] = {}
    tasks: dict[tuple[str, str, str], dict[str, Any]] = {}
    install: dict[tuple[str, str, str], int] = {}
    complaints: list[tuple[str, str]] = []
    background: dict[tuple[str, str], str | None] = {}
    free: dict[tuple[str, str], str] = {}
    started: set[str] = set()
    finished: set[str] = set()
    unknown = 0
    for r in records:
        if isinstance(
            r, rec.SusAnswer | rec.TaskStopped | rec.TaskTime | rec.LikertAnswer | rec.Observation
        ):
            task = None if isinstance(r, rec.SusAnswer) else r.task
            if r.tool not in tasks_of or (task is not None and task not in tasks_of[r.tool]):
                unknown += 1
                continue
        if isinstance(r, rec.SessionStarted):
            started.add(r.participant)
        elif isinstance(r, rec.Finished):
            finished.add(r.participant)
        elif isinstance(r, rec.SusAnswer):
            sus[(r.participant, r.tool)] = list(r.items)
        elif isinstance(r, rec.TaskStopped):
            _task_row(tasks, (r.participant, r.tool, r.task))["seconds"] = r.elapsed_ns / 1e9
        elif isinstance(r, rec.TaskTime):
            _task_row(tasks, (r.participant, r.tool, r.task))["seconds"] = r.seconds
        elif isinstance(r, rec.LikertAnswer):
            row = _task_row(tasks, (r.participant, r.tool, r.task))
            row["difficulty"], row["satisfaction"] = r.difficulty, r.satisfaction
        elif isinstance(r, rec.Observation):
            row = _task_row(tasks, (r.participant, r.tool, r.task))
            row["success"], row["failure"] = r.success, r.failure
        elif isinstance(r, rec.BackgroundAnswers):
            for q, v in r.answers.items():
                background[(r.participant, q)] = _answer_text(v)
        elif isinstance(r, rec.FreeText):
            for q, v in r.answers.items():
                free[(r.participant, q)] = v
        elif isinstance(r, rec.InstallRating):
            install[(r.release, r.respondent, r.item)] = r.value
        elif isinstance(r, rec.Complaint):
            complaints.append((r.release, r.text))
    if any(r.source == "import" for r in records):
        # imported data has no sessions: whoever answered took part
        started |= {p for p, _ in sus} | {k[0] for k in tasks}
    notes = (
        (f"{unknown} record(s) name a tool or task the spec does not declare: left out",)
        if unknown
        else ()
    )
    return StudyData(
        sus=pl.DataFrame(
            [
                {"participant": p, "tool": t, **dict(zip(SUS_COLUMNS, v, strict=True))}
                for (p, t), v in sus.items()
            ],
            schema=_SUS_SCHEMA,
        ),
        tasks=pl.DataFrame(list(tasks.values()), schema=_TASK_SCHEMA),
        install=pl.DataFrame(
            [
                {"release": a, "respondent": b, "item": c, "value": v}
                for (a, b, c), v in install.items()
            ],
            schema=_INSTALL_SCHEMA,
        ),
        complaints=pl.DataFrame(
            complaints, schema={"release": pl.String, "text": pl.String}, orient="row"
        ),
        background=pl.DataFrame(
            [{"participant": p, "question": q, "answer": v} for (p, q), v in background.items()],
            schema=_PAIR_TEXT,
        ),
        free_text=pl.DataFrame(
            [{"participant": p, "question": q, "answer": v} for (p, q), v in free.items()],
            schema=_PAIR_TEXT,
        ),
        started=frozenset(started),
        finished=frozenset(finished),
        notes=notes,
    )
