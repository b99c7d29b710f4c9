"""The delivery engine: one study run's sessions, links and observations, driven by the
browser pages (gridbench.web) and written to the append-only log.

The log on disk is the truth. Every record is appended (and fsynced) *before* the
in-memory state changes, so an answer the server acknowledged is on disk; the in-memory
copy is rebuilt from the log when the engine is created, so a restarted server resumes
every session at the exact step. The records stay in memory (grouped per participant), so
a page view or a post re-reads the log only when another process wrote to it (a second
server on the same results root): each operation holds the run's flock and checks the
log's size and time first.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from gridbench.errors import GridbenchError, ResultsError
from gridbench.store.layout import RunDir
from gridbench.study import records as log
from gridbench.study.answers import (
    StepConflict,
    background_answer,
    observation,
    scale_answer,
    text_answer,
)
from gridbench.study.design import session_order
from gridbench.study.links import link_hash, new_secret
from gridbench.study.model import StudySpec
from gridbench.study.records import (
    BackgroundAnswers,
    Finished,
    FreeText,
    LikertAnswer,
    LinkIssued,
    LinkRevoked,
    Observation,
    Record,
    Source,
    StepDone,
    SusAnswer,
    TaskStarted,
    TaskStopped,
    now_ns,
)
from gridbench.study.steps import SessionView, Step, replay

_RELOAD = "reload the page: it shows the step the session is at"


@dataclass(frozen=True)
class ParticipantProgress:
    """One participant's line on the admin/observer overview."""

    participant: str
    link_active: bool
    started: bool
    index: int
    total: int
    step: Step | None
    finished: bool
    observations: dict[tuple[str, str], Observation]  # (tool, task) -> latest


class StudyDelivery:
    """One study run's delivery state. Thread- and process-safe (a lock and the run's flock
    around read-check-append); the log on disk is the truth: the in-memory copy is rebuilt
    from it when the object is created or another process has written, so a server
    restart resumes."""

    def __init__(self, run_path: Path, spec: StudySpec) -> None:
        self.run_path = run_path
        self.spec = spec
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None  # the log as last read (None: re-read)
        self._records: list[Record] = []
        self._by_participant: dict[str, list[Record]] = {}
        self._link_of: dict[str, str] = {}  # participant -> active link hash
        self._links: dict[str, str] = {}  # active link hash -> participant
        self._finished: set[str] = set()
        self._observations: dict[str, dict[tuple[str, str], Observation]] = {}
        with self._locked():
            pass  # reads the log: a damaged one is an error now, not at the first answer

    @classmethod
    def open(cls, run_path: Path) -> StudyDelivery:
        """The engine of a study run folder: its spec.yaml and its log."""
        from gridbench.study.load import load_study_spec_text

        run = RunDir(run_path)
        spec, _ = load_study_spec_text(run.spec_text(), str(run.spec_file))
        return cls(run_path, spec)

    # -- state -------------------------------------------------------------------------

    def _stamp(self) -> tuple[int, int, int]:
        """What tells another process's write: the log's inode, size and time (0s: none)."""
        try:
            st = os.stat(log.log_path(self.run_path), follow_symlinks=False)
        except FileNotFoundError:
            return 0, 0, 0
        return st.st_ino, st.st_size, st.st_mtime_ns

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """This engine's lock and the run's (flock on its folder), with the in-memory state
        re-read from the log if another process (a second server on the same results root,
        'study serve --run --new-links') wrote to it: its revoked links stop working here
        too, and a session answered there is not answered again here."""
        with self._lock:
            try:
                fd = os.open(self.run_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                raise ResultsError(
                    f"cannot open the study run: {exc.strerror or exc}",
                    where=str(self.run_path),
                    fix="check that the run folder exists and is readable",
                ) from None
            try:
                with suppress(OSError):  # no flock here (some NFS): the log check still runs
                    fcntl.flock(fd, fcntl.LOCK_EX)
                if self._seen is None or self._stamp() != self._seen:
                    self._seen = None
                    self._reload()
                try:
                    yield
                finally:  # whatever this engine wrote is folded in; nobody else wrote
                    self._seen = self._stamp()
            finally:
                os.close(fd)  # (releases the flock)

    def _reload(self) -> None:
        records = log.read_log(self.run_path)
        for held in (self._by_participant, self._link_of, self._links, self._observations):
            held.clear()
        self._records.clear()
        self._finished.clear()
        for r in records:
            self._apply(r)

    def _apply(self, r: Record) -> None:
        """Fold one record (already on disk) into the in-memory state."""
        self._records.append(r)
        participant = log.participant_of(r)
        if participant is None:
            return
        self._by_participant.setdefault(participant, []).append(r)
        if isinstance(r, LinkIssued):
            old = self._link_of.pop(participant, None)
            if old is not None:
                self._links.pop(old, None)
            self._link_of[participant] = r.link_hash
            self._links[r.link_hash] = participant
        elif isinstance(r, LinkRevoked):
            old = self._link_of.pop(participant, None)
            if old is not None:
                self._links.pop(old, None)
        elif isinstance(r, Finished):
            self._finished.add(participant)
        elif isinstance(r, Observation):
            self._observations.setdefault(participant, {})[(r.tool, r.task)] = r

    def _append(self, r: Record) -> None:
        """Write the record (fsynced), then change the in-memory state."""
        try:
            log.append(self.run_path, r)
        except OSError as exc:
            raise ResultsError(
                f"the answer could not be saved: {exc.strerror or exc}",
                where=str(log.log_path(self.run_path)),
                fix="free disk space or fix the folder's permissions, then submit again",
            ) from None
        self._apply(r)

    def _known(self, participant: str) -> None:
        if participant not in self.spec.participants:
            raise GridbenchError(
                f"{participant[:60]!r} is not one of the study's participants",
                where="participant",
                fix="add the pseudonym to participants: in the study spec",
            )

    def _session(self, participant: str) -> SessionView | None:
        return replay(self.spec, self._by_participant.get(participant, ()), participant)

    def _view_locked(self, participant: str) -> SessionView:
        """The session (started now on the first visit); the caller holds the lock."""
        self._known(participant)
        view = self._session(participant)
        if view is None:
            self._append(session_order(self.spec, participant))
            view = self._session(participant)
            assert view is not None
        if view.finished and participant not in self._finished:
            # also repairs a crash between the last answer and its Finished record
            self._append(Finished(t_ns=now_ns(), participant=participant))
        return view

    @property
    def records(self) -> tuple[Record, ...]:
        """Every record of the log, in order (a snapshot)."""
        with self._locked():
            return tuple(self._records)

    def session(self, participant: str) -> SessionView | None:
        """The participant's session without starting it (None before the first visit)."""
        with self._locked():
            return self._session(participant)

    # -- links -------------------------------------------------------------------------

    def issue_link(self, participant: str, source: Source = "admin") -> str:
        """A new personal link for a declared participant (revoking any previous one).
        Returns the secret: shown once, never stored (the log keeps its hash)."""
        secret = new_secret()
        with self._locked():
            self._known(participant)
            record = LinkIssued(
                t_ns=now_ns(), source=source, participant=participant, link_hash=link_hash(secret)
            )
            self._append(record)
        return secret

    def revoke_link(self, participant: str) -> None:
        """Make the participant's link stop working (nothing to do when none is active)."""
        with self._locked():
            self._known(participant)
            if participant in self._link_of:
                self._append(LinkRevoked(t_ns=now_ns(), source="admin", participant=participant))

    def participant_for(self, secret: str) -> str | None:
        """Whose link this is; None for a forged, replaced or revoked secret."""
        if not isinstance(secret, str) or not 0 < len(secret) <= 200:
            return None
        digest = link_hash(secret)
        with self._locked():
            return self._links.get(digest)

    # -- the participant's session -----------------------------------------------------

    def view(self, participant: str) -> SessionView:
        """Where the participant is; the first call starts the session (records its order)."""
        with self._locked():
            return self._view_locked(participant)

    def act(
        self, participant: str, step_id: str, action: str, form: Mapping[str, str]
    ) -> SessionView:
        """Apply one post to the current step and return the session after it.

        StepConflict when ``step_id`` is not the current step or the action does not fit it
        (nothing written); AnswerError naming the field when an answer is missing or out of
        range (nothing written)."""
        with self._locked():
            view = self._view_locked(participant)
            if step_id != view.step.id:
                raise StepConflict(
                    f"the post is for step {step_id[:80]!r}, "
                    f"but the session is at {view.step.id!r}",
                    where=f"participant {participant}",
                    fix=_RELOAD,
                )
            for record in self._answer(view, action, form):
                self._append(record)
            return self._view_locked(participant)

    def _answer(self, view: SessionView, action: str, form: Mapping[str, str]) -> list[Record]:
        """The records one post writes, all checked before any is written."""
        step, p, t = view.step, view.participant, now_ns()
        expected = {
            "purpose": "next",
            "background": "submit",
            "likert": "submit",
            "sus": "submit",
            "free_text": "submit",
        }.get(step.kind)
        if step.kind == "task":
            assert step.tool is not None and step.task is not None
            if action == "start" and view.task_started_ns is None:
                return [TaskStarted(t_ns=t, participant=p, tool=step.tool, task=step.task)]
            if action == "stop" and view.task_started_ns is not None:
                elapsed = max(0, t - view.task_started_ns)
                return [
                    TaskStopped(
                        t_ns=t, participant=p, tool=step.tool, task=step.task, elapsed_ns=elapsed
                    )
                ]
            state = "started" if view.task_started_ns is not None else "not started"
            raise StepConflict(
                f"{action[:20]!r} does not apply: the task {step.task!r} is {state}",
                where=f"participant {p}",
                fix=_RELOAD,
            )
        if expected is None or action != expected:
            raise StepConflict(
                f"{action[:20]!r} does not apply to the step {step.id!r}",
                where=f"participant {p}",
                fix=_RELOAD,
            )
        q = self.spec.questionnaires
        if step.kind == "purpose":
            return [StepDone(t_ns=t, participant=p, step=step.id)]
        if step.kind == "background":
            answers = {question.id: background_answer(question, form) for question in q.background}
            return [BackgroundAnswers(t_ns=t, participant=p, answers=answers)]
        if step.kind == "likert":
            assert step.tool is not None and step.task is not None
            difficulty = scale_answer(form, "difficulty", "difficulty")
            satisfaction = scale_answer(form, "satisfaction", "satisfaction")
            return [
                LikertAnswer(
                    t_ns=t,
                    participant=p,
                    tool=step.tool,
                    task=step.task,
                    difficulty=difficulty,
                    satisfaction=satisfaction,
                )
            ]
        if step.kind == "sus":
            assert step.tool is not None
            items = [scale_answer(form, f"sus{i}", f"SUS item {i}") for i in range(1, 11)]
            return [SusAnswer(t_ns=t, participant=p, tool=step.tool, items=items)]
        # free_text: the last questions; the session is finished with it
        texts = {question.id: text_answer(form, question.id) for question in q.free_text}
        return [FreeText(t_ns=t, participant=p, answers=texts), Finished(t_ns=t, participant=p)]

    # -- the observer ------------------------------------------------------------------

    def observe(
        self,
        participant: str,
        tool: str,
        task: str,
        success: bool,
        failure: int | None,
        note: str,
    ) -> None:
        """Record (or correct: the latest counts) the observer's verdict on one task."""
        record = observation(self.spec, participant, tool, task, success, failure, note)
        with self._locked():
            self._append(record)

    def overview(self) -> list[ParticipantProgress]:
        """Every declared participant's progress, link and observations, in spec order."""
        out = []
        with self._locked():
            for p in self.spec.participants:
                view = self._session(p)
                out.append(
                    ParticipantProgress(
                        participant=p,
                        link_active=p in self._link_of,
                        started=view is not None,
                        index=view.index if view else 0,
                        total=view.total if view else 0,
                        step=view.step if view else None,
                        finished=view.finished if view else False,
                        observations=dict(self._observations.get(p, {})),
                    )
                )
        return out
