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
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gridbench.jobflow.reference import reports as rp
from gridbench.jobflow.reference.config import GridConfig, LinkConfig
from gridbench.jobflow.reference.dist import make_sampler
from gridbench.jobflow.reference.staging import STAGE_IN, STAGE_OUT, JobData, Link, Stamps
from gridbench.jobflow.reference.updates import update_manager

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("gridbench.jobflow.reference")

#: which tiers one process runs: all of them, the CE only, or the bridge and worker pool
Tier = Literal["all", "ce", "bridge"]
TIERS: tuple[Tier, ...] = ("all", "ce", "bridge")
#: how long the CE waits for one call to a bridge on another host
BRIDGE_CALL_TIMEOUT_S = 30.0


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


class SubmitRefused(Exception):
    """The CE refused a submission; ``kind`` is ``rejected``, ``timeout`` or ``error``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


_TERMINAL = (Loc.DONE, Loc.CANCELLED)


def _at(job: Job, loc: Loc) -> bool:
    # A function, not an inline test: a cancel during an await moves the job behind our back.
    return job.loc == loc


_BRIDGE_HOLDS = (
    Loc.BRIDGE_QUEUED,
    Loc.BRIDGE_SERVICE,
    Loc.DG_QUEUED,
    Loc.DG_RUNNING,
    Loc.STAGE_OUT,
)


class Grid:
    """The simulated grid. All methods run on one event loop (no locking needed)."""

    def __init__(
        self,
        config: GridConfig,
        reports_dir: Path,
        *,
        clock: Callable[[], int] = time.time_ns,
        tier: Tier = "all",
        bridge_url: str | None = None,
    ) -> None:
        if (tier == "ce") != (bridge_url is not None):
            raise ValueError("the CE tier alone needs the bridge's URL (and only it)")
        self.tier: Tier = tier
        self.bridge_url = bridge_url
        self._bridge_http: httpx.AsyncClient | None = None
        self.config = config
        self.reports_dir = reports_dir
        self._clock = clock
        self._rng = np.random.default_rng(config.seed)
        self._ce_service = make_sampler(config.ce.service, self._rng)
        self._bridge_service = make_sampler(config.bridge.service, self._rng)
        self._transfer = make_sampler(config.bridge.transfer, self._rng)
        self._runtime = make_sampler(config.workers.runtime, self._rng)
        rc = config.reports
        self.ce_reports, self.bridge_reports = (
            rp.ReportWriter(
                kind,
                reports_dir,
                rotate_s=rc.rotate_s,
                publication_delay_s=rc.publication_delay_s,
                dt_precision=rc.dt_precision,
                clock=clock,
            )
            for kind in ("ce", "bridge")
        )
        self._log_running = rc.log_running
        # A random instance tag keeps ids unique across restarts sharing a reports dir.
        self._tag = secrets.token_hex(3)
        self._n_ce = self._n_bridge = self._n_dg = 0
        self.jobs: dict[str, Job] = {}
        self._tracked: dict[str, Job] = {}  # the CE's job list: T3 seen, T7 not yet
        self._count = [0] * len(Loc)
        self._ce_q: asyncio.Queue[Job] = asyncio.Queue()
        self._bridge_q: asyncio.Queue[Job] = asyncio.Queue()
        self._dg_wait: collections.deque[Job] = collections.deque()
        self._dispatch_wait: list[Job] = []  # prepared, for the next pass (dispatch_s)
        self._dg_running = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stamps = Stamps()
        self._stage_in = self._link(config.ce.stage_in, STAGE_IN) if tier != "bridge" else None
        self._stage_out = self._link(config.bridge.stage_out, STAGE_OUT) if tier != "ce" else None
        self._outgoing: set[asyncio.Task[None]] = set()

    def _link(self, cfg: LinkConfig, stages: tuple[str, str]) -> Link | None:
        if not cfg.enabled:
            return None  # the default: no staging, no stamps, the chain as before
        return Link(cfg, stages, self.stamps, self._clock)

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

    async def _housekeeping(self) -> None:
        period = min(0.1, self.config.reports.rotate_s / 4)
        while True:
            await asyncio.sleep(period)
            self.ce_reports.tick()
            self.bridge_reports.tick()

    # -- bookkeeping ------------------------------------------------------------------
    def _move(self, job: Job, loc: Loc) -> None:
        self._count[job.loc] -= 1
        self._count[loc] += 1
        job.loc = loc

    def ce_load(self) -> int:
        """Jobs in the CE tier (queued or in preparation): what ``queue_limit`` bounds."""
        return self._count[Loc.CE_QUEUED] + self._count[Loc.CE_SERVICE]

    def queue_lengths(self) -> dict[str, int]:
        """Jobs per tier, and the length of the CE's status-check list."""
        c = self._count
        out = {
            "ce": c[Loc.CE_QUEUED] + c[Loc.CE_SERVICE],
            "bridge": c[Loc.TRANSFER] + c[Loc.BRIDGE_QUEUED] + c[Loc.BRIDGE_SERVICE],
            "workers": c[Loc.DG_QUEUED] + c[Loc.DG_RUNNING] + c[Loc.STAGE_OUT],
            "finishing": c[Loc.FINISHING],
        }
        out["total"] = sum(out.values())
        out["ce_list"] = len(self._tracked)
        return out

    # -- client operations ------------------------------------------------------------
    def submit(
        self,
        name: str,
        runtime_s: float | None,
        fail: bool,
        application: str | None,
        data: JobData | None = None,
    ) -> Job:
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
        app = application or "reference"
        job = Job(ce_id, name, app, runtime_s, fail, Loc.CE_QUEUED, t, data=data)
        self._count[Loc.CE_QUEUED] += 1
        self.jobs[ce_id] = job
        self.ce_reports.entry(t, ce_id, app, self.config.ce.input_grid_name)
        self._ce_q.put_nowait(job)
        return job

    async def submit_held(
        self,
        name: str,
        runtime_s: float | None,
        fail: bool,
        application: str | None,
        data: JobData | None = None,
    ) -> Job:
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
        return self.submit(name, runtime_s, fail, application, data)

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
            if job is None or job.loc in _TERMINAL:
                continue
            t = self._clock()
            bridge_knows = job.loc in _BRIDGE_HOLDS
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

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._outgoing.add(task)
        task.add_done_callback(self._outgoing.discard)

    async def _bridge_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One call to the bridge on another host (the CE tier alone); its JSON answer."""
        assert self._bridge_http is not None
        r = await self._bridge_http.post(path, json=body)
        r.raise_for_status()
        data = r.json()
        if not isinstance(data, dict):
            raise ValueError(f"the bridge answered {path} with {type(data).__name__}")
        return data

    def output(self, ce_id: str) -> str | None:
        """The job's output once terminal, else None. Raises KeyError for an unknown id."""
        job = self.jobs[ce_id]
        if job.ce_state == "done":
            return f"{job.name}: finished on {job.dg_id} after {job.ran_s:.3f} s\n"
        if job.ce_state in ("failed", "cancelled"):
            return f"{job.name}: {job.ce_state}: {job.message}\n"
        return None

    # -- the CE -----------------------------------------------------------------------
    async def _ce_worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = await self._ce_q.get()
            if job.loc != Loc.CE_QUEUED:
                continue  # cancelled while waiting
            try:
                self._move(job, Loc.CE_SERVICE)
                await asyncio.sleep(self._ce_service())
                if self._stage_in is not None and _at(job, Loc.CE_SERVICE):
                    # the CE worker holds the job while its input uploads (A-REX PREPARING)
                    d = job.data or JobData()
                    await self._stage_in.transfer(job.ce_id, d.input_bytes, d.input_files)
                if not _at(job, Loc.CE_SERVICE):  # cancelled meanwhile
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

    def _fail_internal(self, job: Job, message: str) -> None:
        if job.loc in _TERMINAL:
            return
        job.bridge_state = BridgeState.FAILED
        job.message = message
        self._move(job, Loc.FINISHING)
        if self.tier != "bridge":
            self._tracked[job.ce_id] = job

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

    # -- the bridge tier alone (its API for the CE on another host) --------------------
    def bridge_accept(
        self,
        ce_id: str,
        bridge_id: str,
        name: str,
        runtime_s: float | None,
        fail: bool,
        application: str | None,
        data: JobData | None = None,
    ) -> None:
        """A job the CE handed over (its T3); it arrives after the transfer time (T4)."""
        loop = self._loop
        assert loop is not None, "Grid.start() was not called"
        if ce_id in self.jobs:
            return  # a retried hand-over: already here
        app = application or "reference"
        job = Job(ce_id, name, app, runtime_s, fail, Loc.TRANSFER, self._clock(), data=data)
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
                if not _at(job, Loc.BRIDGE_SERVICE):
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
                if _at(job, Loc.BRIDGE_SERVICE):  # not cancelled meanwhile
                    try:
                        self._submit_dg(job, t)
                    except Exception:
                        log.exception("bridge dispatch failed on %s", job.bridge_id)
                        self._fail_internal(job, "internal error in the bridge")

    def _bridge_rid(self, job: Job) -> str:
        """The id the bridge's reports name ``job`` by: its own, or (``reports.bridge_ids``)
        the CE's, as some components report a job under the upstream id; ``mixed``: the
        CE's for every other job."""
        how = self.config.reports.bridge_ids
        if how == "upstream" or (how == "mixed" and job.bridge_id[-1:] in "13579"):
            return job.ce_id
        return job.bridge_id

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
            task = asyncio.get_running_loop().create_task(self._download(job, failed))
            self._outgoing.add(task)
            task.add_done_callback(self._outgoing.discard)
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
