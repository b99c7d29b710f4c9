"""The reference grid's bridge and worker pool (the DG): the bridge's workers prepare each
job (T4) and submit it to the pool (T5), at once or at the dispatcher's passes; the pool
runs it in a free slot, its output is staged out, and the bridge reports it ended (T6).
When the CE is on another host, it hands jobs over and asks their state through
:meth:`BridgeTier.bridge_accept` and :meth:`BridgeTier.bridge_status`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from gridbench.jobflow.reference import reports as rp
from gridbench.jobflow.reference.chain_state import ChainState
from gridbench.jobflow.reference.jobs import BridgeState, Job, JobOrder, Loc, still_at
from gridbench.jobflow.reference.staging import JobData

log = logging.getLogger("gridbench.jobflow.reference")


class BridgeTier(ChainState):
    """The bridge's and the worker pool's side of the chain."""

    # -- the bridge tier alone (its API for the CE on another host) --------------------
    def bridge_accept(self, ce_id: str, bridge_id: str, order: JobOrder) -> None:
        """A job the CE handed over (its T3); it arrives after the transfer time (T4)."""
        loop = self._loop
        assert loop is not None, "Grid.start() was not called"
        if ce_id in self.jobs:
            return  # a retried hand-over: already here
        job = Job.of(order, ce_id, Loc.TRANSFER, self._clock())
        job.bridge_id = bridge_id
        self._count[Loc.TRANSFER] += 1
        self.jobs[ce_id] = job
        loop.call_later(self._transfer(), self._bridge_arrive, job)

    def bridge_status(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What the bridge knows of each job (by the CE's id; unknown ids omitted). A
        finished job, once answered, leaves the bridge's books (the CE now knows)."""
        out: dict[str, dict[str, Any]] = {}
        for i in ids:
            job = self.jobs.get(i)
            if job is None:
                continue
            out[i] = {
                "state": job.bridge_state.name.lower(),
                "message": job.message,
                "dg_id": job.dg_id,
                "ran_s": job.ran_s,
            }
            if job.loc == Loc.FINISHING:
                self._move(job, Loc.DONE)
        return out

    # -- the bridge -------------------------------------------------------------------
    def _bridge_arrive(self, job: Job) -> None:
        if job.loc != Loc.TRANSFER:
            return  # cancelled in transit
        c = self._count
        held = c[Loc.BRIDGE_QUEUED] + c[Loc.BRIDGE_SERVICE]
        if held >= self.config.bridge.queue_limit:
            # The bridge refuses; the CE learns it on its next status call.
            job.bridge_state = BridgeState.FAILED
            job.message = "bridge queue full"
            self._move(job, Loc.FINISHING)
            return
        job.bridge_state = BridgeState.QUEUED
        self._move(job, Loc.BRIDGE_QUEUED)
        # The bridge names the job's source grid, as the EDGI monitoring does.
        self.bridge_reports.entry(
            self._clock(), self._bridge_rid(job), job.application, self.config.ce.input_grid_name
        )
        self._bridge_q.put_nowait(job)

    async def _bridge_worker(self) -> None:
        while True:
            job = await self._bridge_q.get()
            if job.loc != Loc.BRIDGE_QUEUED:
                continue
            try:
                self._move(job, Loc.BRIDGE_SERVICE)
                await asyncio.sleep(self._bridge_service())
                if not still_at(job, Loc.BRIDGE_SERVICE):
                    continue
                if self.config.bridge.dispatch_s > 0:
                    self._dispatch_wait.append(job)  # submitted at the next pass
                else:
                    self._submit_dg(job, self._clock())
            except Exception:
                log.exception("bridge worker failed on %s", job.bridge_id)
                self._fail_internal(job, "internal error in the bridge")

    def _submit_dg(self, job: Job, t: int) -> None:
        """T5: the bridge submits ``job`` to the worker pool."""
        self._n_dg += 1
        job.dg_id = f"dg-{self._tag}-{self._n_dg:06d}"
        self.bridge_reports.submission(
            t, self._bridge_rid(job), job.dg_id, self.config.workers.grid_name
        )
        self._move(job, Loc.DG_QUEUED)
        self._dg_wait.append(job)
        self._dg_fill()

    async def _dispatcher(self) -> None:
        """``bridge.dispatch_s``: every prepared job submitted together, at passes on a
        fixed grid of the loop's clock (one stamp for the whole pass)."""
        loop = asyncio.get_running_loop()
        period = self.config.bridge.dispatch_s
        while True:
            await asyncio.sleep(period - loop.time() % period)
            jobs, self._dispatch_wait = self._dispatch_wait, []
            t = self._clock()
            for job in jobs:
                if still_at(job, Loc.BRIDGE_SERVICE):  # not cancelled meanwhile
                    try:
                        self._submit_dg(job, t)
                    except Exception:
                        log.exception("bridge dispatch failed on %s", job.bridge_id)
                        self._fail_internal(job, "internal error in the bridge")

    # -- the worker pool (DG) ---------------------------------------------------------
    def _dg_fill(self) -> None:
        loop = self._loop
        assert loop is not None, "Grid.start() was not called"
        slots = self.config.workers.slots
        while self._dg_running < slots and self._dg_wait:
            job = self._dg_wait.popleft()
            if job.loc != Loc.DG_QUEUED:
                continue
            self._dg_running += 1
            self._move(job, Loc.DG_RUNNING)
            job.bridge_state = BridgeState.RUNNING
            if self._log_running:
                self.bridge_reports.status(self._clock(), self._bridge_rid(job), rp.STATUS_RUNNING)
            job.ran_s = job.runtime_s if job.runtime_s is not None else self._runtime()
            job.timer = loop.call_later(job.ran_s, self._dg_done, job)

    def _dg_done(self, job: Job) -> None:
        job.timer = None
        if job.loc != Loc.DG_RUNNING:
            return
        self._dg_running -= 1
        p = self.config.faults.job_failure_prob
        failed = job.fail or (p > 0 and self._rng.random() < p)
        if self._stage_out is None:
            self._bridge_finish(job, failed)
        else:  # the slot is free while the output downloads; T6 waits for the download
            self._move(job, Loc.STAGE_OUT)
            self._spawn(self._download(job, failed))
        self._dg_fill()

    async def _download(self, job: Job, failed: bool) -> None:
        assert self._stage_out is not None
        d = job.data or JobData()
        try:
            await self._stage_out.transfer(job.ce_id, d.output_bytes, d.output_files)
        except Exception:  # keep the job: failed, not lost
            log.exception("stage-out failed on %s", job.ce_id)
            failed = True
        if job.loc == Loc.STAGE_OUT:  # not cancelled meanwhile
            self._bridge_finish(job, failed)

    def _bridge_finish(self, job: Job, failed: bool) -> None:
        """T6: the bridge reports the job Finished or Failed."""
        if failed:
            job.bridge_state = BridgeState.FAILED
            job.message = "requested failure" if job.fail else "injected failure (job_failure_prob)"
        else:
            job.bridge_state = BridgeState.FINISHED
        self.bridge_reports.status(
            self._clock(), self._bridge_rid(job), rp.STATUS_FAILED if failed else rp.STATUS_FINISHED
        )
        self._move(job, Loc.FINISHING)
