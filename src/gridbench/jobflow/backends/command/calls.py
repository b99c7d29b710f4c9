"""How the command backend runs its templates: rendered with the run's values (built-ins,
``vars:`` and the job's id and name), run through one :class:`ProcessRunner`, and every
failure worded as one :class:`BackendError` naming the template and the fix."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from gridbench.errors import BackendError
from gridbench.jobflow.backends.command.matching import PatternMatcher
from gridbench.jobflow.backends.command.options import CommandConfig, OpConfig
from gridbench.jobflow.backends.command.output import exit_reason
from gridbench.jobflow.backends.command.process import (
    CallResult,
    ClientStartError,
    ClientTimeout,
    ProcessRunner,
)
from gridbench.jobflow.backends.command.template import TemplateError


class TemplateCalls:
    """The client calls of one backend instance; ``runner`` and ``values`` are set at open."""

    def __init__(self, cfg: CommandConfig) -> None:
        self.cfg = cfg
        self.runner: ProcessRunner | None = None
        self.values: dict[str, str] = {}  # the built-in placeholders and the user's vars
        self.names: dict[str, str] = {}  # backend id -> gridbench job name
        #: every pattern of the configuration, matched in a child with a deadline
        self.matcher = PatternMatcher(cfg, self.where())

    def where(self, op: str | None = None) -> str:
        p = self.cfg.preset
        base = f"backend command (preset {p.name})" if p else "backend command"
        return f"{base}, template {op}" if op else base

    def required_op(self, name: str, form: str) -> OpConfig:
        """The ``name`` template; an optional one the configuration lacks is an error."""
        op = self.cfg.ops.get(name)
        if op is None:
            raise BackendError(
                f"this configuration has no {name} template",
                where=self.where(name),
                fix=f"add backend.options.{name} ({form})",
            )
        return op

    def job_values(self, backend_id: str) -> dict[str, str]:
        return {"id": backend_id, "name": self.names.get(backend_id, "")}

    def argv(
        self,
        op: OpConfig,
        extra: dict[str, str],
        lists: dict[str, list[str]] | None = None,
    ) -> list[str]:
        assert op.argv is not None
        return op.argv.render({**self.values, **extra}, {**self.cfg.lists, **(lists or {})})

    def stdin(self, op: OpConfig, extra: dict[str, str]) -> bytes | None:
        if op.stdin is None:
            return None
        return op.stdin.render({**self.values, **extra}).encode()

    async def run(self, op: OpConfig, argv: list[str], stdin: bytes | None) -> CallResult:
        if self.runner is None:
            raise BackendError(
                "the backend is not open", where=self.where(op.name), fix="call open() first"
            )
        return await self.runner.run(op.name, argv, stdin=stdin, timeout_s=op.timeout_s)

    async def checked(self, op: OpConfig, argv: list[str], stdin: bytes | None) -> CallResult:
        """Run, turning a start failure or a time-out into a BackendError naming the
        template."""
        try:
            return await self.run(op, argv, stdin)
        except ClientStartError as exc:
            raise BackendError(
                str(exc),
                where=self.where(op.name),
                fix="install the client or give its full path in the template's argv",
            ) from None
        except ClientTimeout as exc:
            raise BackendError(
                str(exc),
                where=self.where(op.name),
                fix=f"raise {op.name}.timeout_s (or timeout_s) if the client is just slow",
            ) from None

    def exit_error(self, op: OpConfig, res: CallResult) -> BackendError:
        return BackendError(
            exit_reason(res),
            where=self.where(op.name),
            fix=f"run it by hand to see why: {shlex.join(res.argv)}; exit codes that are "
            f"not errors go in {op.name}.ok_codes",
        )

    def check_programs(self) -> None:
        """Every template's client program exists (one error listing the missing)."""
        missing: dict[str, list[str]] = {}
        for name, op in self.cfg.ops.items():
            if op.argv is None:
                continue
            try:
                prog = op.argv.program(self.values)
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
                where=self.where(),
                fix="install the client tools or put them on PATH, or give the full path in "
                "the template (e.g. options.submit: [/opt/bin/sbatch, ...]); "
                "check_executables: false skips this check",
            )
