"""A participant's session as a list of steps, and where they are in it, replayed from the
log alone: the log is the truth, so a reopened link (or a restarted server) resumes at the
exact step the records say, with nothing kept anywhere else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gridbench.errors import ResultsError
from gridbench.study.model import StudySpec
from gridbench.study.records import (
    BackgroundAnswers,
    FreeText,
    LikertAnswer,
    Record,
    SessionStarted,
    StepDone,
    SusAnswer,
    TaskStarted,
    TaskStopped,
    participant_of,
)

StepKind = Literal["purpose", "background", "task", "likert", "sus", "free_text", "done"]


@dataclass(frozen=True)
class Step:
    """One page of the session. ``id`` is stable and URL-safe: "purpose", "background",
    "task:<tool>:<task>", "likert:<tool>:<task>", "sus:<tool>", "free_text", "done"."""

    id: str
    kind: StepKind
    tool: str | None = None
    task: str | None = None


def steps_for(spec: StudySpec, order: SessionStarted) -> list[Step]:
    """The session's steps in order: purpose; background (if the spec asks any); per tool in
    the recorded order, per task in its recorded order, the task then its Likert items (if
    on); the SUS after each tool (if on); free text (if any questions); done.

    A ResultsError when the recorded order names a tool or task the spec no longer has (the
    spec was changed after sessions started)."""
    q = spec.questionnaires
    steps = [Step("purpose", "purpose")]
    if q.background:
        steps.append(Step("background", "background"))
    for tool in order.tool_order:
        try:
            declared = {t.id for t in spec.tool(tool).tasks}
        except KeyError:
            declared = None
        tasks = order.task_order.get(tool)
        if declared is None or tasks is None or not set(tasks) <= declared:
            raise ResultsError(
                f"the session of {order.participant!r} started with tool {tool!r} and tasks "
                f"{tasks!r}, which the study's spec does not declare",
                where=f"study.jsonl: session_started of {order.participant}",
                fix="serve the study with the spec its sessions started with (the run's spec.yaml)",
            )
        for task in tasks:
            steps.append(Step(f"task:{tool}:{task}", "task", tool, task))
            if q.likert:
                steps.append(Step(f"likert:{tool}:{task}", "likert", tool, task))
        if q.sus:
            steps.append(Step(f"sus:{tool}", "sus", tool))
    if q.free_text:
        steps.append(Step("free_text", "free_text"))
    steps.append(Step("done", "done"))
    return steps


@dataclass(frozen=True)
class SessionView:
    """Where one participant is: the steps, the current one, and when its task was started."""

    participant: str
    steps: tuple[Step, ...]
    index: int  # the current step (len - 1 = done)
    task_started_ns: int | None  # a task step's Start (server wall ns), else None
    order: SessionStarted

    @property
    def step(self) -> Step:
        """The current step."""
        return self.steps[self.index]

    @property
    def total(self) -> int:
        """How many steps the session has (including done)."""
        return len(self.steps)

    @property
    def finished(self) -> bool:
        """Whether the participant has reached the end."""
        return self.step.kind == "done"


def _completed(record: Record) -> str | None:
    """The id of the step a record completes (None: it completes none)."""
    match record:
        case StepDone():
            return record.step
        case BackgroundAnswers():
            return "background"
        case TaskStopped():
            return f"task:{record.tool}:{record.task}"
        case LikertAnswer():
            return f"likert:{record.tool}:{record.task}"
        case SusAnswer():
            return f"sus:{record.tool}"
        case FreeText():
            return "free_text"
    return None


def replay(spec: StudySpec, records: Sequence[Record], participant: str) -> SessionView | None:
    """The participant's session as the records say (None before their session_started).

    The current step is the first one no record completes; a task step's start is the first
    Start recorded for it, so a Stop after a crash still counts from the original Start."""
    order: SessionStarted | None = None
    done: set[str] = set()
    started: dict[str, int] = {}
    for r in records:
        if participant_of(r) != participant:
            continue
        if isinstance(r, SessionStarted):
            order = order or r  # the first one fixes the order
        elif isinstance(r, TaskStarted):
            started.setdefault(f"task:{r.tool}:{r.task}", r.t_ns)
        else:
            step = _completed(r)
            if step is not None:
                done.add(step)
    if order is None:
        return None
    steps = steps_for(spec, order)
    index = next((i for i, s in enumerate(steps) if s.id not in done), len(steps) - 1)
    # "done" is never completed by a record; a StepDone("done") must not run past the end
    index = min(index, len(steps) - 1)
    current = steps[index]
    return SessionView(
        participant=participant,
        steps=tuple(steps),
        index=index,
        task_started_ns=started.get(current.id) if current.kind == "task" else None,
        order=order,
    )
