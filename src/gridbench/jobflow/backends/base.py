"""The backend protocol: the one plugin point between gridbench and a system under test.

A backend is an async adapter with a declared stage chain. It never polls one job at a
time: :meth:`Backend.status` takes every job of a sweep in one call.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import Event


class JobState(enum.Enum):
    """Normalised job states."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


#: the states a job does not leave; a tuple: membership by identity, no Enum.__hash__ call
TERMINAL_STATES: tuple[JobState, ...] = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do beyond the required operations."""

    batch_status: bool = True
    cancel: bool = True
    fetch_output: bool = True
    server_events: bool = False
    queue_length: bool = False
    max_concurrent_submits: int | None = None
    #: submit answers without waiting on anything (an in-process backend): the open loop
    #: then calls it inline, with no task per job. A coroutine may only be carried on by
    #: the task that started it (anyio's cancel scopes, locks), so a backend that waits
    #: must leave this off: each of its submissions gets a task of its own
    submit_at_once: bool = False
    #: jobs the system holds at once before it refuses a submission (None: unknown or no
    #: bound); the plan uses it to count the retry model's attempts
    admission_limit: int | None = None
    #: jobs per second the system completes at most (None: unknown); the plan uses it to
    #: estimate how long a burst's backlog takes to drain
    throughput_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class Staging:
    """What a job stages (spec ``job.input_size`` ... ``job.output_files``); a backend that
    stages moves this much, one that does not ignores it."""

    input_bytes: int | None = None
    input_files: int | None = None
    output_bytes: int | None = None
    output_files: int | None = None


class _NoEntries(Mapping[str, Any]):
    """An empty mapping shared by every request that has none (no dict per job)."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:  # a dataclass default must be hashable (immutable)
        return 0

    def __repr__(self) -> str:
        return "{}"


NO_ENTRIES: Mapping[str, Any] = _NoEntries()


@dataclass(slots=True)
class JobRequest:
    """What to run: the spec's job section resolved for one submission. Read-only by
    convention (``dataclasses.replace`` makes a changed copy): not frozen, because a
    frozen dataclass's ``__init__`` costs ~1 us more per job, as much as the rest of the
    dispatcher's work for a submission."""

    name: str  # gridbench job id (unique in the experiment)
    command: tuple[str, ...] = ()
    runtime_s: float | None = None  # for simulated backends (reference, null)
    fail: bool = False  # ask a simulating backend to fail this job
    user: str | None = None  # the virtual user submitting it (spec ``users``), or a sustain agent
    attributes: Mapping[str, Any] = NO_ENTRIES
    account: str | None = None  # the local Unix account to submit as (Slurm, SGE, local)
    # where the user's credential lives ({"env": VAR} or {"file": PATH}); never the secret
    credential: Mapping[str, str] = NO_ENTRIES
    tasks: int | None = None  # processes in the job (spec job.tasks); None: backend default
    nodes: int | None = None  # nodes the job spans (spec job.nodes); None: backend default
    staging: Staging | None = None  # data to stage (spec job.*_size/_files); None: none


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A backend's answer about one job."""

    state: JobState
    message: str = ""
    exit_code: int | None = None


class SubmitError(Exception):
    """A submission failed; ``kind`` is one of the FAIL_* kinds in :mod:`events.model`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@runtime_checkable
class Backend(Protocol):
    """The adapter to a system under test."""

    name: ClassVar[str]

    def stage_chain(self) -> StageChain:
        """The stages this backend (and its collectors) can stamp, in order."""
        ...

    def capabilities(self) -> Capabilities: ...

    async def open(self) -> None:
        """Connect and verify the backend answers; raise BackendError with a fix if not."""
        ...

    async def close(self) -> None: ...

    async def submit(self, job: JobRequest) -> str:
        """Submit one job; return the backend's id. Raise SubmitError on failure."""
        ...

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        """States of many jobs in one call; ids the backend no longer knows are omitted."""
        ...

    async def cancel(self, ids: Sequence[str]) -> None: ...

    async def fetch_output(self, backend_id: str) -> bytes: ...

    async def server_events(self) -> list[Event]:
        """New server-side events since the last call (empty if unsupported)."""
        ...

    async def queue_length(self) -> int | None:
        """Jobs queued on the backend by anyone, for background-load records."""
        ...


@runtime_checkable
class BulkSubmitter(Protocol):
    """A backend that can submit many jobs in one call (a Slurm job array, say).

    Optional: the batch model uses it when the spec sets ``load.bulk`` above 1.
    """

    async def submit_bulk(self, jobs: Sequence[JobRequest]) -> list[str | SubmitError]:
        """Submit ``jobs`` in as few calls as the backend can; return, in order, each job's
        id or the SubmitError of the call that failed it (some calls may succeed)."""
        ...


# ---- optional hooks ----------------------------------------------------------------------
# The runner checks for each with ``isinstance(backend, Hook)``: a backend implements one by
# defining the method, nothing else (runtime_checkable protocols look for the name only, so
# the signatures are enforced by mypy, not at run time).


@runtime_checkable
class JobSizer(Protocol):
    """A backend that honours ``JobRequest.tasks`` and ``nodes`` (spec ``job.tasks``,
    ``job.nodes``). A spec that sets either on a backend without this hook is refused at
    validate; one with it is refused when ``job_size_problem`` names a problem."""

    def job_size_problem(self, tasks: int | None, nodes: int | None) -> str | None:
        """Why this backend, as configured, cannot run jobs of this size (None: it can)."""
        ...


@runtime_checkable
class InlineSubmit(Protocol):
    """A backend that can submit with a plain call, nothing to wait for (in-process): the
    open loop then calls that, no coroutine and no StopIteration per job."""

    def inline_submit(self) -> Callable[[JobRequest], str] | None:
        """A call that submits one job exactly as :meth:`Backend.submit` would, returning
        the id or raising SubmitError; None when, as configured, submit must be awaited."""
        ...


#: the spec's staging fields (``job.<name>``), inputs first
STAGING_FIELDS = ("input_size", "input_files", "output_size", "output_files")


@runtime_checkable
class DataStager(Protocol):
    """A backend that can move a job's data (spec ``job.input_size`` ... ``output_files``).
    A spec that sets a staging field on a backend without this hook, or one whose
    configuration does not use that field, gets a warning at validate: the field would be
    silently ignored."""

    def staged_fields(self) -> frozenset[str]:
        """The :data:`STAGING_FIELDS` this configuration moves or hands to the site."""
        ...


@runtime_checkable
class RuntimeStatsSource(Protocol):
    """A backend with counters of its own per trial (the command backend's client cost)."""

    def runtime_stats(self) -> dict[str, Any]:
        """Counters since the previous call; the keys go into trial.json as they are."""
        ...


@runtime_checkable
class RuntimeInfoSource(Protocol):
    """A backend that records facts about itself in experiment.json (``backend_runtime``)."""

    def runtime_info(self) -> dict[str, Any]:
        """What ``gridbench cleanup`` or a reader needs to know about this instance."""
        ...


@runtime_checkable
class OrphanStopper(Protocol):
    """A backend whose jobs are local processes: a crashed run's are stopped by pid, since
    the backend that started them (and its job table) died with the run."""

    def stop_orphans(self, pids: Sequence[int]) -> list[int]:
        """Stop the jobs with these process ids; return the pids actually stopped."""
        ...


@runtime_checkable
class CancelClient(Protocol):
    """A backend that cancels by running a client program (scancel, qdel): which one, and
    where it resolves with the backend's own environment (``bin_dir``, ``env``), so that
    ``gridbench cleanup`` can show it and refuse one a run folder points elsewhere."""

    def cancel_client(self) -> tuple[str, str | None]:
        """(the program's name, its full path as the backend would run it, or None)."""
        ...


@runtime_checkable
class ReportPublisher(Protocol):
    """A backend whose system publishes EDGI monitoring reports (``reports: auto``)."""

    def report_sources(self) -> list[tuple[str, str]]:
        """``(tier, url)`` of each report listing, nearest tier first."""
        ...
