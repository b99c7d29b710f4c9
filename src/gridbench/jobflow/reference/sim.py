"""The asyncio model of the EDGI chain: client -> CE -> bridge -> worker pool (DG) -> back.

Simulated time is real time. Each tier is a bounded queue served by ``concurrency``
worker coroutines; the CE->bridge hop and the jobs running in the worker pool are event
loop timers, not tasks, so a job costs one small slotted object. Stamps (T2..T7) go to
the tiers' EDGI monitoring reports:

    T2 CE job_entry -> T3 CE job_submission (job_id_bridge = bridge id)
    -> T4 bridge job_entry -> T5 bridge job_submission (job_id_bridge = DG id)
    -> T6 bridge job_status Finished|Failed -> T7 CE job_status Finished|Failed

T7 happens when the CE's UpdateManager (:mod:`gridbench.jobflow.reference.updates`) learns of
the completion; the client sees the CE's view.

One process runs every tier (``tier="all"``, the default), or one process runs the CE
(``tier="ce"``) and another the bridge and worker pool (``tier="bridge"``), on two hosts
(docs/reference-grid.md, "Tiers on several hosts"): the CE then hands each job to the
bridge with ``POST /bridge/jobs`` and its UpdateManager's status calls are real
``POST /bridge/status`` requests, over the network between them.

The tiers are their own modules: :mod:`.ce_tier` and :mod:`.bridge_tier` (with the worker
pool) on the state they share (:mod:`.chain_state`); a job and its places are
:mod:`.jobs`. :class:`Grid` puts them together with the client's operations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from gridbench.jobflow.reference import reports as rp
from gridbench.jobflow.reference.bridge_tier import BridgeTier
from gridbench.jobflow.reference.ce_tier import CeTier
from gridbench.jobflow.reference.jobs import (
    BRIDGE_HOLDS,
    TERMINAL,
    Job,
    JobOrder,
    Loc,
    SubmitRefused,
)
from gridbench.jobflow.reference.updates import update_manager

#: how long the CE waits for one call to a bridge on another host
BRIDGE_CALL_TIMEOUT_S = 30.0


class Grid(CeTier, BridgeTier):
    """The simulated grid: its tiers, started and stopped together, and the client's
    operations on the CE. All methods run on one event loop (no locking needed)."""

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Start the tier workers, the UpdateManager and report rotation."""
        self._loop = asyncio.get_running_loop()
        spawn = self._loop.create_task
        if self.bridge_url is not None:
            import httpx

            n = self.config.ce.concurrency + 4
            self._bridge_http = httpx.AsyncClient(
                base_url=self.bridge_url,
                timeout=BRIDGE_CALL_TIMEOUT_S,
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
                trust_env=False,
            )
        if self.tier != "bridge":
            for i in range(self.config.ce.concurrency):
                self._tasks.append(spawn(self._ce_worker(), name=f"ce-worker-{i}"))
            self._tasks.append(spawn(update_manager(self), name="ce-update-manager"))
        if self.tier != "ce":
            for i in range(self.config.bridge.concurrency):
                self._tasks.append(spawn(self._bridge_worker(), name=f"bridge-worker-{i}"))
            if self.config.bridge.dispatch_s > 0:
                self._tasks.append(spawn(self._dispatcher(), name="bridge-dispatcher"))
        self._tasks.append(spawn(self._housekeeping(), name="report-rotation"))

    async def stop(self) -> None:
        """Stop all activity and close the current report files."""
        for t in [*self._tasks, *self._outgoing]:
            t.cancel()
        await asyncio.gather(*self._tasks, *self._outgoing, return_exceptions=True)
        self._tasks.clear()
        self._outgoing.clear()
        for job in self.jobs.values():
            if job.timer is not None:
                job.timer.cancel()
                job.timer = None
        self.ce_reports.close()
        self.bridge_reports.close()
        if self._bridge_http is not None:
            await self._bridge_http.aclose()
            self._bridge_http = None

    # -- client operations ------------------------------------------------------------
    def submit(self, order: JobOrder) -> Job:
        """Accept a job into the CE (T2) or raise :class:`SubmitRefused`."""
        faults = self.config.faults
        if faults.submit_failure_prob > 0 and self._rng.random() < faults.submit_failure_prob:
            raise SubmitRefused("error", "injected submission failure (submit_failure_prob)")
        if self.ce_load() >= self.config.ce.queue_limit:
            raise SubmitRefused(
                "rejected", f"CE queue full ({self.config.ce.queue_limit} jobs waiting)"
            )
        self._n_ce += 1
        ce_id = f"ce-{self._tag}-{self._n_ce:06d}"
        t = self._clock()
        job = Job.of(order, ce_id, Loc.CE_QUEUED, t)
        self._count[Loc.CE_QUEUED] += 1
        self.jobs[ce_id] = job
        self.ce_reports.entry(t, ce_id, job.application, self.config.ce.input_grid_name)
        self._ce_q.put_nowait(job)
        return job

    async def submit_held(self, order: JobOrder) -> Job:
        """Like :meth:`submit`, but with ``on_full: timeout`` wait up to ``hold_s`` for room."""
        faults = self.config.faults
        if faults.on_full == "timeout":
            loop = asyncio.get_running_loop()
            deadline = loop.time() + faults.hold_s
            while self.ce_load() >= self.config.ce.queue_limit:
                if loop.time() >= deadline:
                    raise SubmitRefused(
                        "timeout", f"CE queue full; request held {faults.hold_s:g} s"
                    )
                await asyncio.sleep(0.02)
        return self.submit(order)

    def status(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The CE's view ``(state, message)`` of each known id; unknown ids are omitted."""
        out: dict[str, tuple[str, str]] = {}
        jobs = self.jobs
        for i in ids:
            job = jobs.get(i)
            if job is not None:
                out[i] = (job.ce_state, job.message)
        return out

    def cancel(self, ids: Iterable[str]) -> int:
        """Cancel the non-terminal jobs among ``ids``; return how many were cancelled."""
        n = 0
        freed = False
        forward: list[str] = []  # the CE tier alone: jobs the bridge holds, told to it
        for i in ids:
            job = self.jobs.get(i)
            if job is None or job.loc in TERMINAL:
                continue
            t = self._clock()
            bridge_knows = job.loc in BRIDGE_HOLDS
            if self.tier == "ce" and job.loc == Loc.TRANSFER:
                forward.append(job.ce_id)  # handed over: the bridge holds it
            if job.loc == Loc.DG_RUNNING:
                if job.timer is not None:
                    job.timer.cancel()
                    job.timer = None
                self._dg_running -= 1
                freed = True
            self._move(job, Loc.CANCELLED)
            job.ce_state = "cancelled"
            job.message = "cancelled by the client"
            job.t_done_ns = t
            self._tracked.pop(job.ce_id, None)
            if self.tier != "bridge":
                self.ce_reports.status(t, job.ce_id, rp.STATUS_CANCELLED)
            if bridge_knows:
                self.bridge_reports.status(t, self._bridge_rid(job), rp.STATUS_CANCELLED)
            n += 1
        if freed:
            self._dg_fill()
        if forward:
            self._spawn(self._bridge_call("/bridge/cancel", {"ids": forward}))
        return n

    def output(self, ce_id: str) -> str | None:
        """The job's output once terminal, else None. Raises KeyError for an unknown id."""
        job = self.jobs[ce_id]
        if job.ce_state == "done":
            return f"{job.name}: finished on {job.dg_id} after {job.ran_s:.3f} s\n"
        if job.ce_state in ("failed", "cancelled"):
            return f"{job.name}: {job.ce_state}: {job.message}\n"
        return None
