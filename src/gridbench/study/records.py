"""The study's append-only log: one JSON line per thing that happened, fsynced as it is
written, never rewritten. Delivery (the participant's browser), the observer page and
``gridbench study import`` all write these records; analysis reads only them.

The log is foreign input when read back (a crash may cut the last line; a run folder may
come from elsewhere): every line is validated against these models, and a bad one is an
error naming the file and line.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gridbench.errors import ResultsError
from gridbench.store.records import append_record, read_records
from gridbench.store.safe_open import refuse_links
from gridbench.study.model import Ident

LOG_FILE = "study.jsonl"
#: Where a record came from.
Source = Literal["web", "observer", "import", "admin"]
Likert = Annotated[int, Field(ge=1, le=5)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    t_ns: int = Field(ge=0, description="server wall clock when written, ns")
    source: Source = "web"


class _TaskRecord(_Record):
    """A record about one task of one tool, for one participant."""

    type: str  # each kind's own Literal, in this place of the line
    participant: Ident
    tool: Ident
    task: Ident


class LinkIssued(_Record):
    """A participant's personal link; only the SHA-256 of its secret is kept."""

    type: Literal["link_issued"] = "link_issued"
    participant: Ident
    link_hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class LinkRevoked(_Record):
    type: Literal["link_revoked"] = "link_revoked"
    participant: Ident


class SessionStarted(_Record):
    """The participant's counterbalanced order, fixed on the first visit."""

    type: Literal["session_started"] = "session_started"
    participant: Ident
    square_row: int = Field(ge=0)
    tool_order: list[Ident]
    task_order: dict[Ident, list[Ident]]
    seed: int


class StepDone(_Record):
    """A step with nothing to answer (the purpose page was read)."""

    type: Literal["step_done"] = "step_done"
    participant: Ident
    step: str = Field(max_length=200)


class TaskStarted(_TaskRecord):
    type: Literal["task_started"] = "task_started"


class TaskStopped(_TaskRecord):
    """Stop pressed; ``elapsed_ns`` is server time since the matching Start."""

    type: Literal["task_stopped"] = "task_stopped"
    elapsed_ns: int = Field(ge=0)


class TaskTime(_TaskRecord):
    """A task time known only as a number (imported data)."""

    type: Literal["task_time"] = "task_time"
    seconds: float = Field(ge=0)


class LikertAnswer(_TaskRecord):
    """Difficulty and satisfaction of one task (1-5; 5 = most difficult / most satisfied)."""

    type: Literal["likert"] = "likert"
    difficulty: Likert | None = None
    satisfaction: Likert | None = None


class SusAnswer(_Record):
    """The ten SUS items for one tool, as given (1-5 each, item 1 first)."""

    type: Literal["sus"] = "sus"
    participant: Ident
    tool: Ident
    items: list[Likert] = Field(min_length=10, max_length=10)


class Observation(_TaskRecord):
    """The observer's verdict on one task: success, and the failure scale (1-5)."""

    type: Literal["observation"] = "observation"
    success: bool
    failure: Likert | None = None
    note: str = Field(default="", max_length=5000)


class BackgroundAnswers(_Record):
    type: Literal["background"] = "background"
    participant: Ident
    answers: dict[Ident, str | float | None]


class FreeText(_Record):
    """Free text, stored as given (shown escaped; exports can drop it)."""

    type: Literal["free_text"] = "free_text"
    participant: Ident
    answers: dict[Ident, Annotated[str, Field(max_length=20_000)]]


class Finished(_Record):
    type: Literal["finished"] = "finished"
    participant: Ident


class InstallRating(_Record):
    """One install/configuration survey answer (XtreemOS: 1..scale per item)."""

    type: Literal["install_rating"] = "install_rating"
    release: str = Field(min_length=1, max_length=100)
    respondent: str = Field(min_length=1, max_length=100)
    item: Ident
    value: int = Field(ge=1, le=10)


class Complaint(_Record):
    type: Literal["complaint"] = "complaint"
    release: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=20_000)


Record = Annotated[
    LinkIssued
    | LinkRevoked
    | SessionStarted
    | StepDone
    | TaskStarted
    | TaskStopped
    | TaskTime
    | LikertAnswer
    | SusAnswer
    | Observation
    | BackgroundAnswers
    | FreeText
    | Finished
    | InstallRating
    | Complaint,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


def participant_of(record: Record) -> str | None:
    """The participant a record is about (None for the install survey's records)."""
    return None if isinstance(record, InstallRating | Complaint) else record.participant


def now_ns() -> int:
    """The server wall clock, ns (every record's ``t_ns``)."""
    return time.time_ns()


def log_path(run_path: Path) -> Path:
    """Where a study run keeps its log."""
    return run_path / LOG_FILE


def create_log(run_path: Path) -> None:
    """Start the run's (empty) log, private to its owner: from then on a missing log is
    lost answers, not a study nobody answered yet."""
    refuse_links(log_path(run_path))
    fd = os.open(log_path(run_path), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.close(fd)


def log_missing(run_path: Path) -> bool:
    """Whether the run's log is gone (a link counts as present: reading it is refused)."""
    return not os.path.lexists(log_path(run_path))


def append(run_path: Path, record: Record) -> None:
    """Write one record to the run's log and fsync it before returning."""
    append_record(log_path(run_path), record.model_dump(mode="json"), mode=0o600)


def parse_record(obj: Any, where: str) -> Record:
    """One record from untrusted data; ResultsError naming ``where`` when it is not one."""
    try:
        return _ADAPTER.validate_python(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ResultsError(
            f"not a study record: {loc}: {first['msg']}",
            where=where,
            fix="the log is append-only: restore the line from a copy, or delete it and "
            "say so in the study's notes",
        ) from None


def read_log(run_path: Path) -> list[Record]:
    """Every record of the run's log, in order (none when there is no log yet)."""
    path = log_path(run_path)
    return [parse_record(obj, f"{path}: record {i}") for i, obj in enumerate(read_records(path), 1)]
