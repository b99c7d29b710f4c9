"""Runs real processes on this machine with a bounded number of slots.

No shell is involved: the job's command is an argv list. Jobs beyond the slot count wait
in a FIFO queue, so the chain is submit -> local_start -> local_end -> client_done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import (
    Capabilities,
    JobRequest,
    JobState,
    JobStatus,
    OrphanStopper,
    SubmitError,
)
from gridbench.jobflow.backends.cli_run import as_user, scrub_secrets
from gridbench.jobflow.backends.operations import HoldingSubmitter
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.backends.spawn import start_time
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_AUTH,
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    Event,
    Precision,
)

OUTPUT_LIMIT = 64 * 1024


class LocalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slots: int = Field(default=os.cpu_count() or 2, ge=1, le=4096)
    queue_limit: int = Field(default=100_000, ge=0)
    env: dict[str, str] = Field(default_factory=dict)


@dataclass(slots=True)
class _Job:
    argv: tuple[str, ...]
    state: JobState = JobState.QUEUED
    proc: asyncio.subprocess.Process | None = None
    output: bytes = b""
    exit_code: int | None = None
    message: str = ""
    run_as: dict[str, Any] = field(default_factory=dict)  # Popen user/group/cwd (accounts)


class LocalBackend:
    name: ClassVar[str] = "local"

    def __init__(self, options: LocalOptions | None = None) -> None:
        self.options = options or LocalOptions()
        self._jobs: dict[str, _Job] = {}
        self._queue: deque[str] = deque()
        self._running = 0
        self._seq = 0
        self._events: list[Event] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._clock = AnchoredClock()  # the same kind of stamps as the client's

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> LocalBackend:
        return cls(parse_options(LocalOptions, options, cls.name))

    def stage_chain(self) -> StageChain:
        us = Precision.US
        return StageChain(
            (
                Stage("submit", "client", "submitted", us),
                Stage("local_start", "local", "process started", us),
                Stage("local_end", "local", "process exited", us),
                Stage("client_done", "client", "client saw the end", us),
            ),
            (
                Segment("queue_wait", "submit", "local_start"),
                Segment("run", "local_start", "local_end"),
                Segment("notice", "local_end", "client_done"),
            ),
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(server_events=True, queue_length=True)

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        await self.cancel([b for b, j in self._jobs.items() if not j.state.terminal])
        # give SIGTERM a moment, then make sure nothing outlives us
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5.0
        while self._running and loop.time() < deadline:
            await asyncio.sleep(0.05)
        for j in self._jobs.values():
            if j.proc is not None and j.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(j.proc.pid, signal.SIGKILL)
        for t in list(self._tasks):
            t.cancel()

    async def submit(self, job: JobRequest) -> str:
        bid = self._accept(job)
        self._queue.append(bid)
        self._pump()
        return bid

    async def submit_held(self, job: JobRequest) -> str:
        """A job that is accepted but never given a slot: it stays queued until cancelled
        (HoldingSubmitter; nothing is started, so it costs no process)."""
        return self._accept(job)

    def _accept(self, job: JobRequest) -> str:
        """Check and record ``job``; its id (a SubmitError if refused)."""
        if not job.command:
            raise SubmitError(FAIL_SUBMIT_ERROR, "job.command is empty")
        if len(self._queue) >= self.options.queue_limit:
            raise SubmitError(FAIL_SUBMIT_REJECTED, "local queue is full")
        run_as: dict[str, Any] = {}
        if job.account is not None:
            try:
                run_as = as_user(job.account)
            except ValueError as exc:
                raise SubmitError(FAIL_SUBMIT_AUTH, str(exc)) from None
        self._seq += 1
        bid = f"local-{os.getpid()}-{self._seq}"
        self._jobs[bid] = _Job(tuple(job.command), run_as=run_as)
        return bid

    def _pump(self) -> None:
        while self._queue and self._running < self.options.slots:
            bid = self._queue.popleft()
            job = self._jobs.get(bid)
            if job is None or job.state is not JobState.QUEUED:
                continue
            self._running += 1
            task = asyncio.create_task(self._run(bid, job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, bid: str, job: _Job) -> None:
        try:
            env = {**os.environ, **self.options.env} if self.options.env else None
            if job.run_as:  # another account's job never sees this process's tokens
                env = scrub_secrets(env if env is not None else os.environ)
            try:
                proc = await asyncio.create_subprocess_exec(
                    *job.argv,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    stdin=asyncio.subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                    **job.run_as,
                )
            except OSError as exc:
                job.state, job.message = JobState.FAILED, f"cannot start {job.argv[0]!r}: {exc}"
                self._stamp(bid, "local_end", {"status": "failed"})
                return
            job.proc, job.state = proc, JobState.RUNNING
            started: dict[str, Any] = {"pid": proc.pid}
            self._stamp(bid, "local_start", started)  # stamped before the lookup below
            # cleanup after a crash signals the pid only while its start time is this one
            started["create_time"] = start_time(proc.pid)
            assert proc.stdout is not None
            chunks: list[bytes] = []
            kept = 0
            while chunk := await proc.stdout.read(65536):
                if kept < OUTPUT_LIMIT:  # keep the first 64 KiB; drain the rest
                    chunks.append(chunk[: OUTPUT_LIMIT - kept])
                    kept += len(chunks[-1])
            out = b"".join(chunks)
            code = await proc.wait()
            job.output, job.exit_code = out, code
            if job.state is not JobState.CANCELLED:
                job.state = JobState.DONE if code == 0 else JobState.FAILED
                if code != 0:
                    job.message = f"exit code {code}"
            end: dict[str, Any] = {"exit_code": code}
            if job.state is not JobState.DONE:  # a failure at this stage, not a passage
                end["status"] = job.state.value
            self._stamp(bid, "local_end", end)
        finally:
            self._running -= 1
            self._pump()

    def _stamp(self, bid: str, stage: str, attrs: dict[str, Any] | None = None) -> None:
        self._events.append(
            Event(bid, stage, self._clock.now_ns(), "local", Precision.US, attrs=attrs or {})
        )

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        out = {}
        for i in ids:
            j = self._jobs.get(i)
            if j is not None:
                out[i] = JobStatus(j.state, j.message, j.exit_code)
        return out

    async def cancel(self, ids: Sequence[str]) -> None:
        unknown = [i for i in ids if i not in self._jobs]
        if unknown:
            raise BackendError(
                f"{len(unknown)} job(s) were started by another gridbench process, e.g. "
                f"{unknown[0]!r}",
                where="local backend",
                fix="local jobs of a crashed run are stopped by 'gridbench cleanup', "
                "which finds their process ids in the event log",
            )
        for i in ids:
            j = self._jobs[i]
            if j.state.terminal:
                continue
            j.state = JobState.CANCELLED
            if j.proc is not None and j.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(j.proc.pid, signal.SIGTERM)

    @staticmethod
    def stop_orphans(pids: Sequence[int]) -> list[int]:
        """Stop the process groups of a crashed run's jobs; return the pids stopped.

        The caller passes only pids whose recorded start time matches (``gridbench cleanup``
        checks it); jobs also run in their own session (pid == session id), which is
        checked again here.
        """
        stopped = []
        for pid in pids:
            try:
                if os.getsid(pid) != pid:
                    continue
                os.killpg(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue
            stopped.append(pid)
        return stopped

    async def fetch_output(self, backend_id: str) -> bytes:
        j = self._jobs.get(backend_id)
        if j is None:
            raise BackendError(f"unknown job {backend_id!r}", where="local backend")
        return j.output

    async def server_events(self) -> list[Event]:
        ev, self._events = self._events, []
        return ev

    async def queue_length(self) -> int | None:
        return len(self._queue) + self._running


if TYPE_CHECKING:  # mypy checks the optional hooks against their protocols
    _stops_orphans: type[OrphanStopper] = LocalBackend
    _holds: type[HoldingSubmitter] = LocalBackend
