"""The Slurm backend: sbatch (or slurmrestd) to submit, one ``squeue`` (``-O`` text or
``--json``; or REST ``/jobs``) per status sweep, scancel.

Every Slurm call is a child process with an argv list (never a shell) and a time-out.
Chain: ``submit -> slurm_submit -> slurm_eligible -> slurm_start -> slurm_end ->
client_done``. Server stamps come from the job records (1 s) and, where the slurmctld log
is readable and written with ``LogTimeFormat=iso8601_ms``, from its lines (1 ms; they win,
see :mod:`gridbench.jobflow.backends.slurm.stamps`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from zoneinfo import ZoneInfo

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import BulkSubmitter, JobRequest, JobStatus, SubmitError
from gridbench.jobflow.backends.batch_cli import short, with_bin_dir
from gridbench.jobflow.backends.cli_run import CliResult, scrub_secrets
from gridbench.jobflow.backends.operations import (
    CredentialIssuer,
    HoldingSubmitter,
    NodeReserver,
    Reserver,
)
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.backends.slurm.ctld_log import (
    STAGE_ELIGIBLE,
    STAGE_END,
    STAGE_START,
    STAGE_SUBMIT,
    parse_log,
)
from gridbench.jobflow.backends.slurm.log import LogTail
from gridbench.jobflow.backends.slurm.ops import SlurmOperations
from gridbench.jobflow.backends.slurm.options import SlurmOptions, minutes
from gridbench.jobflow.backends.slurm.parse import (
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    SlurmJob,
    SlurmParseError,
    parse_sacct,
    parse_sbatch_id,
    parse_scontrol_jobs,
    parse_squeue_json,
    parse_squeue_text,
    sbatch_failure_kind,
    sbatch_message,
)
from gridbench.jobflow.backends.slurm.rest import (
    Credential,
    SlurmRest,
    load_credential,
)
from gridbench.jobflow.backends.slurm.stamps import SOURCE, StampBook
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.model import FAIL_SUBMIT_AUTH, FAIL_SUBMIT_ERROR, Event, Precision

log = logging.getLogger(__name__)
CANCEL_CHUNK = 1000
MS_LOG_FORMATS = ("iso8601_ms", "rfc5424_ms")
FIX_REACH = (
    "start slurmctld, or point backend.options.conf (or env SLURM_CONF) at the cluster's "
    "slurm.conf; 'scontrol ping' must say UP"
)
FIX_INSTALL = "install the Slurm clients (Debian: slurm-client) or set backend.options.bin_dir"


class SlurmBackend(SlurmOperations):
    """Adapter to a Slurm cluster through its command-line clients; held submission,
    reservations and tokens come from :class:`SlurmOperations`."""

    name: ClassVar[str] = "slurm"
    cancel_program: ClassVar[str] = "scancel"
    cancel_chunk: ClassVar[int] = CANCEL_CHUNK
    cancel_gone: ClassVar[str] = "already completing or completed"
    hold_flag: ClassVar[str] = "--hold"  # pending with reason JobHeldUser until cancelled
    output_example: ClassVar[str] = "/shared/gridbench/%j.out"
    fix_reach: ClassVar[str] = FIX_REACH
    fix_install: ClassVar[str] = FIX_INSTALL

    def __init__(self, options: SlurmOptions | None = None) -> None:
        self.options = options or SlurmOptions()
        o = self.options
        # the environment tokens are read from; children get it without them (below)
        self._token_env = {**os.environ, **o.env}
        env = scrub_secrets(self._token_env, [o.rest.token_env] if o.rest else [])
        if o.conf:
            env["SLURM_CONF"] = o.conf
        env = with_bin_dir(env, o.bin_dir)
        self._tz: tzinfo | None = ZoneInfo(o.log_timezone) if o.log_timezone else None
        super().__init__(
            env,
            o,
            # squeue, scontrol and sacct print times in their own local zone: make it the
            # zone they are parsed in (not for sbatch, whose environment the jobs inherit)
            query_env={**env, "TZ": o.log_timezone} if o.log_timezone else env,
        )
        self._book = StampBook()
        self._log: LogTail | None = None
        self._rest = SlurmRest(o.rest) if o.rest is not None else None
        self._creds: dict[tuple[str | None, str | None, str | None], Credential] = {}
        self._script_text: str | None = None
        self._arrays: set[str] = set()  # ids of the job arrays submitted here
        self._max_array = 1001  # Slurm's default MaxArraySize; read at open()

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SlurmBackend:
        return cls(parse_options(SlurmOptions, options, cls.name))

    # ---- description --------------------------------------------------------------------

    @property
    def log_stamps(self) -> bool:
        """Whether millisecond stamps are read from the controller log."""
        return self._log is not None

    def stage_chain(self) -> StageChain:
        """The Slurm chain; 1 ms when the controller log is read (slurm_stamps: a held
        job's eligible stamp is still 1 s, and so is an end with no log line)."""
        fine = Precision.MS if self.log_stamps else Precision.S
        return StageChain(
            (
                Stage("submit", "client", "sbatch called", Precision.US),
                Stage(STAGE_SUBMIT, SOURCE, "controller accepted the job", fine),
                Stage(STAGE_ELIGIBLE, SOURCE, "job eligible to run", fine),
                Stage(STAGE_START, SOURCE, "job allocated and started", fine),
                Stage(STAGE_END, SOURCE, "job completed", fine),
                Stage("client_done", "client", "client saw the end", Precision.US),
            ),
            (
                Segment("submit_rpc", "submit", STAGE_SUBMIT),
                Segment("eligibility", STAGE_SUBMIT, STAGE_ELIGIBLE),
                Segment("queue_wait", STAGE_ELIGIBLE, STAGE_START),
                Segment("run", STAGE_START, STAGE_END),
                Segment("notice", STAGE_END, "client_done"),
            ),
        )

    # ---- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Check the configuration, the clients, the controller, the partition and the log."""
        o = self.options
        if o.conf and not Path(o.conf).is_file():
            raise BackendError(
                f"slurm.conf {o.conf!r} does not exist",
                where="backend.options.conf",
                fix="give the path of the cluster's slurm.conf",
            )
        tools = ["squeue", "scontrol", "scancel"] + (["sacct"] if o.use_sacct else [])
        if o.submit_via == "sbatch":
            tools.append("sbatch")
        self._require(tools)
        ping = await self._ask("scontrol ping", ["scontrol", "ping"])
        if " is UP" not in ping.out:
            said = (ping.out + ping.err).strip().replace("\n", "; ")[:300]
            raise BackendError(
                f"the Slurm controller is not reachable: {said or 'no answer'}",
                where="scontrol ping",
                fix=FIX_REACH,
            )
        if o.partition:
            part = await self._ask(
                "scontrol show partition", ["scontrol", "show", "partition", o.partition]
            )
            if part.rc != 0:
                raise BackendError(
                    f"partition {o.partition!r} does not exist: {part.err.strip()[:200]}",
                    where="backend.options.partition",
                    fix="use one 'sinfo -s' lists",
                )
        conf = _config(
            (await self._ask("scontrol show config", ["scontrol", "show", "config"])).out
        )
        max_array = conf.get("MaxArraySize", "")
        if max_array.isdigit() and int(max_array) > 0:
            self._max_array = int(max_array)
        await self._open_log(conf)
        if self._rest is not None and "rest" in (o.submit_via, o.status_via):
            await self._rest.ping(self._credential(None, None, {}))
        if o.submit_via == "rest" and o.script:
            try:
                self._script_text = Path(o.script).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise BackendError(
                    f"cannot read the batch script: {exc}",
                    where="backend.options.script",
                    fix="give a readable text file (slurmrestd takes the script's text)",
                ) from None

    def _credential(
        self, user: str | None, account: str | None, ref: Mapping[str, str]
    ) -> Credential:
        """The JWT of a (virtual) user, read once; the backend's own when none is given."""
        assert self.options.rest is not None
        key = (account or user, ref.get("env"), ref.get("file"))
        cred = self._creds.get(key)
        if cred is None:
            cred = load_credential(
                self.options.rest,
                self._token_env,
                user=account or user,
                token_env=ref.get("env"),
                token_file=ref.get("file"),
            )
            self._creds[key] = cred
        return cred

    async def _ask(self, kind: str, argv: list[str]) -> CliResult:
        """Run a client during ``open()`` with a short time-out."""
        try:
            return await self._cli(kind, argv, timeout=min(self.options.command_timeout_s, 15))
        except TimeoutError:
            raise BackendError(
                f"'{' '.join(argv)}' gave no answer", where="slurm backend", fix=FIX_REACH
            ) from None
        except OSError as exc:
            raise BackendError(f"cannot run {argv[0]}: {exc}", fix=FIX_INSTALL) from None

    async def _open_log(self, conf: dict[str, str]) -> None:
        """Find the controller log and check it has millisecond stamps."""
        want = self.options.controller_log
        if want is None:
            return
        fmt = conf.get("LogTimeFormat", "").lower()
        path = Path(conf.get("SlurmctldLogFile", "")) if want == "auto" else Path(want)
        explicit = want != "auto"
        problem = None
        if fmt not in MS_LOG_FORMATS:
            problem = f"LogTimeFormat is {fmt or 'unknown'!r}, not iso8601_ms"
        elif not str(path) or str(path) in (".", "(null)"):
            problem = "slurmctld logs to syslog (no SlurmctldLogFile)"
        else:
            try:
                self._log = LogTail(path)
                with path.open("rb"):
                    pass
            except OSError as exc:
                self._log, problem = None, f"cannot read {path}: {exc.strerror or exc}"
        if problem is None:
            return
        if explicit:
            raise BackendError(
                f"no millisecond stamps from the controller log: {problem}",
                where="backend.options.controller_log",
                fix="set LogTimeFormat=iso8601_ms in slurm.conf and make the log readable, "
                "or set controller_log: auto (use it when possible) or null",
            )
        log.info("slurm: server stamps at 1 s only (%s)", problem)

    async def close(self) -> None:
        """Stop reading the controller log (jobs are left alone: cancel them explicitly)."""
        self._log = None
        if self._rest is not None:
            await self._rest.close()

    # ---- operations ---------------------------------------------------------------------

    def submit_argv(self, job: JobRequest) -> list[str]:
        """The sbatch argv for one job (no shell: ``--wrap`` gets a shlex-quoted line)."""
        o = self.options
        argv = ["sbatch", "--parsable", f"--job-name={job.name}", f"--output={o.output}"]
        if o.partition:
            argv.append(f"--partition={o.partition}")
        if o.time_limit:
            argv.append(f"--time={o.time_limit}")
        if o.workdir:
            argv.append(f"--chdir={o.workdir}")
        argv += size_args(job)
        if self.reservation is not None:
            argv.append(f"--reservation={self.reservation}")
        argv += o.sbatch_args
        if o.script:
            return [*argv, o.script, *job.command]
        return [*argv, f"--wrap={shlex.join(job.command)}"]

    def job_size_problem(self, tasks: int | None, nodes: int | None) -> str | None:
        """Slurm honours any size; only a size also set in ``sbatch_args`` is ambiguous."""
        clash = [a for a in self.options.sbatch_args if _SIZE_ARG.match(a)]
        if clash and (tasks is not None or nodes is not None):
            return (
                f"backend.options.sbatch_args already size the job ({' '.join(clash)}); "
                "give the size once, in job.tasks / job.nodes"
            )
        return None

    def check_job(self, job: JobRequest) -> None:
        """A job needs a command, or the ``script`` it is the arguments of."""
        if not job.command and not self.options.script:
            raise SubmitError(FAIL_SUBMIT_ERROR, "job.command is empty")

    def submit_refused(self, stderr: str) -> SubmitError:
        return SubmitError(sbatch_failure_kind(stderr), sbatch_message(stderr))

    def parse_submit_output(self, stdout: str) -> str:
        return parse_sbatch_id(stdout)  # a SlurmParseError is a ValueError

    def track(self, backend_id: str) -> None:
        self._book.watch(backend_id)

    async def submit(self, job: JobRequest) -> str:
        """``sbatch --parsable`` (or slurmrestd); a refusal or time-out raises SubmitError
        with sbatch's words.

        If the runner's submit time-out cancels the call, sbatch is killed; the controller
        may still have accepted that job (it then runs untracked, under its gridbench name).
        """
        if self.options.submit_via == "rest":
            self.check_job(job)
            return await self._submit_rest(job)
        return await super().submit(job)

    async def submit_bulk(self, jobs: Sequence[JobRequest]) -> list[str | SubmitError]:
        """Submit jobs as job arrays (``--array=0-N``, or the REST job's ``array``): one
        array per command, account and credential in the call (users interleave), split at
        the cluster's ``MaxArraySize``. Task ``i`` of array ``A`` is tracked as ``A_i``;
        the array is named after its first job. Returns an id or the error, per job.
        """
        out: list[str | SubmitError] = [SubmitError(FAIL_SUBMIT_ERROR, "not submitted")] * len(jobs)
        for group in _array_groups(jobs, self._max_array):
            head = jobs[group[0]]
            try:
                ids = await self._submit_array(head, len(group))
            except SubmitError as exc:
                for k in group:
                    out[k] = exc
                continue
            for k, bid in zip(group, ids, strict=True):
                out[k] = bid
        return out

    async def _submit_array(self, head: JobRequest, n: int) -> list[str]:
        """One array of ``n`` tasks running ``head``'s command as its account."""
        if n == 1:
            return [await self.submit(head)]
        self.check_job(head)
        if self.options.submit_via == "rest":
            array = await self._submit_rest(head, n)
        else:
            argv = self.submit_argv(head)
            argv.insert(1, f"--array=0-{n - 1}")
            array = await self._submit_cli(argv, head.account)
        self._arrays.add(array)
        ids = [f"{array}_{i}" for i in range(n)]
        for bid in ids:
            self._book.watch(bid)
        self.accepted += n
        return ids

    def _rest_job(self, job: JobRequest) -> tuple[dict[str, Any], str]:
        """slurmrestd's job description and script for one job (no shell is involved
        beyond the script's own interpreter: the command is shlex-quoted into it)."""
        o = self.options
        desc: dict[str, Any] = {
            "name": job.name,
            "current_working_directory": o.workdir or "/tmp",
            "standard_output": o.output,
            "environment": {"PATH": self._env.get("PATH", "/usr/bin:/bin")},
        }
        if o.partition:
            desc["partition"] = o.partition
        if o.time_limit:
            desc["time_limit"] = minutes(o.time_limit)
        if job.tasks is not None:
            desc["tasks"] = job.tasks
        if job.nodes is not None:  # exactly that many (v0.0.38 takes "min-max", as --nodes)
            desc["nodes"] = f"{job.nodes}-{job.nodes}"
        if self._script_text is not None:
            desc["argv"] = [o.script or "script", *job.command]
            return desc, self._script_text
        return desc, f"#!/bin/sh\nexec {shlex.join(job.command)}\n"

    async def _submit_rest(self, job: JobRequest, array: int = 0) -> str:
        """``POST job/submit`` with the job's user's token (an ``array`` of that many tasks
        when above 0); an expired token fails the job (``submit_auth``) without a request,
        naming when it expired."""
        assert self._rest is not None
        try:
            cred = self._credential(job.user, job.account, job.credential)
        except BackendError as exc:
            raise SubmitError(FAIL_SUBMIT_AUTH, exc.message) from None
        if cred.expired():
            raise SubmitError(
                FAIL_SUBMIT_AUTH, f"the Slurm JWT of {cred.user} expired at {cred.expiry_text()}"
            )
        desc, script = self._rest_job(job)
        if array:
            desc["array"] = f"0-{array - 1}"
        self.calls["rest submit"] += 1
        async with self._submits:
            bid = await self._rest.submit(cred, desc, script)
        if not array:
            self._book.watch(bid)
            self.accepted += 1
        return bid

    async def _job_dump(self) -> dict[str, SlurmJob]:
        """Every job the controller lists: one ``squeue`` (JSON or ``-O`` text) or one
        REST ``/jobs``."""
        if self.options.status_via == "rest":
            assert self._rest is not None
            self.calls["rest jobs"] += 1
            body = await self._rest.jobs(self._credential(None, None, {}))
            where, source = "slurmrestd GET jobs", "slurmrestd /jobs"
        elif self.options.squeue_format == "text":
            argv = ["squeue", "-h", "-t", "all", "-O", SQUEUE_FORMAT]
            r = await self._checked("squeue -O", argv)
            if r.rc != 0:
                raise BackendError(
                    f"squeue -O failed (exit {r.rc}): {short(r.err)}",
                    where="squeue -O",
                    fix=FIX_REACH,
                )
            try:
                return await asyncio.to_thread(
                    parse_squeue_text, r.out, self._tz, frozenset(self._arrays)
                )
            except SlurmParseError as exc:
                raise BackendError(
                    str(exc), where="squeue -O", fix="set squeue_format: json"
                ) from None
        else:
            r = await self._checked("squeue --json", ["squeue", "--json"])
            if r.rc != 0:
                raise BackendError(
                    f"squeue --json failed (exit {r.rc}): {short(r.err)}",
                    where="squeue --json",
                    fix=FIX_REACH,
                )
            body, where, source = r.out.encode(), "squeue --json", "squeue --json"
        try:  # a big cluster's dump is megabytes: parse it off the event loop
            arrays = frozenset(self._arrays)
            return await asyncio.to_thread(parse_squeue_json, body, source, arrays)
        except SlurmParseError as exc:
            raise BackendError(
                str(exc),
                where=where,
                fix="check that it is Slurm's (22.05 or later) and answers JSON by hand",
            ) from None

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        """One ``squeue`` listing every job (22.05's ``--json`` ignores -j: filtered here),
        then one lookup of the ids squeue no longer lists (sacct in chunks, or one scontrol
        call)."""
        jobs = await self._job_dump()
        found: dict[str, tuple[SlurmJob, str]] = {}
        missing = []
        for i in ids:
            rec = jobs.get(i)
            if rec is None and "_" in i and f"{i.split('_')[0]}_*" in jobs:
                rec = replace(jobs[f"{i.split('_')[0]}_*"], job_id=i)
            if rec is None:
                missing.append(i)
            else:
                found[i] = (rec, "squeue")
        if missing:
            found.update(await self._resolve(missing))
        out = {}
        for i, (rec, origin) in found.items():
            st = rec.status()
            if st.state.terminal:
                self._book.add_final(rec, origin)
            out[i] = st
        return out

    async def _resolve(self, ids: list[str]) -> dict[str, tuple[SlurmJob, str]]:
        """Jobs squeue does not list any more: sacct (chunked) or one scontrol call."""
        out: dict[str, tuple[SlurmJob, str]] = {}
        if self.options.use_sacct:
            n = self.options.resolve_chunk
            for k in range(0, len(ids), n):
                chunk = ids[k : k + n]
                argv = ["sacct", "-X", "-P", f"--format={SACCT_FORMAT}", "-j", ",".join(chunk)]
                r = await self._checked("sacct", argv)
                if r.rc != 0:
                    raise BackendError(
                        f"sacct failed (exit {r.rc}): {short(r.err)}",
                        where="sacct",
                        fix="check slurmdbd, or set backend.options.use_sacct: false",
                    )
                try:
                    got = parse_sacct(r.out, self._tz)
                except SlurmParseError as exc:
                    raise BackendError(str(exc), where="sacct") from None
                out.update((i, (got[i], "sacct")) for i in chunk if i in got)
            return out
        # scontrol takes one id or none (all jobs): never a call per job
        argv = ["scontrol", "show", "job", "-o", *(ids if len(ids) == 1 else [])]
        r = await self._checked("scontrol show job", argv)
        if r.rc != 0:
            return out  # "Invalid job id specified": purged; the tracker keeps waiting
        try:
            got = parse_scontrol_jobs(r.out, self._tz, frozenset(self._arrays))
        except SlurmParseError as exc:
            raise BackendError(str(exc), where="scontrol show job -o") from None
        out.update((i, (got[i], "scontrol")) for i in ids if i in got)
        return out

    async def cancel(self, ids: Sequence[str]) -> None:
        """``scancel`` with explicit job ids or array tasks ``A_i`` (never a user-wide
        pattern), whichever path submitted them: it needs no token that may have expired."""
        await super().cancel([i for i in ids if _JOB_ID.match(i)])

    def output_path(self, backend_id: str) -> Path:
        """The ``output`` pattern for a job (%j: the job id; %A and %a: an array task's
        array id and index)."""
        pattern = self.options.output
        array, _, task = backend_id.partition("_")
        if task and "%j" in pattern:
            raise BackendError(
                f"job {backend_id} is an array task: its %j is not known here",
                where="backend.options.output",
                fix="use %A_%a (array id, task index) in the output pattern for load.bulk",
            )
        return Path(pattern.replace("%j", backend_id).replace("%A", array).replace("%a", task))

    async def server_events(self) -> list[Event]:
        """New log stamps, and the whole-second stamps of jobs that ended since last time."""
        if self._log is not None:
            self._book.add_log(parse_log(self._log.read_lines(), self._tz))
        return self._book.drain()

    async def queue_length(self) -> int | None:
        """Jobs pending, running or completing on the whole cluster (anyone's)."""
        r = await self._checked("squeue", ["squeue", "-h", "-o", "%i"])
        if r.rc != 0:
            raise BackendError(f"squeue failed: {short(r.err)}", where="squeue", fix=FIX_REACH)
        return sum(1 for x in r.out.splitlines() if x.strip())


_SIZE_ARG = re.compile(r"^(?:-[nN]|--ntasks|--nodes)(?:=|$|\d)")


def size_args(job: JobRequest) -> list[str]:
    """sbatch's ``--ntasks`` and ``--nodes`` for the job's size (nothing when unset)."""
    out = []
    if job.tasks is not None:
        out.append(f"--ntasks={job.tasks}")
    if job.nodes is not None:
        out.append(f"--nodes={job.nodes}")
    return out


_JOB_ID = re.compile(r"^\d+(?:_\d+)?$")  # a job, or an array task A_i


def _array_groups(jobs: Sequence[JobRequest], max_size: int) -> list[list[int]]:
    """Indices of the jobs that can share one array (same command, account and
    credential: an array has one script and one owner), at most ``max_size`` each."""
    by_key: dict[tuple[object, ...], list[int]] = {}
    for k, job in enumerate(jobs):
        key = (job.command, job.account, tuple(sorted(job.credential.items())))
        by_key.setdefault(key, []).append(k)
    return [idx[i : i + max_size] for idx in by_key.values() for i in range(0, len(idx), max_size)]


def _config(text: str) -> dict[str, str]:
    """``scontrol show config`` as a dict (``Key = Value`` lines)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


if TYPE_CHECKING:  # mypy checks the optional hooks against their protocols
    _submits_bulk: type[BulkSubmitter] = SlurmBackend
    _holds: type[HoldingSubmitter] = SlurmBackend
    _reserves: type[Reserver] = SlurmBackend
    _reserves_nodes: type[NodeReserver] = SlurmBackend
    _issues: type[CredentialIssuer] = SlurmBackend
