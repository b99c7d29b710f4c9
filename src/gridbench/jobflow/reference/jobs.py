"""A job of the reference grid, where it is in the chain and what the client asked for.

:class:`JobOrder` is a submission as the client (``POST /jobs``) or the CE on another host
(``POST /bridge/jobs``) hands it over; :class:`Job` is the grid's record of it, small on
purpose; :class:`Loc` says where it is, :class:`BridgeState` what the bridge answers of
it. :data:`Tier` names which tiers one process runs.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Literal

from gridbench.jobflow.reference.staging import JobData

#: which tiers one process runs: all of them, the CE only, or the bridge and worker pool
Tier = Literal["all", "ce", "bridge"]
TIERS: tuple[Tier, ...] = ("all", "ce", "bridge")


class Loc(enum.IntEnum):
    """Where a job is in the chain."""

    CE_QUEUED = 0
    CE_SERVICE = 1
    TRANSFER = 2  # between T3 and T4
    BRIDGE_QUEUED = 3
    BRIDGE_SERVICE = 4
    DG_QUEUED = 5  # submitted to the DG (T5), waiting for a slot
    DG_RUNNING = 6
    FINISHING = 7  # the bridge knows it ended (T6), the CE does not yet (T7)
    DONE = 8
    CANCELLED = 9
    STAGE_OUT = 10  # ran; its output is being downloaded (bridge.stage_out), before T6


class BridgeState(enum.IntEnum):
    """What a status call to the bridge answers."""

    UNKNOWN = 0
    QUEUED = 1
    RUNNING = 2
    FINISHED = 3
    FAILED = 4


@dataclass(slots=True, eq=False)
class Job:
    """One job; small on purpose (tens of thousands live at once)."""

    ce_id: str
    name: str
    application: str
    runtime_s: float | None
    fail: bool
    loc: Loc
    t_entry_ns: int
    bridge_id: str = ""
    dg_id: str = ""
    bridge_state: BridgeState = BridgeState.UNKNOWN
    ce_state: str = "queued"  # the client's view: queued|running|done|failed|cancelled
    message: str = ""
    ran_s: float = 0.0
    t_done_ns: int = 0
    timer: asyncio.TimerHandle | None = None
    data: JobData | None = None  # what to stage; None: nothing (or no staging link)

    @classmethod
    def of(cls, order: JobOrder, ce_id: str, loc: Loc, t_entry_ns: int) -> Job:
        """The record of ``order`` under the CE's id ``ce_id``, at ``loc`` from ``t_entry_ns``."""
        app = order.application or "reference"
        return cls(
            ce_id, order.name, app, order.runtime_s, order.fail, loc, t_entry_ns, data=order.data
        )


@dataclass(frozen=True, slots=True)
class JobOrder:
    """A job as it is submitted: its name, how long it runs (None: the configured
    distribution), whether it is to fail, its application (None: ``reference``) and what
    it stages."""

    name: str
    runtime_s: float | None
    fail: bool
    application: str | None
    data: JobData | None = None


class SubmitRefused(Exception):
    """The CE refused a submission; ``kind`` is ``rejected``, ``timeout`` or ``error``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


#: where a job has ended
TERMINAL = (Loc.DONE, Loc.CANCELLED)


def still_at(job: Job, loc: Loc) -> bool:
    """Whether ``job`` is still at ``loc``."""
    # A function, not an inline test: a cancel during an await moves the job behind our back.
    return job.loc == loc


#: where the bridge holds a job (it must hear of a cancel)
BRIDGE_HOLDS = (
    Loc.BRIDGE_QUEUED,
    Loc.BRIDGE_SERVICE,
    Loc.DG_QUEUED,
    Loc.DG_RUNNING,
    Loc.STAGE_OUT,
)
