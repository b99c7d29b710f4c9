"""Optional operations a backend can offer beyond submit/status/cancel (issue 14): the
probe load model times them, and refuses at validate a backend that lacks the one asked for.

Each is a ``runtime_checkable`` Protocol checked with ``isinstance`` (never a getattr
probe): a backend offers one by defining its methods. As with the hooks in
:mod:`gridbench.jobflow.backends.base`, the check sees the method names only; mypy checks the
signatures (each backend module pins its class to the protocols it claims).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from gridbench.jobflow.backends.base import JobRequest


@runtime_checkable
class HoldingSubmitter(Protocol):
    """Submits a job that stays queued until cancelled (``sbatch --hold``; the local
    backend's job that never gets a slot): a real id to query and cancel, at no run cost."""

    async def submit_held(self, job: JobRequest) -> str:
        """Submit ``job`` held; return its id (a SubmitError when refused)."""
        ...


@runtime_checkable
class Reserver(Protocol):
    """Creates and deletes advance reservations (Slurm: ``scontrol create reservation``)."""

    async def reserve(self, name: str) -> str:
        """Create a reservation called ``name`` (gridbench-<run>-<n>); return its id."""
        ...

    async def release(self, reservation: str) -> None:
        """Delete the reservation ``reservation`` (an id :meth:`reserve` returned)."""
        ...


@runtime_checkable
class NodeReserver(Protocol):
    """Reserves N nodes for the jobs it submits next (Slurm: ``scontrol create reservation
    nodecnt=N``, then ``sbatch --reservation``): the retry model's ``reserve_nodes``."""

    async def reserve_nodes(self, name: str, nodes: int) -> str:
        """Create the reservation ``name`` of ``nodes`` nodes; return its id."""
        ...

    def use_reservation(self, reservation: str | None) -> None:
        """Submit every later job into ``reservation`` (None: into none)."""
        ...

    async def release(self, reservation: str) -> None:
        """Delete the reservation ``reservation``."""
        ...


@runtime_checkable
class CredentialIssuer(Protocol):
    """Issues a fresh credential (Slurm: ``scontrol token``, a JWT)."""

    async def issue_credential(self) -> None:
        """Ask for one credential; a BackendError naming the refusal when it is refused.
        The credential itself is dropped: gridbench times the issue, it keeps no secret."""
        ...


@runtime_checkable
class Checkpointer(Protocol):
    """Checkpoints a running job and restarts it from the checkpoint (local: CRIU)."""

    async def checkpoint(self, backend_id: str) -> None:
        """Dump the running job ``backend_id`` (it stops); a BackendError if it cannot."""
        ...

    async def restart(self, backend_id: str) -> None:
        """Restore the job from its last checkpoint (it runs again)."""
        ...


@runtime_checkable
class NamedOperations(Protocol):
    """Runs site-defined operations by name (the command backend's ``operations:``)."""

    def operations(self) -> Sequence[str]:
        """The names this configuration defines."""
        ...

    async def run_operation(self, name: str) -> None:
        """Run the operation ``name`` once; a BackendError when it fails."""
        ...
