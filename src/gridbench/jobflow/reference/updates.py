"""The CE's UpdateManager: how the CE learns that the bridge finished a job (T6 -> T7).

``sequential`` is CREAM's UpdateManager as the EDGI report found it: take the jobs in
the CE's list, call the bridge's status web service once per job (each call costs
``per_job_cost_s``), handle the answer, then pause ``interval_s``. A pass over N jobs
costs N·cost, so above ``1 / per_job_cost_s`` jobs/s the list grows while submission
runs: the finishing-stage bottleneck of the seed.

``batched`` asks for every status in one call every ``interval_s``: no bottleneck.

When the bridge is another process (the CE tier alone), each call is also a real
``POST /bridge/status`` (``ce_poll``); in one process that costs nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, TypeVar

from gridbench.jobflow.reference.config import GridConfig

log = logging.getLogger("gridbench.jobflow.reference")

J = TypeVar("J")


class JobList(Protocol[J]):
    """What the UpdateManager uses of the grid (:class:`gridbench.jobflow.reference.sim.Grid`,
    which starts it): the status-update settings and the CE's job list."""

    @property
    def config(self) -> GridConfig: ...

    def tracked_snapshot(self) -> list[J]:
        """The CE's job list, oldest first."""
        ...

    def tracked_count(self) -> int:
        """Length of the CE's job list."""
        ...

    def is_tracked(self, job: J) -> bool:
        """True while ``job`` is still in the CE's list."""
        ...

    async def ce_poll(self, jobs: list[J]) -> None:
        """Ask the bridge about ``jobs`` (one call), when it is another process."""
        ...

    def ce_observe(self, job: J) -> None:
        """Apply what one status answer from the bridge says about ``job``."""
        ...


async def sequential(grid: JobList[J], cost_s: float, interval_s: float) -> None:
    """One status call per job in the CE's list, in order, forever."""
    loop = asyncio.get_running_loop()
    while True:
        snapshot = grid.tracked_snapshot()
        # Deadline-based pacing: the pass takes exactly len·cost, whatever the loop overhead.
        due = loop.time()
        for job in snapshot:
            if not grid.is_tracked(job):
                continue  # cancelled since the snapshot: no call is made for it
            due += cost_s
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await grid.ce_poll([job])
            grid.ce_observe(job)
        await asyncio.sleep(interval_s)


async def batched(grid: JobList[J], cost_s: float, interval_s: float) -> None:
    """One call for all statuses every ``interval_s``."""
    while True:
        await asyncio.sleep(interval_s)
        if grid.tracked_count() == 0:
            continue
        if cost_s > 0:
            await asyncio.sleep(cost_s)
        snapshot = grid.tracked_snapshot()
        await grid.ce_poll(snapshot)
        for job in snapshot:
            grid.ce_observe(job)


async def update_manager(grid: JobList[J]) -> None:
    """Run the configured status-update policy of ``grid`` until cancelled."""
    su = grid.config.status_update
    policy = sequential if su.policy == "sequential" else batched
    while True:
        try:
            await policy(grid, su.per_job_cost_s, su.interval_s)
        except Exception:  # e.g. a report write failed: log it and keep finishing jobs
            log.exception("the CE UpdateManager failed; restarting it")
            await asyncio.sleep(su.interval_s)
