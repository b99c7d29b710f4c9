"""The probe model's operations (issue 14): which backend capability each one needs, and
one timed call of each against real objects.

``status`` queries a real job submitted held before the first probe and kept queued until
the end; each ``cancel`` cancels a real job submitted held just before it (only the cancel
is timed); each ``reserve`` creates a reservation then releases it, ``release`` the same
with the release timed; ``credential`` issues one credential; ``op:<name>`` runs a named
operation of the command backend. The auxiliary calls (the reserve before a timed release,
the release after a timed reserve) are recorded too, tagged ``probe: setup``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobState
from gridbench.jobflow.backends.operations import (
    Checkpointer,
    CredentialIssuer,
    HoldingSubmitter,
    NamedOperations,
    Reserver,
)
from gridbench.jobflow.run.closed_loop import OpNames, timed_op

if TYPE_CHECKING:
    from gridbench.jobflow.backends.base import Backend
    from gridbench.jobflow.loads.base import RequestMaker, TrialContext

log = logging.getLogger(__name__)

#: the operations a probe may time besides ``op:<name>``
OPERATIONS: tuple[str, ...] = (
    "submit",
    "status",
    "cancel",
    "reserve",
    "release",
    "credential",
    "checkpoint",
    "restart",
)
NAMED_PREFIX = "op:"
#: each operation's label in statements and growth fits
LABELS = {
    "submit": "submission time",
    "status": "status-query time",
    "cancel": "cancel time",
    "reserve": "reservation time",
    "release": "reservation-release time",
    "credential": "credential-issue time",
    "checkpoint": "checkpoint time",
    "restart": "restart time",
}


def label(operation: str) -> str:
    """'credential-issue time', or 'my-tool time' for ``op:my-tool``."""
    if operation.startswith(NAMED_PREFIX):
        return f"{operation[len(NAMED_PREFIX) :]} time"
    return LABELS.get(operation, "operation time")


def check_name(operation: str) -> str:
    """``operation`` when it is one of :data:`OPERATIONS` or ``op:<name>``; a ValueError
    listing the choices otherwise (the spec loader shows it at ``load.operation``)."""
    if operation in OPERATIONS:
        return operation
    if operation.startswith(NAMED_PREFIX) and len(operation) > len(NAMED_PREFIX):
        return operation
    raise ValueError(
        f"unknown operation {operation!r}; use one of {', '.join(OPERATIONS)} or "
        "op:<name> (a named operation of the command backend's operations:)"
    )


@dataclass(frozen=True)
class Need:
    """The capability an operation needs, and what to do without it."""

    protocol: type[Any]
    what: str
    fix: str


_HOLD = Need(
    HoldingSubmitter,
    "cannot hold a job in its queue (a real job to query or cancel)",
    "use the slurm, sge or local backend, or probe operation: submit",
)
_RESERVE = Need(Reserver, "cannot create advance reservations", "use the slurm backend (scontrol)")
_CHECKPOINT = Need(
    Checkpointer,
    "cannot checkpoint jobs (CRIU does not work on this machine: docs/backends.md)",
    "drop the checkpoint/restart probe",
)
NEEDS = {
    "status": _HOLD,
    "cancel": _HOLD,
    "reserve": _RESERVE,
    "release": _RESERVE,
    "checkpoint": _CHECKPOINT,
    "restart": _CHECKPOINT,
}


def check_backend(
    operation: str, backend: Backend, backend_type: str, status_of: str = "held"
) -> None:
    """A SpecError at ``load.operation`` when ``backend`` lacks what ``operation`` needs
    (a status probe of a running job needs nothing beyond submit and status)."""
    if operation == "status" and status_of == "running":
        return
    where = "load.operation"
    named = operation[len(NAMED_PREFIX) :] if operation.startswith(NAMED_PREFIX) else None
    if operation == "credential" or named is not None:
        name = named or "credential"
        if operation == "credential" and isinstance(backend, CredentialIssuer):
            return
        if isinstance(backend, NamedOperations) and name in backend.operations():
            return
        have = list(backend.operations()) if isinstance(backend, NamedOperations) else []
        raise SpecError(
            f"the {backend_type} backend has no {name} operation"
            + (f" (it has: {', '.join(have)})" if have else ""),
            where=where,
            fix=f"use the slurm backend (scontrol token) or the command backend with "
            f"backend.options.operations.{name}: {{argv: [...]}} (the arc and gram presets "
            "define credential)",
        )
    need = NEEDS.get(operation)
    if need is not None and not isinstance(backend, need.protocol):
        raise SpecError(f"the {backend_type} backend {need.what}", where=where, fix=need.fix)


class OpRunner:
    """One trial's probe calls of a non-submit operation: :meth:`prepare` once, :meth:`call`
    per probe (singles and bursts alike), :meth:`finish` once (it cancels what is left)."""

    def __init__(
        self, ctx: TrialContext, operation: str, make_request: RequestMaker, ops: OpNames
    ) -> None:
        self.ctx = ctx
        self.operation = operation
        self.make_request = make_request
        self.ops = ops  # the trial's operation names (shared with the bursts' records)
        self.rec = ctx.recorders[0]
        self.jobs = 0
        self.held: str | None = None  # the status probe's job
        # reservations are named gridbench-<token>-<trial>-<n>: unique, and findable
        self.token = secrets.token_hex(4)

    async def _held_job(self, tag: str) -> str | None:
        """Submit a held job (stamped as any submission, ``probe: held``); its id."""
        backend = self.ctx.backend
        assert isinstance(backend, HoldingSubmitter)
        req = self.make_request(self.jobs)
        self.jobs += 1
        req = dataclasses.replace(req, attributes={**req.attributes, "probe": tag})
        return await self.ctx.submit(req, self.rec, backend.submit_held)

    async def prepare(self, status_of: str = "held", start_timeout_s: float = 120.0) -> bool:
        """The status probe's job, held or (``status_of: running``) started; False (the
        trial ends) if it was refused. A running job that does not start in time is a
        BackendError naming the fix."""
        if self.operation != "status":
            return True
        if status_of == "held":
            self.held = await self._held_job("held")
            return self.held is not None
        req = self.make_request(self.jobs)
        self.jobs += 1
        req = dataclasses.replace(req, attributes={**req.attributes, "probe": "running"})
        self.held = await self.ctx.submit(req, self.rec)
        if self.held is None:
            return False
        await self._wait_running(self.held, start_timeout_s)
        return True

    async def _wait_running(self, bid: str, timeout_s: float) -> None:
        """Poll the job (not timed) until it runs; an error if it ends or never starts."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        state = JobState.UNKNOWN
        while not self.ctx.stop.is_set():
            got = (await self.ctx.backend.status([bid])).get(bid)
            state = got.state if got is not None else JobState.UNKNOWN
            if state is JobState.RUNNING:
                return
            if state.terminal or loop.time() > deadline:
                break
            await asyncio.sleep(0.5)
        raise BackendError(
            f"the status probe's job {bid} is {state.value}, not running",
            where="load.status_of",
            fix="give the job a command that runs longer than the probes (job.command: "
            "[sleep, '600']), free nodes for it, or raise load.start_timeout",
        )

    async def finish(self) -> None:
        """Cancel the status probe's held job (not timed)."""
        if self.held is not None:
            try:
                await self.ctx.backend.cancel([self.held])
            except Exception as exc:  # the tracker's drain and cleanup still see it
                log.warning("probe: cancelling held job %s failed: %s", self.held, exc)

    async def _timed(
        self,
        op: str,
        tag: str,
        call: Awaitable[None],
        learnt: dict[str, Any] | None = None,
        **attrs: Any,
    ) -> bool:
        """One timed call recorded as op_start/op_end; whether it succeeded. ``learnt`` is
        the op_end attrs (the call may add what it learnt to them before it returns)."""
        start = {"op": op, "probe": tag, **attrs}
        end = learnt if learnt is not None else {}
        end.update(start)

        async def ok() -> bool:
            await call
            return True

        return bool(await timed_op(self.rec, self.ops.name("probe"), start, end, ok()))

    async def call(self, tag: str) -> None:
        """One probe of the operation (``tag``: single or burst<k>)."""
        op, backend = self.operation, self.ctx.backend
        if op == "status":
            assert self.held is not None
            held = self.held
            end: dict[str, Any] = {}

            async def status() -> None:
                states = await backend.status([held])
                got = states.get(held)
                end["state"] = got.state.value if got is not None else "missing"

            await self._timed("status", tag, status(), end, job=held)
        elif op == "cancel":
            bid = await self._held_job("held")
            if bid is not None:
                await self._timed("cancel", tag, backend.cancel([bid]), job=bid)
        elif op in ("reserve", "release"):
            await self._reservation(tag)
        elif op == "credential" and isinstance(backend, CredentialIssuer):
            await self._timed(op, tag, backend.issue_credential())
        elif op in ("checkpoint", "restart"):
            await self._checkpoint(tag)
        else:  # credential or op:<name> through the command backend's operations
            assert isinstance(backend, NamedOperations)
            name = op[len(NAMED_PREFIX) :] if op.startswith(NAMED_PREFIX) else op
            await self._timed(op, tag, backend.run_operation(name))

    async def _reservation(self, tag: str) -> None:
        """reserve, then release; the operation probed is timed as ``tag``, the other is
        ``setup``. A reservation that could not be released is left for cleanup."""
        backend = self.ctx.backend
        assert isinstance(backend, Reserver)
        self.jobs += 1
        name = f"gridbench-{self.token}-{self.ctx.trial_id}-{self.jobs}"
        got: list[str] = []

        async def reserve() -> None:
            got.append(await backend.reserve(name))

        first = tag if self.operation == "reserve" else "setup"
        await self._timed("reserve", first, reserve(), reservation=name)
        second = tag if self.operation == "release" else "setup"
        if got:
            await self._timed("release", second, backend.release(got[0]), reservation=got[0])
        elif self.operation == "release":  # a release probe without its reservation failed
            await self._timed("release", second, _refused("the reserve before it failed"))

    async def _checkpoint(self, tag: str) -> None:
        """checkpoint then restart a running job of the spec; each timed (the one not
        probed as ``setup``)."""
        backend = self.ctx.backend
        assert isinstance(backend, Checkpointer)
        if self.held is None:
            req = self.make_request(self.jobs)
            self.jobs += 1
            self.held = await self.ctx.submit(req, self.rec)
            if self.held is None:
                raise BackendError("the job to checkpoint was refused", where="probe")
        bid = self.held
        first = tag if self.operation == "checkpoint" else "setup"
        second = tag if self.operation == "restart" else "setup"
        if await self._timed("checkpoint", first, backend.checkpoint(bid), job=bid):
            await self._timed("restart", second, backend.restart(bid), job=bid)
        elif self.operation == "restart":
            await self._timed("restart", second, _refused("the checkpoint before it failed"))


async def _refused(why: str) -> None:
    """A probe that could not be made: recorded as that probe's error."""
    raise BackendError(why, where="probe")
