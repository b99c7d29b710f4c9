"""The Grid Engine backend: qsub to submit, one ``qstat -xml`` per status sweep, qdel.

Every Grid Engine call is a child process with an argv list (never a shell) and a
time-out. qstat lists only jobs that have not ended; those that left it are resolved from
the accounting file, read incrementally (never one ``qacct`` per job). Chain:
``submit -> sge_submit -> sge_start -> sge_end -> client_done``; the server stamps are the
accounting file's whole seconds (see :mod:`gridbench.jobflow.backends.sge.parse`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobRequest, JobState, JobStatus, SubmitError
from gridbench.jobflow.backends.batch_cli import BatchSchedulerBackend, short, with_bin_dir
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.backends.sge.parse import (
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
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_ERROR,
    Event,
    Precision,
)

log = logging.getLogger(__name__)
SOURCE = "sge_qmaster"
AGENT = "sge"
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


class SgeBackend(BatchSchedulerBackend):
    """Adapter to a Grid Engine cell through its command-line clients."""

    name: ClassVar[str] = "sge"
    cancel_program: ClassVar[str] = "qdel"
    cancel_chunk: ClassVar[int] = CANCEL_CHUNK
    cancel_gone: ClassVar[str] = "does not exist"
    hold_flag: ClassVar[str] = "-h"  # a user hold (qsub -h): the job waits in state hqw
    output_example: ClassVar[str] = "/shared/gridbench/$JOB_ID.out"
    fix_reach: ClassVar[str] = FIX_REACH
    fix_install: ClassVar[str] = FIX_INSTALL

    def __init__(self, options: SgeOptions | None = None) -> None:
        self.options = options or SgeOptions()
        o = self.options
        env = with_bin_dir({**os.environ, **o.env}, o.bin_dir)
        env["SGE_ROOT"] = o.sge_root or env.get("SGE_ROOT") or "/var/lib/gridengine"
        env["SGE_CELL"] = o.sge_cell or env.get("SGE_CELL") or "default"
        super().__init__(env, o)
        cell = Path(env["SGE_ROOT"]) / env["SGE_CELL"]
        self.accounting = Path(o.accounting) if o.accounting else cell / "common" / "accounting"
        self._tail = AccountingTail(self.accounting)
        self._watched: set[str] = set()
        self._records: dict[str, AcctRecord] = {}
        self._cancelled: set[str] = set()
        self._out: list[Event] = []

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

    # ---- running clients ----------------------------------------------------------------

    async def _qstat(self, kind: str, *extra: str) -> dict[str, QstatJob]:
        r = await self._checked(kind, ["qstat", "-xml", *extra])
        if r.rc != 0:
            raise BackendError(
                f"qstat failed (exit {r.rc}): {short(r.err)}", where=kind, fix=FIX_REACH
            )
        try:
            return parse_qstat_xml(r.out)
        except SgeParseError as exc:
            raise BackendError(str(exc), where=kind, fix=FIX_REACH) from None

    # ---- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Check the clients, the qmaster and the accounting file's directory."""
        self._require(("qsub", "qstat", "qdel"))
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

    def submit_argv(self, job: JobRequest) -> list[str]:
        """qsub in binary mode (no job script; qsub itself is run without a shell)."""
        o = self.options
        argv = ["qsub", "-terse", "-b", "y", "-N", _job_name(job.name), "-j", "y"]
        argv += ["-o", o.output]
        if o.queue:
            argv += ["-q", o.queue]
        # execd runs a binary job as ``sh -c "<arguments joined by spaces>"``: quote each
        # one so that the job gets exactly its argv (checked on Son of Grid Engine 8.1.9)
        return [*argv, *o.qsub_args, *(shlex.quote(a) for a in job.command or ("true",))]

    def check_job(self, job: JobRequest) -> None:
        """A command starting with ``-`` would be one of qsub's options."""
        if job.command and job.command[0].startswith("-"):
            raise SubmitError(
                FAIL_SUBMIT_ERROR, f"qsub would read the command {job.command[0]!r} as an option"
            )

    def submit_refused(self, stderr: str) -> SubmitError:
        return SubmitError(qsub_failure_kind(stderr), qsub_message(stderr))

    def parse_submit_output(self, stdout: str) -> str:
        return parse_qsub_id(stdout)  # an SgeParseError is a ValueError

    def track(self, backend_id: str) -> None:
        self._watched.add(backend_id)

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
        """qdel with explicit ids (chunked); jobs that already ended are not an error.
        A job deleted while pending leaves no accounting record: remembered here."""
        self._cancelled.update(ids)
        await super().cancel(ids)

    def output_path(self, backend_id: str) -> Path:
        """The ``output`` pattern with $JOB_ID replaced by the id."""
        return Path(self.options.output.replace("$JOB_ID", backend_id))

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
