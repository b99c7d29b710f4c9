"""What every backend that drives a batch scheduler through its command-line clients
shares: submission with a bounded number of clients at once, cancellation by explicit ids
in chunks, reading a job's output file, and client calls whose failure to run at all is
the backend's (not a job's).

A scheduler's backend (:mod:`~gridbench.jobflow.backends.slurm.backend`,
:mod:`~gridbench.jobflow.backends.sge.backend`)
subclasses :class:`BatchSchedulerBackend` and supplies only its commands, options and
parsing, as PSI/J's ``BatchSchedulerExecutor`` splits the work between the generic
executor and each scheduler's. Every call is a child process with an argv list (never a
shell) and a time-out (:mod:`~gridbench.jobflow.backends.cli_run`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import Capabilities, JobRequest, SubmitError
from gridbench.jobflow.backends.cli_run import CliResult, checked_call, run_cli, submit_call
from gridbench.jobflow.events.model import FAIL_SUBMIT_ERROR

OUTPUT_LIMIT = 64 * 1024  # bytes of a job's output file fetch_output returns
NO_OUTPUT = "/dev/null"  # the ``output`` option's value when job output is not kept


class ClientOptions(Protocol):
    """The options every CLI scheduler backend has (its pydantic options model)."""

    @property
    def command_timeout_s(self) -> float:
        """The time-out of one client call."""
        ...

    @property
    def max_concurrent_submits(self) -> int:
        """Submit clients at once."""
        ...

    @property
    def output(self) -> str:
        """Where a job's output goes (:data:`NO_OUTPUT`: nowhere)."""
        ...


class BatchSchedulerBackend(ABC):
    """The scheduler-independent half of a CLI scheduler backend.

    A subclass sets the class attributes below and implements :meth:`submit_argv`,
    :meth:`submit_refused`, :meth:`parse_submit_output` and :meth:`output_path`; it may
    override :meth:`check_job` and :meth:`track`. It still provides its own stage chain,
    ``open``, ``close``, ``status``, ``server_events`` and ``queue_length``.
    """

    name: ClassVar[str]
    #: the client that cancels jobs by id (``scancel``, ``qdel``)
    cancel_program: ClassVar[str]
    #: ids per cancel call (the command line's length stays bounded)
    cancel_chunk: ClassVar[int]
    #: what the cancel client prints when a job had ended already (not an error)
    cancel_gone: ClassVar[str]
    #: an ``output`` pattern shown in the fix when job output is not kept
    output_example: ClassVar[str]
    #: the fix when the scheduler does not answer, and when its clients are missing
    fix_reach: ClassVar[str]
    fix_install: ClassVar[str]
    #: the submit client's option that holds a job in the queue (``--hold``, ``-h``)
    hold_flag: ClassVar[str]

    def __init__(
        self,
        env: dict[str, str],
        options: ClientOptions,
        *,
        query_env: dict[str, str] | None = None,
    ) -> None:
        """``env`` is the submit clients' environment (jobs may inherit it); status and
        cancel clients get ``query_env`` when given (a time zone to parse in, say)."""
        self._env = env
        self._query_env = env if query_env is None else query_env
        self._timeout_s = options.command_timeout_s
        self._max_submits = options.max_concurrent_submits
        self._output = options.output
        # submit clients at once: each is a process on the submit host and an RPC to the
        # scheduler, and a burst of hundreds would measure the host, not the scheduler
        self._submits = asyncio.Semaphore(self._max_submits)
        self.calls: Counter[str] = Counter()  # client calls by kind (tests, reports)
        self.accepted = 0  # jobs the submit client returned an id for

    # ---- what a scheduler supplies ------------------------------------------------------

    @abstractmethod
    def submit_argv(self, job: JobRequest) -> list[str]:
        """The submit client's argv for one job (its ``argv[0]`` names the call)."""

    @abstractmethod
    def submit_refused(self, stderr: str) -> SubmitError:
        """The SubmitError (kind and message) of a submit client that exited non-zero."""

    @abstractmethod
    def parse_submit_output(self, stdout: str) -> str:
        """The job id in the submit client's output; a ValueError when there is none."""

    @abstractmethod
    def output_path(self, backend_id: str) -> Path:
        """The file the ``output`` pattern names for a job (a BackendError if it cannot)."""

    def check_job(self, job: JobRequest) -> None:
        """Refuse (SubmitError) a job the submit client cannot take; all by default."""
        return None

    def track(self, backend_id: str) -> None:
        """Note an id the submit client returned (for server stamps); nothing by default."""
        return None

    # ---- running clients ----------------------------------------------------------------

    async def _cli(
        self,
        kind: str,
        argv: Sequence[str],
        timeout: float | None = None,
        user: str | None = None,
    ) -> CliResult:
        """Run one client (as ``user`` if given); kill it on time-out or cancellation."""
        self.calls[kind] += 1
        return await run_cli(argv, self._env, timeout or self._timeout_s, user)

    async def _checked(self, kind: str, argv: Sequence[str]) -> CliResult:
        """Run a client for status/cancel; failing to run it at all is a BackendError
        naming ``kind``."""
        self.calls[kind] += 1
        return await checked_call(
            argv,
            self._query_env,
            self._timeout_s,
            where=kind,
            fix_reach=self.fix_reach,
            fix_install=self.fix_install,
        )

    def _require(self, tools: Sequence[str]) -> None:
        """A BackendError naming the first of ``tools`` not found on the clients' PATH."""
        for tool in tools:
            if shutil.which(tool, path=self._env.get("PATH")) is None:
                raise BackendError(
                    f"{tool} is not found", where=f"{self.name} backend", fix=self.fix_install
                )

    # ---- operations ---------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        """Server events and queue length always; job output when ``output`` keeps it."""
        return Capabilities(
            fetch_output=self._output != NO_OUTPUT,
            server_events=True,
            queue_length=True,
            max_concurrent_submits=self._max_submits,
        )

    async def submit(self, job: JobRequest) -> str:
        """Run the submit client for one job; a refusal or time-out raises SubmitError
        with the client's words.

        If the runner's submit time-out cancels the call, the client is killed; the
        scheduler may still have accepted that job (it then runs untracked).
        """
        self.check_job(job)
        bid = await self._submit_cli(self.submit_argv(job), job.account)
        self.track(bid)
        self.accepted += 1
        return bid

    async def submit_held(self, job: JobRequest) -> str:
        """Submit ``job`` held (the submit client with :attr:`hold_flag` right after its
        name): it stays queued, never runs, until it is cancelled (HoldingSubmitter)."""
        self.check_job(job)
        argv = self.submit_argv(job)
        bid = await self._submit_cli([argv[0], self.hold_flag, *argv[1:]], job.account)
        self.track(bid)
        self.accepted += 1
        return bid

    async def _submit_cli(self, argv: Sequence[str], account: str | None) -> str:
        """Run one submit client (as ``account``), within the concurrency limit; its id."""
        program = argv[0]
        async with self._submits:
            r = await submit_call(self._cli(program, argv, user=account), program, self._timeout_s)
        if r.rc != 0:
            raise self.submit_refused(r.err)
        try:
            return self.parse_submit_output(r.out)
        except ValueError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, str(exc)) from None

    def cancel_client(self) -> tuple[str, str | None]:
        """The cancel program and where it resolves on this backend's PATH
        (:class:`~gridbench.jobflow.backends.base.CancelClient`)."""
        prog = self.cancel_program
        return prog, shutil.which(prog, path=self._env.get("PATH"))

    async def cancel(self, ids: Sequence[str]) -> None:
        """The cancel client with explicit ids (never a user-wide pattern), in chunks;
        jobs that already ended are not an error."""
        todo = list(ids)
        prog = self.cancel_program
        for k in range(0, len(todo), self.cancel_chunk):
            chunk = todo[k : k + self.cancel_chunk]
            r = await self._checked(prog, [prog, *chunk])
            if r.rc != 0 and self.cancel_gone not in r.err:
                raise BackendError(
                    f"{prog} failed (exit {r.rc}): {short(r.err)}", where=prog, fix=self.fix_reach
                )

    async def fetch_output(self, backend_id: str) -> bytes:
        """The first 64 KiB of the job's ``output`` file."""
        if self._output == NO_OUTPUT:
            raise BackendError(
                "job output is not kept",
                where="backend.options.output",
                fix=f"set output to a file pattern such as {self.output_example}",
            )
        path = self.output_path(backend_id)
        try:
            with path.open("rb") as f:
                return f.read(OUTPUT_LIMIT)
        except OSError as exc:
            raise BackendError(
                f"cannot read the output of job {backend_id}: {exc.strerror or exc}",
                where=str(path),
            ) from None


def short(text: str) -> str:
    """A client's message on one line, at most 300 characters."""
    return text.strip().replace("\n", "; ")[:300] or "no message"


def with_bin_dir(env: Mapping[str, str], bin_dir: str | None) -> dict[str, str]:
    """``env`` with ``bin_dir`` (where the clients are) first on PATH, when given."""
    out = dict(env)
    if bin_dir:
        out["PATH"] = f"{bin_dir}{os.pathsep}{out.get('PATH', '')}"
    return out
