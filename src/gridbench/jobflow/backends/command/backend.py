"""The command backend: drives any system through its command-line client (METHODS 1.13).

Every operation is an argv template (never a shell command line): credential ``init`` once
at open, ``submit``, ``status`` (one call for many ids, or per job), ``finished`` (what
became of ids the status listing dropped), ``cancel``, ``output`` and ``queue``. Regular
expressions pick the job id and the states out of the output, and a state map turns native
states into gridbench's. Presets for common middleware are data files (``presets/*.yaml``).

Every client process is timed and its CPU counted (:mod:`command_process`); the totals per
trial go to trial.json as ``client_processes`` through :meth:`CommandBackend.runtime_stats`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import (
    STAGING_FIELDS,
    Capabilities,
    DataStager,
    JobRequest,
    JobState,
    JobStatus,
    RuntimeInfoSource,
    RuntimeStatsSource,
    SubmitError,
)
from gridbench.jobflow.backends.command import serverside, upload
from gridbench.jobflow.backends.command.options import CommandConfig, OpConfig, compile_options
from gridbench.jobflow.backends.command.output import (
    failure_reason,
    read_stream,
    says_unknown,
)
from gridbench.jobflow.backends.command.parse import (
    NoMatch,
    extract_id,
    key_of,
    parse_many,
    parse_one,
)
from gridbench.jobflow.backends.command.process import (
    CallResult,
    ClientStartError,
    ClientTimeout,
    ProcessRunner,
)
from gridbench.jobflow.backends.command.serverside import ServerStamps
from gridbench.jobflow.backends.command.template import TemplateError
from gridbench.jobflow.backends.operations import NamedOperations
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
    Event,
)

OUTPUT_FILE_LIMIT = 64 * 1024 * 1024


class CommandBackend:
    """A backend configured entirely by argv templates, patterns and a state map."""

    name: ClassVar[str] = "command"

    def __init__(self, config: CommandConfig) -> None:
        self.cfg = config
        self._names: dict[str, str] = {}  # backend id -> gridbench job name
        self._runner: ProcessRunner | None = None
        self._values: dict[str, str] = {}
        self._own_rdir: str | None = None
        cfg = config
        self._stamps = (
            ServerStamps(cfg.stamps, cfg.stamp_locations) if cfg.stamps is not None else None
        )
        self._ended: set[str] = set()  # ids a status call saw in a terminal state
        dl = cfg.ops.get("download")
        self._downloader = serverside.Downloads(dl.parallel if dl is not None else 1)
        self._uploaded: list[Event] = []  # the stamps of uploads before submit calls

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CommandBackend:
        return cls(compile_options(options))

    # -- protocol ----------------------------------------------------------------------------
    def stage_chain(self) -> StageChain:
        ops = self.cfg.ops
        return serverside.chain(self.cfg.stamps, "download" in ops, "upload" in ops)

    def capabilities(self) -> Capabilities:
        ops = self.cfg.ops
        return Capabilities(
            batch_status=ops["status"].mode != "single",
            cancel="cancel" in ops,
            fetch_output="output" in ops,
            server_events=self._stamps is not None or "download" in ops or "upload" in ops,
            queue_length="queue" in ops,
        )

    async def open(self) -> None:
        """Prepare the directories, check the client programs exist, run ``init`` once."""
        workdir = self.cfg.workdir or os.getcwd()
        if not Path(workdir).is_dir():
            raise BackendError(
                f"workdir {workdir!r} is not a directory",
                where=self._where(),
                fix="set backend.options.workdir to an existing directory",
            )
        if self.cfg.rdir:
            rdir = self.cfg.rdir
            try:
                Path(rdir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BackendError(
                    f"cannot create rdir {rdir!r}: {exc.strerror or exc}",
                    where=self._where(),
                    fix="set backend.options.rdir to a writable directory",
                ) from None
        else:
            rdir = self._own_rdir = tempfile.mkdtemp(prefix="gridbench-command-")
        self._values = {
            "python": sys.executable,
            "workdir": workdir,
            "rdir": rdir,
            **self.cfg.values,
        }
        self._runner = ProcessRunner(
            env=self.cfg.env, cwd=workdir, max_processes=self.cfg.max_processes
        )
        if self.cfg.check_executables:
            self._check_programs()
        init = self.cfg.ops.get("init")
        if init is not None:
            res = await self._checked(init, self._argv(init, {}), None, BackendError)
            if res.exit_code not in init.ok_codes:
                raise BackendError(
                    f"init ({res.argv[0]}) exited with {res.exit_code}: {failure_reason(res)}",
                    where=self._where("init"),
                    fix=f"run it by hand to see why: {shlex.join(res.argv)} (gridbench "
                    "never types passwords: create the credential beforehand)",
                )

    async def close(self) -> None:
        await self._downloader.wait()
        if self._runner is not None:
            await self._runner.close()
        if self._own_rdir is not None:
            shutil.rmtree(self._own_rdir, ignore_errors=True)
            self._own_rdir = None

    async def submit(self, job: JobRequest) -> str:
        op = self.cfg.ops["submit"]
        cmd = list(job.command)
        extra = {
            "name": job.name,
            "user": job.user or "",
            "account": job.account or "",
            "credential_file": job.credential.get("file", ""),
            "credential_env": job.credential.get("env", ""),
            "command_line": shlex.join(cmd),
            "executable": cmd[0] if cmd else "",
            "arguments": shlex.join(cmd[1:]),
            "executable_json": json.dumps(cmd[0] if cmd else ""),
            "arguments_json": json.dumps(cmd[1:]),
            "tasks": str(job.tasks or 1),
            "nodes": str(job.nodes or 1),
            **staging_names(job),
        }
        up = self.cfg.ops.get("upload")
        timed = await self._upload(up, job, extra) if up is not None else None
        try:
            argv = self._argv(op, extra, {"command": cmd})
            stdin = self._stdin(op, extra)
        except TemplateError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template: {exc}") from None
        try:
            res = await self._run(op, argv, stdin)
        except ClientStartError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template: {exc}") from None
        except ClientTimeout as exc:
            raise SubmitError(FAIL_SUBMIT_TIMEOUT, f"submit template: {exc}") from None
        if res.exit_code not in op.ok_codes:
            why = failure_reason(res)
            raise SubmitError(
                FAIL_SUBMIT_REJECTED,
                f"submit template: {argv[0]} exited with {res.exit_code}: {why}",
            )
        assert op.pattern is not None
        try:
            bid = extract_id(op.pattern, read_stream(res, op))
        except NoMatch as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template ({argv[0]}): id {exc}") from None
        self._names[bid] = job.name
        if timed is not None:
            t0, t1, attrs = timed
            stages = (serverside.STAGE_UPLOAD_START, serverside.STAGE_UPLOADED)
            self._uploaded += serverside.transfer_events(bid, stages, t0, t1, attrs)
        return bid

    async def _upload(
        self, op: OpConfig, job: JobRequest, extra: dict[str, str]
    ) -> tuple[int, int, dict[str, Any]]:
        """The job's input written and uploaded by the ``upload`` template, timed."""

        def call(root: Path) -> Coroutine[Any, Any, CallResult]:
            argv = self._argv(op, {**extra, "upload_dir": str(root)})
            return self._run(op, argv, self._stdin(op, extra))

        root = upload.upload_dir(self._values["rdir"], job.name)
        sizes = upload.input_layout(job.staging)
        return await upload.timed_upload(root, job.name, sizes, call, op.ok_codes)

    def staged_fields(self) -> frozenset[str]:
        """Inputs with an ``upload`` template, outputs with a ``download`` one, and any
        field whose placeholder (``{output_size}`` ...) a template uses."""
        ops = self.cfg.ops
        used = set().union(*(op.names for op in ops.values()))
        got = {f for f in STAGING_FIELDS if f in used}
        if "upload" in ops:
            got |= {f for f in STAGING_FIELDS if f.startswith("input")}
        if "download" in ops:
            got |= {f for f in STAGING_FIELDS if f.startswith("output")}
        return frozenset(got)

    def job_size_problem(self, tasks: int | None, nodes: int | None) -> str | None:
        """A size reaches the site only through ``{tasks}`` / ``{nodes}`` in submit."""
        used = self.cfg.ops["submit"].names
        unused = [n for n, v in (("tasks", tasks), ("nodes", nodes)) if v is not None]
        unused = [n for n in unused if n not in used]
        if unused:
            names = " and ".join(f"{{{n}}}" for n in unused)
            return (
                f"job.{unused[0]} is set but the submit template does not use {names}, "
                f"so the size would be dropped; put {names} in backend.options.submit"
            )
        return None

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        if not ids:
            return {}
        op = self.cfg.ops["status"]
        if op.mode == "single":
            return await self._status_single(op, ids)
        wanted = {key_of(op.id_key, i): i for i in ids}
        found: dict[str, JobStatus] = {}
        chunks = (
            [list(ids[k : k + op.chunk]) for k in range(0, len(ids), op.chunk)]
            if op.mode == "batch"
            else [[]]
        )
        for chunk in chunks:
            res = await self._checked(op, self._argv(op, {}, {"ids": chunk}), None, BackendError)
            gone = False
            if res.exit_code not in op.ok_codes:
                if not says_unknown(op, res):
                    raise self._exit_error(op, res)
                gone = True  # the client says (some of) these ids are unknown
            try:
                parsed = parse_many(
                    op.pattern,  # type: ignore[arg-type]
                    read_stream(res, op),
                    self.cfg.states,
                    scope=op.scope,
                    ignore=op.ignore,
                )
            except NoMatch as exc:
                if gone:
                    continue
                raise BackendError(
                    f"status template ({res.argv[0]}): {exc}",
                    where=self._where("status"),
                    fix="adjust status.pattern (named groups id and state), or skip header "
                    "lines with status.ignore",
                ) from None
            for jid, st in parsed.items():
                i = wanted.get(key_of(op.id_key, jid))
                if i is not None:
                    found[i] = st
        missing = [i for i in ids if i not in found]
        if missing:
            found.update(await self._missing(op, missing))
        self._download_done(found)
        return found

    async def cancel(self, ids: Sequence[str]) -> None:
        op = self._required_op("cancel", "an argv list with {ids} or {id}")
        if not ids:
            return
        if op.mode == "batch":
            calls = [
                self._argv(op, {}, {"ids": list(ids[k : k + op.chunk])})
                for k in range(0, len(ids), op.chunk)
            ]
        else:
            calls = [self._argv(op, self._job_values(i)) for i in ids]
        sem = asyncio.Semaphore(op.parallel)

        async def one(argv: list[str]) -> str | None:
            async with sem:
                try:
                    res = await self._run(op, argv, None)
                except (ClientStartError, ClientTimeout) as exc:
                    return str(exc)
            if res.exit_code not in op.ok_codes:
                why = failure_reason(res)
                return f"{res.argv[0]} exited with {res.exit_code}: {why}"
            return None

        errors = [e for e in await asyncio.gather(*(one(a) for a in calls)) if e]
        if errors:
            raise BackendError(
                f"{len(errors)} of {len(calls)} cancel calls failed; first: {errors[0]}",
                where=self._where("cancel"),
                fix="check the cancel template and ok_codes (some CLIs exit non-zero for "
                "jobs that already ended)",
            )

    async def fetch_output(self, backend_id: str) -> bytes:
        op = self._required_op("output", "argv and/or read")
        extra = self._job_values(backend_id)
        data = b""
        if op.argv is not None:
            res = await self._checked(op, self._argv(op, extra), None, BackendError)
            if res.exit_code not in op.ok_codes:
                raise self._exit_error(op, res)
            data = read_stream(res, op).encode()
        if op.read is not None:
            path = Path(op.read.render({**self._values, **extra}))
            try:
                with path.open("rb") as fh:
                    data = fh.read(OUTPUT_FILE_LIMIT)
            except OSError as exc:
                raise BackendError(
                    f"cannot read the output file {str(path)!r}: {exc.strerror or exc}",
                    where=self._where("output"),
                    fix="check output.read (a path template with {id}, {name}, {rdir})",
                ) from None
        return data

    async def server_events(self) -> list[Event]:
        """New server stamps (one read of each declared source), finished downloads and
        the uploads before submit calls since the last call."""
        out = await self._downloader.take()  # started by earlier status calls
        out += self._uploaded
        self._uploaded = []
        if self._stamps is not None:
            ids = list(self._names)
            out += await self._stamps.collect(ids, self._names)
            if ids and self._ended.issuperset(ids):  # nothing in flight: the tracker's last call
                out += await self._stamps.settle(ids, self._names)
        return out

    def _download_done(self, found: dict[str, JobStatus]) -> None:
        """Note ended jobs; start downloading each first seen done (``download``)."""
        self._ended.update(i for i, st in found.items() if st.state.terminal)
        op = self.cfg.ops.get("download")
        if op is None:
            return
        done = [i for i, st in found.items() if st.state is JobState.DONE]
        for bid in self._downloader.new(done):
            root = serverside.download_dir(self._values["rdir"], self._names.get(bid, ""), bid)
            argv = self._argv(op, {**self._job_values(bid), "download_dir": str(root)})
            self._downloader.start(bid, root, self._run(op, argv, None), op.ok_codes)

    async def queue_length(self) -> int | None:
        op = self.cfg.ops.get("queue")
        if op is None:
            return None
        res = await self._checked(op, self._argv(op, {}), None, BackendError)
        if res.exit_code not in op.ok_codes:
            raise self._exit_error(op, res)
        lines = [ln for ln in read_stream(res, op).splitlines() if ln.strip()]
        if op.pattern is not None:
            lines = [ln for ln in lines if op.pattern.search(ln)]
        return len(lines)

    # -- named operations (NamedOperations) ----------------------------------------------------
    def operations(self) -> list[str]:
        """The names of this configuration's ``operations:``."""
        return list(self.cfg.named)

    async def run_operation(self, name: str) -> None:
        """Run the named operation once; a start failure, a time-out or an exit code
        outside its ``ok_codes`` is a BackendError naming it."""
        op = self.cfg.named.get(name)
        if op is None:
            raise BackendError(
                f"this configuration has no operation {name!r}",
                where=self._where(f"operations.{name}"),
                fix=f"add backend.options.operations.{name}: {{argv: [...]}}",
            )
        res = await self._checked(op, self._argv(op, {}), self._stdin(op, {}), BackendError)
        if res.exit_code not in op.ok_codes:
            raise self._exit_error(op, res)

    # -- client cost ---------------------------------------------------------------------------
    def client_cost(self) -> dict[str, Any]:
        """Totals since open: calls, wall_s, cpu_s, max_rss_bytes, max_parallel, by_op."""
        return self._runner.cost.to_dict() if self._runner else {}

    def runtime_stats(self) -> dict[str, Any]:
        """Client-process counters since the previous call, for trial.json."""
        if self._runner is None:
            return {}
        out: dict[str, Any] = {"client_processes": self._runner.take_window()}
        if self._stamps is not None:
            out["server_stamps"] = self._stamps.report(list(self._names))
        return out

    def runtime_info(self) -> dict[str, Any]:
        """What experiment.json records about this configuration."""
        p = self.cfg.preset
        return {
            "command": {
                "preset": p.name if p else None,
                "tested": p.tested if p else None,
                "written_for": p.written_for if p else None,
                "status_mode": self.cfg.ops["status"].mode,
                "templates": {
                    k: list(op.argv.raw) for k, op in self.cfg.ops.items() if op.argv is not None
                },
                "operations": {
                    k: list(op.argv.raw) for k, op in self.cfg.named.items() if op.argv is not None
                },
                "client_processes_at_open": self.client_cost(),
            }
        }

    # -- cleanup -----------------------------------------------------------------------------
    def without_init(self) -> CommandBackend:
        """This configuration without its ``init`` template: ``gridbench cleanup`` cancels
        jobs and never runs a credential or setup command."""
        ops = {k: v for k, v in self.cfg.ops.items() if k != "init"}
        return CommandBackend(dataclasses.replace(self.cfg, ops=ops))

    def cancel_template(self) -> list[str] | None:
        """The ``cancel`` argv template as written (runtime_info records the same)."""
        op = self.cfg.ops.get("cancel")
        return list(op.argv.raw) if op is not None and op.argv is not None else None

    # -- helpers -----------------------------------------------------------------------------
    def _required_op(self, name: str, form: str) -> OpConfig:
        """The ``name`` template; an optional one the configuration lacks is an error."""
        op = self.cfg.ops.get(name)
        if op is None:
            raise BackendError(
                f"this configuration has no {name} template",
                where=self._where(name),
                fix=f"add backend.options.{name} ({form})",
            )
        return op

    def _where(self, op: str | None = None) -> str:
        p = self.cfg.preset
        base = f"backend command (preset {p.name})" if p else "backend command"
        return f"{base}, template {op}" if op else base

    def _job_values(self, backend_id: str) -> dict[str, str]:
        return {"id": backend_id, "name": self._names.get(backend_id, "")}

    def _argv(
        self,
        op: OpConfig,
        extra: dict[str, str],
        lists: dict[str, list[str]] | None = None,
    ) -> list[str]:
        assert op.argv is not None
        return op.argv.render({**self._values, **extra}, {**self.cfg.lists, **(lists or {})})

    def _stdin(self, op: OpConfig, extra: dict[str, str]) -> bytes | None:
        if op.stdin is None:
            return None
        return op.stdin.render({**self._values, **extra}).encode()

    async def _run(self, op: OpConfig, argv: list[str], stdin: bytes | None) -> CallResult:
        if self._runner is None:
            raise BackendError(
                "the backend is not open", where=self._where(op.name), fix="call open() first"
            )
        return await self._runner.run(op.name, argv, stdin=stdin, timeout_s=op.timeout_s)

    async def _checked(
        self, op: OpConfig, argv: list[str], stdin: bytes | None, err: type[BackendError]
    ) -> CallResult:
        """Run, turning a start failure or a time-out into ``err`` naming the template."""
        try:
            return await self._run(op, argv, stdin)
        except ClientStartError as exc:
            raise err(
                str(exc),
                where=self._where(op.name),
                fix="install the client or give its full path in the template's argv",
            ) from None
        except ClientTimeout as exc:
            raise err(
                str(exc),
                where=self._where(op.name),
                fix=f"raise {op.name}.timeout_s (or timeout_s) if the client is just slow",
            ) from None

    def _exit_error(self, op: OpConfig, res: CallResult) -> BackendError:
        why = failure_reason(res)
        return BackendError(
            f"{res.argv[0]} exited with {res.exit_code}: {why}",
            where=self._where(op.name),
            fix=f"run it by hand to see why: {shlex.join(res.argv)}; exit codes that are "
            f"not errors go in {op.name}.ok_codes",
        )

    def _check_programs(self) -> None:
        missing: dict[str, list[str]] = {}
        for name, op in self.cfg.ops.items():
            if op.argv is None:
                continue
            try:
                prog = op.argv.program(self._values)
            except TemplateError:
                continue  # the program depends on the job: checked when it runs
            found = (
                os.access(prog, os.X_OK) and Path(prog).is_file()
                if os.sep in prog
                else shutil.which(prog, path=(self.cfg.env.get("PATH") or os.environ.get("PATH")))
            )
            if not found:
                missing.setdefault(prog, []).append(name)
        if missing:
            listed = "; ".join(f"{p!r} ({', '.join(ops)})" for p, ops in missing.items())
            raise BackendError(
                f"client program not found: {listed}",
                where=self._where(),
                fix="install the client tools or put them on PATH, or give the full path in "
                "the template (e.g. options.submit: [/opt/bin/sbatch, ...]); "
                "check_executables: false skips this check",
            )

    async def _status_single(self, op: OpConfig, ids: Sequence[str]) -> dict[str, JobStatus]:
        sem = asyncio.Semaphore(op.parallel)
        assert op.pattern is not None
        pattern = op.pattern

        async def one(i: str) -> tuple[str, JobStatus | str | None]:
            """(id, status | error text | None when the client says it is unknown)."""
            async with sem:
                try:
                    res = await self._run(op, self._argv(op, self._job_values(i)), None)
                except (ClientStartError, ClientTimeout) as exc:
                    return i, str(exc)
            if res.exit_code not in op.ok_codes:
                if says_unknown(op, res):
                    return i, None
                why = failure_reason(res)
                return i, f"{res.argv[0]} exited with {res.exit_code}: {why}"
            try:
                return i, parse_one(pattern, read_stream(res, op), self.cfg.states)
            except NoMatch as exc:
                return i, f"status template ({res.argv[0]}): {exc}"

        found: dict[str, JobStatus] = {}
        gone: list[str] = []
        errors: list[tuple[str, str]] = []
        for i, r in await asyncio.gather(*(one(i) for i in ids)):
            if isinstance(r, JobStatus):
                found[i] = r
            elif r is None:
                gone.append(i)
            else:
                errors.append((i, r))
        if errors and not found and not gone:
            raise BackendError(
                f"all {len(ids)} status calls failed; first: {errors[0][1]}",
                where=self._where("status"),
                fix="check status.argv and status.pattern (group 'state' or the whole match)",
            )
        if gone:
            found.update(await self._missing(op, gone))
        self._download_done(found)
        return found

    async def _missing(self, op: OpConfig, ids: list[str]) -> dict[str, JobStatus]:
        """States of ids the status call no longer lists: ask ``finished``, or ``missing``."""
        fin = self.cfg.ops.get("finished")
        if fin is None:
            if op.missing is None:
                return {}
            return {i: JobStatus(op.missing, "no longer listed by the status command") for i in ids}
        assert fin.pattern is not None
        pattern = fin.pattern
        sem = asyncio.Semaphore(fin.parallel)

        async def one(i: str) -> tuple[str, JobStatus | None]:
            async with sem:
                try:
                    res = await self._run(fin, self._argv(fin, self._job_values(i)), None)
                except (ClientStartError, ClientTimeout):
                    return i, None
            if res.exit_code not in fin.ok_codes:
                return i, None  # e.g. the accounting record is not written yet: ask again
            try:
                return i, parse_one(pattern, read_stream(res, fin), self.cfg.states)
            except NoMatch:
                return i, None

        return {i: st for i, st in await asyncio.gather(*(one(i) for i in ids)) if st is not None}


if TYPE_CHECKING:  # mypy checks the optional hooks against their protocols
    _has_runtime_info: type[RuntimeInfoSource] = CommandBackend
    _has_runtime_stats: type[RuntimeStatsSource] = CommandBackend
    _has_operations: type[NamedOperations] = CommandBackend
    _stages: type[DataStager] = CommandBackend


def staging_names(job: JobRequest) -> dict[str, str]:
    """The submit placeholders of what a job stages (``0`` when the spec names none)."""
    st = job.staging
    values = (
        (st.input_bytes, st.input_files, st.output_bytes, st.output_files) if st else (None,) * 4
    )
    return {n: str(v or 0) for n, v in zip(STAGING_FIELDS, values, strict=True)}
