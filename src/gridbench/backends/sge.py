"""The Grid Engine backend: qsub to submit, one ``qstat -xml`` per status sweep, qdel.

Every Grid Engine call is a child process with an argv list (never a shell) and a
time-out. qstat lists only jobs that have not ended; those that left it are resolved from
the accounting file, read incrementally (never one ``qacct`` per job). Chain:
``submit -> sge_submit -> sge_start -> sge_end -> client_done``; the server stamps are the
accounting file's whole seconds (see :mod:`gridbench.backends.sge_parse`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from gridbench.backends.base import Capabilities, JobRequest, JobState, JobStatus, SubmitError
from gridbench.backends.cli_run import CliResult, checked_call, run_cli, submit_call
from gridbench.backends.options import parse_options
from gridbench.backends.sge_parse import (
    STAGE_END,
    STAGE_START,
    STAGE_SUBMIT,
    AcctRecord,
    QstatJob,
    SgeParseError,
    parse_accounting,
    parse_qstat_xml,
    parse_qsub_id,
    qsub_failure_kind,
    qsub_message,
)
from gridbench.errors import BackendError
from gridbench.events.chain import Segment, Stage, StageChain
from gridbench.events.model import (
    FAIL_SUBMIT_ERROR,
    Event,
    Precision,
)

log = logging.getLogger(__name__)
SOURCE = "sge_qmaster"
AGENT = "sge"
OUTPUT_LIMIT = 64 * 1024
CANCEL_CHUNK = 500
FIX_REACH = (
    "start sge_qmaster and sge_execd, and set backend.options.sge_root / sge_cell (or env "
    "SGE_ROOT, SGE_CELL) to the cell; 'qstat -f' must answer"
)
FIX_INSTALL = "install the Grid Engine clients (Debian: gridengine-client) or set bin_dir"


class SgeOptions(BaseModel):
    """``backend.options`` of the sge backend (docs/backends.md)."""

    model_config = ConfigDict(extra="forbid")
    sge_root: str | None = Field(default=None, description="SGE_ROOT; else env or Debian's")
    sge_cell: str | None = Field(default=None, description="SGE_CELL; else env or default")
    env: dict[str, str] = Field(default_factory=dict, description="extra client environment")
    bin_dir: str | None = Field(default=None, description="where qsub & co. are; else PATH")
    queue: str | None = Field(default=None, description="qsub -q")
    qsub_args: list[str] = Field(default_factory=list, description="extra qsub arguments")
    output: str = Field(default="/dev/null", description="qsub -j y -o; $JOB_ID allowed")
    accounting: str | None = Field(
        default=None, description="accounting file; else $SGE_ROOT/$SGE_CELL/common/accounting"
    )
    command_timeout_s: float = Field(default=30.0, gt=0)
    max_concurrent_submits: int = Field(default=8, ge=1, le=1024)


class AccountingTail:
    """Reads the lines appended to the accounting file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def skip_existing(self) -> None:
        """Start after what the file holds now (older jobs are not ours)."""
        with contextlib.suppress(OSError):
            self.offset = self.path.stat().st_size

    def read(self) -> list[AcctRecord]:
        """Records of the complete lines appended since the last call."""
        try:
            with self.path.open("rb") as f:
                size = f.seek(0, os.SEEK_END)
                if size < self.offset:  # truncated or rotated: start again
                    self.offset = 0
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []  # written when the first job ends
        end = data.rfind(b"\n") + 1
        self.offset += end
        records, problems = parse_accounting(data[:end].decode(errors="replace"))
        for p in problems[:5]:
            log.warning("%s: skipped a line: %s", self.path, p)
        return records


class SgeBackend:
    """Adapter to a Grid Engine cell through its command-line clients."""

    name: ClassVar[str] = "sge"

    def __init__(self, options: SgeOptions | None = None) -> None:
        self.options = options or SgeOptions()
        o = self.options
        self._env = {**os.environ, **o.env}
        self._env["SGE_ROOT"] = o.sge_root or self._env.get("SGE_ROOT") or "/var/lib/gridengine"
        self._env["SGE_CELL"] = o.sge_cell or self._env.get("SGE_CELL") or "default"
        if o.bin_dir:
            self._env["PATH"] = f"{o.bin_dir}{os.pathsep}{self._env.get('PATH', '')}"
        cell = Path(self._env["SGE_ROOT"]) / self._env["SGE_CELL"]
        self.accounting = Path(o.accounting) if o.accounting else cell / "common" / "accounting"
        self._tail = AccountingTail(self.accounting)
        self._submits = asyncio.Semaphore(o.max_concurrent_submits)
        self._watched: set[str] = set()
        self._records: dict[str, AcctRecord] = {}
        self._cancelled: set[str] = set()
        self._out: list[Event] = []
        self.calls: Counter[str] = Counter()  # Grid Engine client calls by kind
        self.accepted = 0  # jobs qsub returned an id for

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SgeBackend:
        return cls(parse_options(SgeOptions, options, cls.name))

    # ---- description --------------------------------------------------------------------

    def stage_chain(self) -> StageChain:
        """The Grid Engine chain; server stamps are the accounting file's whole seconds."""
        return StageChain(
            (
                Stage("submit", "client", "qsub called", Precision.US),
                Stage(STAGE_SUBMIT, SOURCE, "qmaster accepted the job", Precision.S),
                Stage(STAGE_START, SOURCE, "job started on the host", Precision.S),
                Stage(STAGE_END, SOURCE, "job ended", Precision.S),
                Stage("client_done", "client", "client saw the end", Precision.US),
            ),
            (
                Segment("submit_rpc", "submit", STAGE_SUBMIT),
                Segment("queue_wait", STAGE_SUBMIT, STAGE_START),
                Segment("run", STAGE_START, STAGE_END),
                Segment("notice", STAGE_END, "client_done"),
            ),
        )

    def capabilities(self) -> Capabilities:
        """Server events and queue length always; job output when ``output`` keeps it."""
        return Capabilities(
            fetch_output=self.options.output != "/dev/null",
            server_events=True,
            queue_length=True,
            max_concurrent_submits=self.options.max_concurrent_submits,
        )

    # ---- running clients ----------------------------------------------------------------

    async def _cli(self, kind: str, argv: Sequence[str], user: str | None = None) -> CliResult:
        """Run one Grid Engine client (as ``user`` if given); kill it on time-out."""
        self.calls[kind] += 1
        return await run_cli(argv, self._env, self.options.command_timeout_s, user)

    async def _checked(self, kind: str, argv: Sequence[str]) -> CliResult:
        """Run a client for status/cancel; failing to run it at all is a BackendError."""
        self.calls[kind] += 1
        return await checked_call(
            argv,
            self._env,
            self.options.command_timeout_s,
            where=kind,
            fix_reach=FIX_REACH,
            fix_install=FIX_INSTALL,
        )

    async def _qstat(self, kind: str, *extra: str) -> dict[str, QstatJob]:
        r = await self._checked(kind, ["qstat", "-xml", *extra])
        if r.rc != 0:
            raise BackendError(
                f"qstat failed (exit {r.rc}): {_short(r.err)}", where=kind, fix=FIX_REACH
            )
        try:
            return parse_qstat_xml(r.out)
        except SgeParseError as exc:
            raise BackendError(str(exc), where=kind, fix=FIX_REACH) from None

    # ---- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Check the clients, the qmaster and the accounting file's directory."""
        for tool in ("qsub", "qstat", "qdel"):
            if shutil.which(tool, path=self._env.get("PATH")) is None:
                raise BackendError(f"{tool} is not found", where="sge backend", fix=FIX_INSTALL)
        await self._qstat("qstat -xml (open)")
        if not self.accounting.parent.is_dir():
            raise BackendError(
                f"the accounting file's directory {self.accounting.parent} does not exist",
                where="backend.options.accounting",
                fix="give the cell's accounting file (reporting_params accounting=true)",
            )
        self._tail.skip_existing()

    async def close(self) -> None:
        """Nothing to release: every call is its own process."""

    # ---- jobs ---------------------------------------------------------------------------

    def _qsub_argv(self, job: JobRequest) -> list[str]:
        o = self.options
        argv = ["qsub", "-terse", "-b", "y", "-N", _job_name(job.name), "-j", "y"]
        argv += ["-o", o.output]
        if o.queue:
            argv += ["-q", o.queue]
        # execd runs a binary job as ``sh -c "<arguments joined by spaces>"``: quote each
        # one so that the job gets exactly its argv (checked on Son of Grid Engine 8.1.9)
        return [*argv, *o.qsub_args, *(shlex.quote(a) for a in job.command or ("true",))]

    async def submit(self, job: JobRequest) -> str:
        """qsub in binary mode (no job script; qsub itself is run without a shell)."""
        if job.command and job.command[0].startswith("-"):
            raise SubmitError(
                FAIL_SUBMIT_ERROR, f"qsub would read the command {job.command[0]!r} as an option"
            )
        async with self._submits:
            r = await submit_call(
                self._cli("qsub", self._qsub_argv(job), job.account),
                "qsub",
                self.options.command_timeout_s,
            )
        if r.rc != 0:
            raise SubmitError(qsub_failure_kind(r.err), qsub_message(r.err))
        try:
            bid = parse_qsub_id(r.out)
        except SgeParseError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, str(exc)) from None
        self._watched.add(bid)
        self.accepted += 1
        return bid

    def _read_accounting(self) -> None:
        """New accounting records; those of our jobs give their server stamps."""
        for rec in self._tail.read():
            if rec.job_id not in self._watched or rec.job_id in self._records:
                continue
            self._records[rec.job_id] = rec
            for stage, t in rec.stamps().items():
                attrs = {"from": "accounting"}
                self._out.append(Event(rec.job_id, stage, t, SOURCE, Precision.S, AGENT, 0, attrs))

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        """One ``qstat -xml`` for all jobs; those it no longer lists from the accounting
        file (a job deleted while pending has no record: it is reported cancelled)."""
        listed = await self._qstat("qstat -xml")
        out: dict[str, JobStatus] = {}
        gone = []
        for i in ids:
            job = listed.get(i)
            if job is not None:
                out[i] = job.status()
            else:
                gone.append(i)
        if gone:
            self._read_accounting()
        for i in gone:
            rec = self._records.get(i)
            if rec is not None:
                out[i] = rec.status(cancelled=i in self._cancelled)
            elif i in self._cancelled:
                out[i] = JobStatus(JobState.CANCELLED, "deleted (qdel)")
        return out

    async def cancel(self, ids: Sequence[str]) -> None:
        """qdel with explicit ids (chunked); jobs that already ended are not an error."""
        self._cancelled.update(ids)
        for k in range(0, len(ids), CANCEL_CHUNK):
            chunk = list(ids[k : k + CANCEL_CHUNK])
            r = await self._checked("qdel", ["qdel", *chunk])
            if r.rc != 0 and "does not exist" not in r.err:
                raise BackendError(
                    f"qdel failed (exit {r.rc}): {_short(r.err)}", where="qdel", fix=FIX_REACH
                )

    async def fetch_output(self, backend_id: str) -> bytes:
        """The first 64 KiB of the job's ``output`` file ($JOB_ID replaced by the id)."""
        pattern = self.options.output
        if pattern == "/dev/null":
            raise BackendError(
                "job output is not kept",
                where="backend.options.output",
                fix="set output to a file pattern such as /shared/gridbench/$JOB_ID.out",
            )
        path = Path(pattern.replace("$JOB_ID", backend_id))
        try:
            with path.open("rb") as f:
                return f.read(OUTPUT_LIMIT)
        except OSError as exc:
            raise BackendError(
                f"cannot read the output of job {backend_id}: {exc.strerror or exc}",
                where=str(path),
            ) from None

    async def server_events(self) -> list[Event]:
        """Stamps of our jobs whose accounting records appeared since the last call."""
        self._read_accounting()
        out, self._out = self._out, []
        return out

    async def queue_length(self) -> int | None:
        """Jobs not ended on the whole cell (anyone's): one ``qstat -xml -u '*'``."""
        return len(await self._qstat("qstat -xml -u *", "-u", "*"))


def _job_name(name: str) -> str:
    """A valid ``-N``: Grid Engine refuses ``/ : @ \\ * ?`` and names starting with a digit."""
    clean = "".join("_" if c in "/:@\\*?\n\t\r " else c for c in name) or "gridbench"
    return clean if not clean[0].isdigit() else f"j{clean}"


def _short(text: str) -> str:
    return text.strip().replace("\n", "; ")[:300] or "no message"
