"""The reference grid's CE: its workers prepare each job (T2 -> T3) and hand it to the
bridge, in this process or over HTTP on another host; its status updates (the
UpdateManager of :mod:`gridbench.jobflow.reference.updates` calls :meth:`CeTier.ce_poll`
and :meth:`CeTier.ce_observe`) learn that the bridge finished a job (T7)."""

from __future__ import annotations

import asyncio
import logging

from gridbench.jobflow.reference import reports as rp
from gridbench.jobflow.reference.chain_state import ChainState
from gridbench.jobflow.reference.jobs import BridgeState, Job, Loc, still_at
from gridbench.jobflow.reference.staging import JobData

log = logging.getLogger("gridbench.jobflow.reference")


class CeTier(ChainState):
    """The CE's side of the chain."""

    async def _ce_worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = await self._ce_q.get()
            if job.loc != Loc.CE_QUEUED:
                continue  # cancelled while waiting
            try:
                self._move(job, Loc.CE_SERVICE)
                await asyncio.sleep(self._ce_service())
                if self._stage_in is not None and still_at(job, Loc.CE_SERVICE):
                    # the CE worker holds the job while its input uploads (A-REX PREPARING)
                    d = job.data or JobData()
                    await self._stage_in.transfer(job.ce_id, d.input_bytes, d.input_files)
                if not still_at(job, Loc.CE_SERVICE):  # cancelled meanwhile
                    continue
                self._n_bridge += 1
                job.bridge_id = f"br-{self._tag}-{self._n_bridge:06d}"
                self._move(job, Loc.TRANSFER)
                self.ce_reports.submission(
                    self._clock(), job.ce_id, job.bridge_id, self.config.bridge.url
                )
                self._tracked[job.ce_id] = job
                if self._bridge_http is None:
                    loop.call_later(self._transfer(), self._bridge_arrive, job)
                else:  # the bridge is another process: it stays TRANSFER here until T7
                    self._spawn(self._hand_over(job))
            except Exception:  # keep the tier alive; the job is failed, not lost
                log.exception("CE worker failed on %s", job.ce_id)
                self._fail_internal(job, "internal error in the CE")

    async def _hand_over(self, job: Job) -> None:
        """The CE tier alone: submit ``job`` to the bridge over HTTP (T3 -> T4 there)."""
        d = job.data or JobData()
        body = {
            "id": job.ce_id,
            "bridge_id": job.bridge_id,
            "name": job.name,
            "application": job.application,
            "runtime_s": job.runtime_s,
            "fail": job.fail,
            "input_bytes": d.input_bytes,
            "input_files": d.input_files,
            "output_bytes": d.output_bytes,
            "output_files": d.output_files,
        }
        try:
            await self._bridge_call("/bridge/jobs", body)
        except Exception as exc:  # the job fails (the CE learns it at its next update)
            log.warning("handing %s to the bridge failed: %s", job.ce_id, exc)
            if job.loc == Loc.TRANSFER:
                self._fail_internal(job, f"the bridge did not accept it: {exc}"[:500])

    # -- the CE's status updates (used by the UpdateManager) --------------------------
    async def ce_poll(self, jobs: list[Job]) -> None:
        """The CE tier alone: one status call to the bridge for ``jobs``, whose answer
        :meth:`ce_observe` then applies; in one process, nothing (the state is shared)."""
        if self._bridge_http is None or not jobs:
            return
        try:
            data = await self._bridge_call("/bridge/status", {"ids": [j.ce_id for j in jobs]})
            answers = data["jobs"]
            for job in jobs:
                a = answers.get(job.ce_id)
                if not isinstance(a, dict) or job.loc != Loc.TRANSFER:
                    continue
                job.bridge_state = BridgeState[str(a.get("state", "unknown")).upper()]
                job.message = str(a.get("message") or "")[:500]
                job.dg_id = str(a.get("dg_id") or "")
                job.ran_s = float(a.get("ran_s") or 0.0)
        except Exception as exc:  # the next call asks again
            log.warning("status call to the bridge failed: %s", exc)

    def tracked_snapshot(self) -> list[Job]:
        """The CE's job list (submitted to the bridge, not finished), oldest first."""
        return list(self._tracked.values())

    def tracked_count(self) -> int:
        """Length of the CE's job list."""
        return len(self._tracked)

    def is_tracked(self, job: Job) -> bool:
        """True while ``job`` is still in the CE's list (not finished, not cancelled)."""
        return job.ce_id in self._tracked

    def ce_observe(self, job: Job) -> None:
        """Apply what one status answer from the bridge says about ``job`` (T7 if terminal)."""
        if job.ce_id not in self._tracked:
            return
        st = job.bridge_state
        if st in (BridgeState.FINISHED, BridgeState.FAILED):
            t = self._clock()
            ok = st == BridgeState.FINISHED
            self.ce_reports.status(t, job.ce_id, rp.STATUS_FINISHED if ok else rp.STATUS_FAILED)
            job.ce_state = "done" if ok else "failed"
            job.t_done_ns = t
            del self._tracked[job.ce_id]
            self._move(job, Loc.DONE)
        elif st == BridgeState.RUNNING and job.ce_state == "queued":
            job.ce_state = "running"
            if self._log_running:
                self.ce_reports.status(self._clock(), job.ce_id, rp.STATUS_RUNNING)
