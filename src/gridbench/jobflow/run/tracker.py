"""Tracks in-flight jobs with one batched status call per sweep (never one per job)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import TERMINAL_STATES, Backend, JobState, JobStatus
from gridbench.jobflow.events.model import (
    FAIL_JOB,
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    Event,
)
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.recorder import Recorder

log = logging.getLogger(__name__)

UNMATCHED_CAP = 100_000  # server stamps kept while their backend id is unknown
SWEEP_CHUNK = 512  # status answers handled between two turns of the event loop (~0.3 ms)


class StatusTracker:
    """Owns the map of in-flight jobs (backend id -> gridbench job) and sweeps it."""

    def __init__(
        self,
        backend: Backend,
        recorder: Recorder,
        progress: TrialProgress,
        interval_s: float,
        *,
        max_duty: float = 1.0,
        max_consecutive_errors: int = 10,
        on_server_events: Callable[[list[object]], None] | None = None,
    ) -> None:
        self.backend = backend
        self.rec = recorder
        self.progress = progress
        self.interval = interval_s
        self.max_duty = max_duty
        self.longest_pause = interval_s  # the longest wait between two sweeps, seconds
        self.stretched = 0  # pauses made longer than the interval by the duty cap
        self.inflight: dict[str, str] = {}
        # per in-flight job, when a status answer last showed it not ended (the ask time):
        # its end lies between that and the answer that shows it ended, so that bracket,
        # not the clock's resolution, is client_done's precision (polled, not observed)
        self._seen_ns: dict[str, int] = {}
        # every backend id seen this trial -> job (:attr:`names`): its pairs kept as two
        # lists until someone asks (collectors, server stamps), so the open loop appends
        # twice per job instead of inserting into a dict as large as the trial
        self._names: dict[str, str] = {}
        self._ids: list[str] = []
        self._jobs: list[str] = []
        self.sweeps = 0
        self.status_calls = 0
        self.errors = 0
        self._consecutive = 0
        self._max_errors = max_consecutive_errors
        self.fatal: BackendError | None = None
        # A backend's stamp can arrive before its submit call has returned the id (PSI/J
        # calls back from its own thread): such stamps wait here for the id, never dropped.
        self._unmatched: list[Event] = []
        self.unmatched_dropped = 0  # waited past UNMATCHED_CAP: told in trial.json
        #: called with (job, state) for every job :meth:`observe` finds ended (after its
        #: stamps); a load model that waits for its jobs adds a callback and removes it
        self.on_end: list[Callable[[str, JobState], None]] = []

    def add(self, backend_id: str, job: str, acked_ns: int | None = None) -> None:
        """Track a submitted job; ``acked_ns``: when its id came back (default: now)."""
        self.inflight[backend_id] = job
        self._ids.append(backend_id)
        self._jobs.append(job)
        # not ended when the id came back
        self._seen_ns[backend_id] = self.rec.clock.now_ns() if acked_ns is None else acked_ns
        self.progress.in_flight = len(self.inflight)

    def adder(self, *, count: bool = True) -> Callable[[str, str, int], None]:
        """:meth:`add` with ``acked_ns`` given, as a closure over the tracker's maps: the
        open loop's per-job call, without the method's attribute lookups. ``count=False``
        leaves ``progress.in_flight`` to the caller (set once after a burst of adds)."""
        inflight, seen, progress = self.inflight, self._seen_ns, self.progress
        ids, jobs = self._ids.append, self._jobs.append

        def add(backend_id: str, job: str, acked_ns: int) -> None:
            inflight[backend_id] = job
            ids(backend_id)
            jobs(job)
            seen[backend_id] = acked_ns
            progress.in_flight = len(inflight)

        def add_uncounted(backend_id: str, job: str, acked_ns: int) -> None:
            inflight[backend_id] = job
            ids(backend_id)
            jobs(job)
            seen[backend_id] = acked_ns

        return add if count else add_uncounted

    @property
    def names(self) -> dict[str, str]:
        """Every backend id acknowledged this trial -> its job."""
        if self._ids:
            self._names.update(zip(self._ids, self._jobs, strict=True))
            self._ids.clear()
            self._jobs.clear()
        return self._names

    async def sweep(self) -> None:
        """One status call for every in-flight job; stamp the ones that ended."""
        await self._server_events()
        if not self.inflight:
            return
        ids = list(self.inflight)
        self.status_calls += 1
        asked_ns = self.rec.clock.now_ns()
        try:
            states = await self.backend.status(ids)
        except Exception as exc:  # a backend answer we cannot use must not kill the trial
            self.errors += 1
            self._consecutive += 1
            log.warning("status call failed (%s/%s): %s", self._consecutive, self._max_errors, exc)
            if self._consecutive >= self._max_errors:
                self.fatal = BackendError(
                    f"{self._consecutive} status calls in a row failed; last: {exc}",
                    where=f"backend {self.backend.name}",
                    fix="check that the backend is reachable (gridbench check SPEC)",
                )
            return
        self._consecutive = 0
        self.sweeps += 1
        await self.observe(states, asked_ns)

    async def observe(self, states: dict[str, JobStatus], asked_ns: int | None = None) -> None:
        """Stamp the jobs ``states`` shows ended (from a sweep, or a user's own query);
        ``asked_ns``: when the query was sent (default: now). client_done's precision is
        the time since the job was last seen not ended, at least the clock's."""
        rec = self.rec
        now = rec.clock.now_ns()
        asked = now if asked_ns is None else asked_ns
        p = self.progress
        seen, inflight = self._seen_ns, self.inflight
        put, key, floor = rec.put, rec.key, rec.precision
        done, on_end = JobState.DONE, self.on_end
        left = SWEEP_CHUNK
        for bid, st in states.items():  # the backend's answer: nobody else changes it
            left -= 1
            if not left:
                left = SWEEP_CHUNK
                await asyncio.sleep(0)  # a big sweep must not stall the submitters' schedule
            state = st.state
            if state not in TERMINAL_STATES:
                if bid in seen:
                    seen[bid] = asked
                continue
            job = inflight.pop(bid, None)
            if job is None:
                continue
            prec = now - seen.pop(bid, now)
            if prec < floor:
                prec = floor
            if state is done:
                put((job, STAGE_CLIENT_DONE, now, prec, key, ""))
                p.completed += 1
            elif state is JobState.FAILED:
                rec.stamp(job, STAGE_CLIENT_DONE, now, {"state": state.value}, prec)
                p.failed += 1
                attrs = {"kind": FAIL_JOB, "message": st.message[:500]}
                rec.stamp(job, STAGE_FAILED, now, attrs)
            else:  # cancelled by someone else: it did not complete, so no client_done
                rec.stamp(job, STAGE_CANCELLED, now, {"by": "backend"})
            if on_end:
                self._ended(job, state)
        p.in_flight = len(inflight)

    def _ended(self, job: str, state: JobState) -> None:
        for callback in list(self.on_end):
            callback(job, state)

    async def _server_events(self) -> None:
        if not self.backend.capabilities().server_events:
            return
        try:
            events = await self.backend.server_events()
        except Exception as exc:
            log.warning("server events failed: %s", exc)
            return
        log_, names = self.rec.log, self.names
        waiting: list[Event] = []
        for e in [*self._unmatched, *events]:
            job = names.get(e.job)
            if job is None:
                waiting.append(e)
                continue
            log_.add(dataclasses.replace(e, job=job))  # the backend's id -> our job name
        over = len(waiting) - UNMATCHED_CAP
        if over > 0:  # ids that never become ours (another user's jobs): keep memory bounded
            self.unmatched_dropped += over
            waiting = waiting[over:]
        self._unmatched = waiting

    @property
    def unmatched(self) -> int:
        """Server stamps still waiting for a backend id this trial submitted."""
        return len(self._unmatched)

    def pause_after(self, took_s: float) -> float:
        """The wait before the next sweep: the interval, or longer after a slow sweep, so
        that sweeping takes at most ``max_duty`` of the time. A sweep lists every job the
        scheduler holds: on a busy cluster polling at a fixed rate would become the load."""
        pause = self.interval
        if self.max_duty < 1.0:
            pause = max(pause, took_s * (1.0 - self.max_duty) / self.max_duty)
        if pause > self.interval:
            self.stretched += 1
            self.longest_pause = max(self.longest_pause, pause)
        return pause

    async def _timed_sweep(self) -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await self.sweep()
        if self._consecutive:  # a failed call (a time-out, say) is not a slow listing
            return self.interval
        return self.pause_after(loop.time() - t0)

    async def run_until(self, done: asyncio.Event) -> None:
        """Sweep every interval (or less often, see :meth:`pause_after`) until ``done``."""
        while not done.is_set():
            pause = await self._timed_sweep()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout=pause)

    async def drain(self, timeout_s: float, stop: asyncio.Event | None) -> None:
        """Sweep until nothing is in flight, the drain time-out passes, or ``stop`` is set
        (``None``: drain even through an abort)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        stop = stop or asyncio.Event()
        while self.inflight and not stop.is_set():
            pause = await self._timed_sweep()
            if self.fatal or loop.time() >= deadline:
                break  # the last sweep was at (or after) the deadline: nothing is missed
            if self.inflight:  # a stretched pause must not carry the drain past its end
                pause = min(pause, deadline - loop.time())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=pause)
        if self.fatal:
            return
        await self._server_events()

    async def give_up(self, *, cancel: bool) -> tuple[int, str | None]:
        """Jobs still in flight after the drain: cancel them (never leave load behind on the
        backend) or, if cancelling is off or fails, record them as lost. ``lost`` jobs stay
        outstanding for ``gridbench cleanup``. Returns (cancelled count, cancel error)."""
        ids = list(self.inflight)
        if not ids:
            return 0, None
        error = None
        if cancel:
            try:
                await self.backend.cancel(ids)
            except Exception as exc:
                error = f"cancel of {len(ids)} jobs failed: {exc}"
                log.warning("%s", error)
            else:
                now = self.rec.clock.now_ns()
                for bid in ids:
                    self._seen_ns.pop(bid, None)
                    self.rec.stamp(
                        self.inflight.pop(bid), STAGE_CANCELLED, now, {"by": "gridbench"}
                    )
                self.progress.in_flight = 0
                return len(ids), None
        now = self.rec.clock.now_ns()
        for bid in ids:
            self._seen_ns.pop(bid, None)
            self.rec.stamp(self.inflight.pop(bid), STAGE_FAILED, now, {"kind": FAIL_LOST})
        self.progress.failed += len(ids)
        self.progress.in_flight = 0
        return 0, error
