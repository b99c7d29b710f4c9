"""The command backend: drives any system through its command-line client (METHODS 1.13).

Every operation is an argv template (never a shell command line): credential ``init`` once
at open, ``submit``, ``status`` (one call for many ids, or per job), ``finished`` (what
became of ids the status listing dropped), ``cancel``, ``output`` and ``queue``. Regular
expressions pick the job id and the states out of the output, and a state map turns native
states into gridbench's. Presets for common middleware are data files (``presets/*.yaml``).

This class is the protocol's face: submission, cancel, output, queue and the named
operations. Its neighbours hold the rest: :mod:`.calls` renders and runs a template,
:mod:`.status` reads the job states, :mod:`.staging` times the upload and download, and
:mod:`.serverside` collects the server stamps and builds the stage chain.

Every client process is timed and its CPU counted (:mod:`.process`); the totals per
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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import (
    Capabilities,
    DataStager,
    JobRequest,
    JobStatus,
    RuntimeInfoSource,
    RuntimeStatsSource,
    SubmitError,
)
from gridbench.jobflow.backends.command.calls import TemplateCalls
from gridbench.jobflow.backends.command.options import CommandConfig, compile_options
from gridbench.jobflow.backends.command.output import exit_reason, failure_reason, read_stream
from gridbench.jobflow.backends.command.parse import NoMatch
from gridbench.jobflow.backends.command.process import (
    ClientStartError,
    ClientTimeout,
    ProcessRunner,
)
from gridbench.jobflow.backends.command.serverside import ServerStamps, chain
from gridbench.jobflow.backends.command.staging import Transfers, staged_fields, staging_names
from gridbench.jobflow.backends.command.status import read_states
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
        self.cfg = cfg = config
        self._calls = TemplateCalls(cfg)
        self._own_rdir: str | None = None
        self._stamps = (
            ServerStamps(cfg.stamps, cfg.stamp_locations) if cfg.stamps is not None else None
        )
        self._ended: set[str] = set()  # ids a status call saw in a terminal state
        self._transfers = Transfers(self._calls)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CommandBackend:
        return cls(compile_options(options))

    # -- protocol ----------------------------------------------------------------------------
    def stage_chain(self) -> StageChain:
        ops = self.cfg.ops
        return chain(self.cfg.stamps, "download" in ops, "upload" in ops)

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
        calls = self._calls
        workdir = self.cfg.workdir or os.getcwd()
        if not Path(workdir).is_dir():
            raise BackendError(
                f"workdir {workdir!r} is not a directory",
                where=calls.where(),
                fix="set backend.options.workdir to an existing directory",
            )
        if self.cfg.rdir:
            rdir = self.cfg.rdir
            try:
                Path(rdir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BackendError(
                    f"cannot create rdir {rdir!r}: {exc.strerror or exc}",
                    where=calls.where(),
                    fix="set backend.options.rdir to a writable directory",
                ) from None
        else:
            rdir = self._own_rdir = tempfile.mkdtemp(prefix="gridbench-command-")
        calls.values = {
            "python": sys.executable,
            "workdir": workdir,
            "rdir": rdir,
            **self.cfg.values,
        }
        calls.runner = ProcessRunner(
            env=self.cfg.env, cwd=workdir, max_processes=self.cfg.max_processes
        )
        if self.cfg.check_executables:
            calls.check_programs()
        init = self.cfg.ops.get("init")
        if init is not None:
            res = await calls.checked(init, calls.argv(init, {}), None)
            if res.exit_code not in init.ok_codes:
                raise BackendError(
                    f"init ({res.argv[0]}) exited with {res.exit_code}: {failure_reason(res)}",
                    where=calls.where("init"),
                    fix=f"run it by hand to see why: {shlex.join(res.argv)} (gridbench "
                    "never types passwords: create the credential beforehand)",
                )

    async def close(self) -> None:
        await self._transfers.wait()
        await self._calls.matcher.close()
        if self._calls.runner is not None:
            await self._calls.runner.close()
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
        timed = await self._transfers.upload(job, extra)
        calls = self._calls
        try:
            argv = calls.argv(op, extra, {"command": cmd})
            stdin = calls.stdin(op, extra)
        except TemplateError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template: {exc}") from None
        try:
            res = await calls.run(op, argv, stdin)
        except ClientStartError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template: {exc}") from None
        except ClientTimeout as exc:
            raise SubmitError(FAIL_SUBMIT_TIMEOUT, f"submit template: {exc}") from None
        if res.exit_code not in op.ok_codes:
            raise SubmitError(FAIL_SUBMIT_REJECTED, f"submit template: {exit_reason(res)}")
        assert op.pattern is not None
        try:
            bid = await calls.matcher.extract_id(op, read_stream(res, op))
        except NoMatch as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"submit template ({argv[0]}): id {exc}") from None
        calls.names[bid] = job.name
        if timed is not None:
            self._transfers.uploaded(bid, timed)
        return bid

    def staged_fields(self) -> frozenset[str]:
        """The spec's staging fields this configuration honours (:func:`.staging.staged_fields`)."""
        return staged_fields(self.cfg.ops)

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
        found = await read_states(self._calls, ids)
        self._ended.update(i for i, st in found.items() if st.state.terminal)
        self._transfers.download_done(found)
        return found

    async def cancel(self, ids: Sequence[str]) -> None:
        calls = self._calls
        op = calls.required_op("cancel", "an argv list with {ids} or {id}")
        if not ids:
            return
        if op.mode == "batch":
            argvs = [
                calls.argv(op, {}, {"ids": list(ids[k : k + op.chunk])})
                for k in range(0, len(ids), op.chunk)
            ]
        else:
            argvs = [calls.argv(op, calls.job_values(i)) for i in ids]
        sem = asyncio.Semaphore(op.parallel)

        async def one(argv: list[str]) -> str | None:
            async with sem:
                try:
                    res = await calls.run(op, argv, None)
                except (ClientStartError, ClientTimeout) as exc:
                    return str(exc)
            return exit_reason(res) if res.exit_code not in op.ok_codes else None

        errors = [e for e in await asyncio.gather(*(one(a) for a in argvs)) if e]
        if errors:
            raise BackendError(
                f"{len(errors)} of {len(argvs)} cancel calls failed; first: {errors[0]}",
                where=calls.where("cancel"),
                fix="check the cancel template and ok_codes (some CLIs exit non-zero for "
                "jobs that already ended)",
            )

    async def fetch_output(self, backend_id: str) -> bytes:
        calls = self._calls
        op = calls.required_op("output", "argv and/or read")
        extra = calls.job_values(backend_id)
        data = b""
        if op.argv is not None:
            res = await calls.checked(op, calls.argv(op, extra), None)
            if res.exit_code not in op.ok_codes:
                raise calls.exit_error(op, res)
            data = read_stream(res, op).encode()
        if op.read is not None:
            path = Path(op.read.render({**calls.values, **extra}))
            try:
                with path.open("rb") as fh:
                    data = fh.read(OUTPUT_FILE_LIMIT)
            except OSError as exc:
                raise BackendError(
                    f"cannot read the output file {str(path)!r}: {exc.strerror or exc}",
                    where=self._calls.where("output"),
                    fix="check output.read (a path template with {id}, {name}, {rdir})",
                ) from None
        return data

    async def server_events(self) -> list[Event]:
        """New server stamps (one read of each declared source), finished downloads and
        the uploads before submit calls since the last call."""
        out = await self._transfers.take()  # downloads started by earlier status calls
        if self._stamps is not None:
            names = self._calls.names
            ids = list(names)
            out += await self._stamps.collect(ids, names)
            if ids and self._ended.issuperset(ids):  # nothing in flight: the tracker's last call
                out += await self._stamps.settle(ids, names)
        return out

    async def queue_length(self) -> int | None:
        op = self.cfg.ops.get("queue")
        if op is None:
            return None
        calls = self._calls
        res = await calls.checked(op, calls.argv(op, {}), None)
        if res.exit_code not in op.ok_codes:
            raise calls.exit_error(op, res)
        return await calls.matcher.count_lines(op, read_stream(res, op))

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
                where=self._calls.where(f"operations.{name}"),
                fix=f"add backend.options.operations.{name}: {{argv: [...]}}",
            )
        calls = self._calls
        res = await calls.checked(op, calls.argv(op, {}), calls.stdin(op, {}))
        if res.exit_code not in op.ok_codes:
            raise calls.exit_error(op, res)

    # -- client cost ---------------------------------------------------------------------------
    def client_cost(self) -> dict[str, Any]:
        """Totals since open: calls, wall_s, cpu_s, max_rss_bytes, max_parallel, by_op."""
        runner = self._calls.runner
        return runner.cost.to_dict() if runner else {}

    def runtime_stats(self) -> dict[str, Any]:
        """Client-process counters since the previous call, for trial.json."""
        runner = self._calls.runner
        if runner is None:
            return {}
        out: dict[str, Any] = {"client_processes": runner.take_window()}
        if self._stamps is not None:
            out["server_stamps"] = self._stamps.report(list(self._calls.names))
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


if TYPE_CHECKING:  # mypy checks the optional hooks against their protocols
    _has_runtime_info: type[RuntimeInfoSource] = CommandBackend
    _has_runtime_stats: type[RuntimeStatsSource] = CommandBackend
    _has_operations: type[NamedOperations] = CommandBackend
    _stages: type[DataStager] = CommandBackend
