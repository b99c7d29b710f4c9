"""The PSI/J backend: any executor psij-python supports (local, slurm, pbs, lsf, flux, ...).

PSI/J calls are blocking, so submissions and cancels run on a bounded thread pool. Job
states come from PSI/J's status callbacks, which arrive on PSI/J's threads (the batch
executors' queue-poll thread: one squeue/qstat call per interval for all jobs) and are
handed to the event loop with ``call_soon_threadsafe``; ``status(ids)`` answers from that
table without calling PSI/J. Chain: ``submit -> psij_queued -> psij_active -> psij_end ->
client_done``; the PSI/J stamps are client-side, as late as one poll interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import (
    Capabilities,
    JobRequest,
    JobState,
    JobStatus,
    SubmitError,
)
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.backends.psij.options import (
    PsijOptions,
    executor_class,
    import_psij,
    make_config,
    precision_s,
)
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.model import FAIL_SUBMIT_ERROR, FAIL_SUBMIT_REJECTED, Event, Precision

log = logging.getLogger(__name__)
SOURCE = "psij"
STAGE_QUEUED = "psij_queued"
STAGE_ACTIVE = "psij_active"
STAGE_END = "psij_end"

# PSI/J state name -> (gridbench state, stage it stamps)
STATE_MAP: dict[str, tuple[JobState, str | None]] = {
    "NEW": (JobState.QUEUED, None),
    "QUEUED": (JobState.QUEUED, STAGE_QUEUED),
    "ACTIVE": (JobState.RUNNING, STAGE_ACTIVE),
    "COMPLETED": (JobState.DONE, STAGE_END),
    "FAILED": (JobState.FAILED, STAGE_END),
    "CANCELED": (JobState.CANCELLED, STAGE_END),
}


@dataclass(frozen=True, slots=True)
class _Change:
    """One PSI/J status callback, copied off PSI/J's thread."""

    native_id: str
    state: str
    t_ns: int
    exit_code: int | None
    message: str


def map_state(state: str, exit_code: int | None = None, message: str = "") -> JobStatus:
    """A PSI/J state name (and its exit code and message) as a gridbench JobStatus."""
    ours, _ = STATE_MAP.get(state, (JobState.UNKNOWN, None))
    if ours is JobState.FAILED and not message:
        message = f"exit code {exit_code}" if exit_code is not None else "PSI/J: job failed"
    return JobStatus(ours, message, exit_code)


class PsijBackend:
    """Adapter to any PSI/J job executor."""

    name: ClassVar[str] = "psij"

    def __init__(self, options: PsijOptions | None = None) -> None:
        self.options = options or PsijOptions()
        self._psij: Any = None
        self._executor: Any = None
        self._precision_ns = int(self.options.poll_interval_s * Precision.S)
        self._pool: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._jobs: dict[str, Any] = {}  # native id -> psij.Job
        self._states: dict[str, JobStatus] = {}
        self._events: list[Event] = []
        self._clock = AnchoredClock()
        self.accepted = 0  # jobs PSI/J returned a native id for

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> PsijBackend:
        return cls(parse_options(PsijOptions, options, cls.name))

    # ---- description --------------------------------------------------------------------

    def stage_chain(self) -> StageChain:
        """PSI/J stages at the precision of its status callbacks (the poll interval)."""
        p = self._precision_ns
        return StageChain(
            (
                Stage("submit", "client", "PSI/J submit called", Precision.US),
                Stage(STAGE_QUEUED, SOURCE, "PSI/J saw the job queued", p, polled=True),
                Stage(STAGE_ACTIVE, SOURCE, "PSI/J saw the job running", p, polled=True),
                Stage(STAGE_END, SOURCE, "PSI/J saw the job end", p, polled=True),
                Stage("client_done", "client", "client saw the end", Precision.US),
            ),
            (
                Segment("submit_call", "submit", STAGE_QUEUED),
                Segment("queue_wait", STAGE_QUEUED, STAGE_ACTIVE),
                Segment("run", STAGE_ACTIVE, STAGE_END),
                Segment("notice", STAGE_END, "client_done"),
            ),
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(
            fetch_output=False,
            server_events=True,
            queue_length=False,
            max_concurrent_submits=self.options.max_concurrent_submits,
        )

    # ---- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Import PSI/J (on the loop's thread: its local executor installs a SIGCHLD
        handler), build the executor with a fast poll interval, register the callback."""
        o = self.options
        psij = import_psij()
        cls = executor_class(psij, o.executor)
        config = make_config(psij, cls, o)
        self._precision_ns = int(precision_s(psij, cls, o) * Precision.S)
        try:
            executor = psij.JobExecutor.get_instance(o.executor, url=o.url, config=config)
        except Exception as exc:
            raise BackendError(
                f"PSI/J executor {o.executor!r} did not start: {exc}",
                where="backend.options.executor",
                fix="check the executor's url and config options",
            ) from None
        self._psij, self._executor = psij, executor
        self._loop = asyncio.get_running_loop()
        self._pool = ThreadPoolExecutor(o.max_concurrent_submits, thread_name_prefix="gb-psij")
        executor.set_job_status_callback(self._on_status)

    async def close(self) -> None:
        """Stop listening and stop the executor's poll thread (jobs are left alone)."""
        if self._executor is not None:
            self._executor.set_job_status_callback(lambda job, status: None)
            poller = getattr(self._executor, "_queue_poll_thread", None)
            if poller is not None:
                poller.done = True
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._loop = None

    # ---- callbacks (PSI/J threads) ------------------------------------------------------

    def _on_status(self, job: Any, status: Any) -> None:
        """PSI/J status callback: copy what is needed and pass it to the event loop."""
        loop, native = self._loop, job.native_id
        if loop is None or native is None:
            return
        change = _Change(
            str(native),
            status.state.name,
            self._clock.now_ns(),
            status.exit_code,
            status.message or "",
        )
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is listening
            loop.call_soon_threadsafe(self._apply, change)

    def _apply(self, c: _Change) -> None:
        """On the loop: record the state and stamp its stage."""
        st = map_state(c.state, c.exit_code, c.message)
        self._states[c.native_id] = st
        _, stage = STATE_MAP.get(c.state, (JobState.UNKNOWN, None))
        if stage is None:
            return
        attrs: dict[str, Any] = {"psij_state": c.state}
        if c.exit_code is not None:
            attrs["exit_code"] = c.exit_code
        if st.state.terminal and st.state is not JobState.DONE:
            attrs["status"] = st.state.value  # a failure at this stage, not a passage
        self._events.append(
            Event(c.native_id, stage, c.t_ns, SOURCE, self._precision_ns, attrs=attrs)
        )
        if st.state.terminal:
            self._jobs.pop(c.native_id, None)

    # ---- operations ---------------------------------------------------------------------

    def _spec(self, job: JobRequest) -> Any:
        psij, o = self._psij, self.options
        custom = dict(o.custom_attributes)
        if o.executor == "slurm":  # PSI/J 0.9's slurm template ignores the spec's name
            custom.setdefault("slurm.job-name", job.name)
        attrs = psij.JobAttributes(
            queue_name=o.queue, account=o.account, custom_attributes=custom or None
        )
        if o.time_limit_s is not None:
            attrs.duration = timedelta(seconds=o.time_limit_s)
        resources = None
        if job.tasks is not None or job.nodes is not None:
            resources = psij.ResourceSpecV1(node_count=job.nodes, process_count=job.tasks)
        return psij.JobSpec(
            executable=job.command[0],
            arguments=list(job.command[1:]),
            name=job.name,
            directory=o.directory,
            environment=dict(o.environment) or None,
            attributes=attrs,
            launcher=o.launcher,
            resources=resources,
        )

    def job_size_problem(self, tasks: int | None, nodes: int | None) -> str | None:
        """PSI/J's ResourceSpecV1 takes both; its local executor has this one host only."""
        if self.options.executor == "local" and nodes is not None and nodes > 1:
            return (
                f"job.nodes is {nodes} but PSI/J's local executor runs on this host only; "
                "use a batch executor (slurm) for jobs spanning nodes"
            )
        return None

    def _submit_blocking(self, job: JobRequest) -> Any:
        pj = self._psij.Job(self._spec(job))
        self._executor.submit(pj)
        return pj

    async def submit(self, job: JobRequest) -> str:
        """``executor.submit`` on the pool. If the runner's time-out abandons the call, the
        job is cancelled as soon as PSI/J returns it, so nothing runs untracked."""
        if self._executor is None or self._pool is None:
            raise SubmitError(FAIL_SUBMIT_ERROR, "the psij backend is not open")
        if not job.command:
            raise SubmitError(FAIL_SUBMIT_ERROR, "job.command is empty")
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._pool, self._submit_blocking, job)
        try:
            pj = await asyncio.shield(fut)
        except asyncio.CancelledError:
            fut.add_done_callback(self._cancel_abandoned)
            raise
        except self._psij.InvalidJobException as exc:
            raise SubmitError(FAIL_SUBMIT_REJECTED, _message(exc)) from None
        except self._psij.SubmitException as exc:
            raise SubmitError(_submit_kind(exc), _message(exc)) from None
        except Exception as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"PSI/J: {type(exc).__name__}: {exc}") from None
        native = str(pj.native_id)
        self._jobs[native] = pj
        self._states.setdefault(native, JobStatus(JobState.QUEUED))
        self.accepted += 1
        return native

    def _cancel_abandoned(self, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is not None or self._pool is None:
            return
        pj = fut.result()
        log.warning("psij: cancelling job %s, submitted after its time-out", pj.native_id)
        with contextlib.suppress(RuntimeError):
            self._pool.submit(_cancel_quietly, pj)

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        """States from the callback-maintained table (no PSI/J call)."""
        return {i: self._states[i] for i in ids if i in self._states}

    async def cancel(self, ids: Sequence[str]) -> None:
        """``job.cancel()`` for each job, on the pool; unknown ids are an error."""
        unknown = [i for i in ids if i not in self._states]
        if unknown:
            raise BackendError(
                f"{len(unknown)} job(s) were not submitted by this gridbench process, e.g. "
                f"{unknown[0]!r}",
                where="psij backend",
                fix="cancel them with the scheduler's own tool (e.g. scancel ID)",
            )
        jobs = [self._jobs[i] for i in ids if i in self._jobs]
        if not jobs or self._pool is None:
            return
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(loop.run_in_executor(self._pool, j.cancel) for j in jobs), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise BackendError(
                f"PSI/J could not cancel {len(errors)} of {len(jobs)} jobs: {_message(errors[0])}",
                where="psij backend",
                fix="check the scheduler is reachable; cancel leftovers with its own tool",
            )

    async def fetch_output(self, backend_id: str) -> bytes:
        raise BackendError(
            "the psij backend does not keep job output",
            where="backend psij",
            fix="have the job write its output to a file",
        )

    async def server_events(self) -> list[Event]:
        """PSI/J status stamps since the last call."""
        ev, self._events = self._events, []
        return ev

    async def queue_length(self) -> int | None:
        return None


def _message(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    inner = getattr(exc, "exception", None)
    if inner is not None:
        text = f"{text}: {inner}"
    return text.replace("\n", "; ")[:500] or type(exc).__name__


def _submit_kind(exc: BaseException) -> str:
    """A SubmitException is a refusal when the scheduler said why, else an error."""
    text = _message(exc).lower()
    refusals = ("invalid", "rejected", "denied", "not allowed", "submission failed")
    return FAIL_SUBMIT_REJECTED if any(r in text for r in refusals) else FAIL_SUBMIT_ERROR


def _cancel_quietly(job: Any) -> None:
    try:
        job.cancel()
    except Exception as exc:
        log.warning("psij: cancel of job %s failed: %s", job.native_id, exc)
