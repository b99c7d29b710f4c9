"""Slurm's optional operations (issue 14): advance reservations through ``scontrol create
reservation`` / ``scontrol delete reservation=NAME`` and credentials through ``scontrol
token`` (a JWT: the cluster needs ``AuthAltTypes=auth/jwt``). Held submission
(``sbatch --hold``) is the generic :meth:`BatchSchedulerBackend.submit_held`.

Every call is an argv list with a time-out, through the backend's status/cancel client
runner; a refusal is a BackendError with Slurm's words, the place and the fix.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import pwd
import re
import time
from typing import TYPE_CHECKING

from gridbench.errors import BackendError
from gridbench.jobflow.backends.batch_cli import BatchSchedulerBackend, short

if TYPE_CHECKING:
    from gridbench.jobflow.backends.slurm.options import SlurmOptions

#: how long a release waits for the jobs it cancelled in the reservation to end
IN_USE_WAIT_S = 30.0
#: what ``scontrol token`` prints on success
_TOKEN = re.compile(r"^SLURM_JWT=\S+", re.MULTILINE)
FIX_JWT = (
    "scontrol token needs AuthAltTypes=auth/jwt and AuthAltParameters=jwt_key=... in "
    "slurm.conf (and the caller must be SlurmUser or root to name another user)"
)
FIX_RESERVE = (
    "check backend.options.reservation_args (e.g. [starttime=now, duration=10, "
    "nodes=ALL, flags=ignore_jobs]); only SlurmUser or root may create reservations"
)


def _user() -> str:
    """The submitting Unix user (a reservation's ``users=`` default)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return getpass.getuser()


class SlurmOperations(BatchSchedulerBackend):
    """Reserver and CredentialIssuer of the Slurm backend (mixed into it)."""

    options: SlurmOptions
    #: the reservation later submissions go into (``use_reservation``), or none
    reservation: str | None = None

    def reservation_argv(self, name: str) -> list[str]:
        """``scontrol create reservation`` for ``name`` with the configured arguments;
        ``users=`` is the submitting user unless the arguments name users or accounts."""
        args = list(self.options.reservation_args)
        if not any(a.lower().startswith(("users=", "accounts=")) for a in args):
            args.append(f"users={_user()}")
        return ["scontrol", "create", "reservation", f"reservationname={name}", *args]

    async def reserve(self, name: str) -> str:
        """Create the reservation ``name``; return its name (Slurm's id of it)."""
        r = await self._checked("scontrol create reservation", self.reservation_argv(name))
        if r.rc != 0 or "Reservation created" not in r.out:
            raise BackendError(
                f"scontrol create reservation {name} failed (exit {r.rc}): {short(r.err or r.out)}",
                where="scontrol create reservation",
                fix=FIX_RESERVE,
            )
        return name

    async def reserve_nodes(self, name: str, nodes: int) -> str:
        """A reservation ``name`` of ``nodes`` nodes from now on, for the submitting user
        (``flags=ignore_jobs``: nodes running other jobs may be taken)."""
        argv = ["scontrol", "create", "reservation", f"reservationname={name}"]
        argv += ["starttime=now", "duration=UNLIMITED", f"nodecnt={nodes}"]
        argv += [f"users={_user()}", "flags=ignore_jobs"]
        r = await self._checked("scontrol create reservation", argv)
        if r.rc != 0 or "Reservation created" not in r.out:
            raise BackendError(
                f"scontrol create reservation of {nodes} node(s) failed (exit {r.rc}): "
                f"{short(r.err or r.out)}",
                where="load.reserve_nodes",
                fix="ask for at most the cluster's nodes (sinfo -N); only SlurmUser or root "
                "may create reservations",
            )
        return name

    def use_reservation(self, reservation: str | None) -> None:
        """``sbatch --reservation=NAME`` for every later submission (None: none)."""
        if reservation is not None and self.options.submit_via != "sbatch":
            raise BackendError(
                "a reservation is used through sbatch only",
                where="load.reserve_nodes",
                fix="use submit_via: sbatch with load.reserve_nodes",
            )
        self.reservation = reservation

    async def release(self, reservation: str) -> None:
        """Delete the reservation ``reservation``. Slurm refuses while jobs run in it (a
        killed run's, found by ``gridbench cleanup``): those are cancelled by the
        reservation's name (``scancel --reservation``: only a reservation gridbench made
        is ever released) and the delete retried for up to ``IN_USE_WAIT_S``."""
        argv = ["scontrol", "delete", f"reservation={reservation}"]
        r = await self._checked("scontrol delete reservation", argv)
        if r.rc != 0 and "in use" in (r.err or r.out):
            await self._checked("scancel", ["scancel", f"--reservation={reservation}"])
            deadline = time.monotonic() + IN_USE_WAIT_S
            while r.rc != 0 and "in use" in (r.err or r.out) and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                r = await self._checked("scontrol delete reservation", argv)
        if r.rc != 0:
            raise BackendError(
                f"scontrol delete reservation={reservation} failed (exit {r.rc}): "
                f"{short(r.err or r.out)}",
                where="scontrol delete reservation",
                fix="a reservation gridbench did not create, or one already deleted",
            )

    async def issue_credential(self) -> None:
        """One ``scontrol token`` call; its JWT is dropped (only the issue is timed)."""
        r = await self._checked("scontrol token", ["scontrol", "token", *self.options.token_args])
        if r.rc != 0 or not _TOKEN.search(r.out):
            raise BackendError(
                f"scontrol token refused (exit {r.rc}): {short(r.err or 'no SLURM_JWT=')}",
                where="scontrol token",
                fix=FIX_JWT,
            )
