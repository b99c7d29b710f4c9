"""The open loop for a backend that submits by a plain call (``InlineSubmit``: in-process).

The general dispatcher (:func:`~gridbench.jobflow.run.open_loop.run_open_loop`) is a task
that sleeps until each job's time. Here the waits are timer callbacks instead: a wake runs
every job then due and arms the timer for the next, with no future and no task step per
wake. On a VM one wake of the loop costs ~50 us of CPU whatever it does, and a task's
sleep adds a second turn of the loop (~15 us): at 20,000 jobs/s, ~1,000 wakes a second.
What is recorded, and when, is the general dispatcher's: the same stamps in the same
order, the same lag, late and dropped rules, and ``stop`` looked at after every wait.
The trial's progress counters are brought up to date at the end of every wake, before
any other task can read them.

While it runs, the garbage collector's first threshold is raised
(:func:`~gridbench.jobflow.run.heap.fewer_collections`):
a job's rows are containers that wait in the log's buffer until the next flush (0.1 s,
8,000 rows at 20,000 jobs/s), so at the default threshold (700) every row was looked at by
a collection and the buffer's growth set off a full one (~10-15 ms, a pause in the
schedule) a few times a trial. Raised above what one flush interval adds, rows are freed
before a collection sees them; cyclic garbage is still collected, later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from json.encoder import encode_basestring as _json_str

from gridbench.jobflow.backends.base import NO_ENTRIES, JobRequest
from gridbench.jobflow.events.model import (
    FAIL_DROPPED,
    STAGE_FAILED,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.jobflow.run.heap import fewer_collections
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.tracker import StatusTracker

INTERRUPTIBLE_NS = 50_000_000  # waits longer than this end at once when ``stop`` is set


class PlainJobs:
    """The jobs of one open loop, submitted a wake's worth at a time (:meth:`burst`)."""

    def __init__(
        self,
        rec: Recorder,
        tracker: StatusTracker,
        progress: TrialProgress,
        schedule: tuple[int, list[int], list[int]],
        make_request: Callable[[int], JobRequest],
        plain: Callable[[JobRequest], str],
        *,
        max_late_ns: int,
        late_ns: int,
        attributes: Callable[[JobRequest], str],
        failed: Callable[[str, Exception], None],
    ) -> None:
        #: (start, offsets, indices): job ``indices[i]`` is due at start + offsets[i]
        #: (perf_counter_ns)
        self.start, self.offsets, self.idx = schedule
        self.rec, self.tracker, self.progress = rec, tracker, progress
        self.make, self.plain = make_request, plain
        self.max_late, self.late_ns = max_late_ns, late_ns
        self.attributes, self.failed = attributes, failed
        self.track = tracker.adder(count=False)  # in_flight: counted at the end of a burst
        self.next = 0  # the next job to submit

    def burst(self, woke: bool) -> int | None:
        """Submit the next job if ``woke`` (its wait is over) and every later one already
        due; return the wait (ns) before the next one, or None when all are submitted."""
        rec, progress, make, plain = self.rec, self.progress, self.make, self.plain
        put, key, prec = rec.put, rec.key, rec.precision
        shift = rec.clock.shift_ns  # stamps are perf_counter_ns + shift (clock.now_ns)
        start, offsets, idx, track = self.start, self.offsets, self.idx, self.track
        max_late, late_ns, n = self.max_late, self.late_ns, len(offsets)
        perf = time.perf_counter_ns
        i = self.next
        submitted = acknowledged = late = 0
        try:
            while i < n:
                due = start + offsets[i]
                if woke:
                    woke = False
                else:
                    delay = due - perf()
                    if delay > 0:
                        return delay
                now = perf()
                req = make(idx[i])
                i += 1
                job = req.name
                put((job, STAGE_INTENDED, due + shift, prec, key, ""))
                lag = now - due
                if lag > max_late:
                    attrs = {"kind": FAIL_DROPPED, "lag_ns": lag}
                    rec.stamp(job, STAGE_FAILED, now + shift, attrs)
                    progress.dropped += 1
                    continue
                if lag > late_ns:
                    late += 1
                a = "" if req.attributes is NO_ENTRIES else self.attributes(req)
                put((job, STAGE_SUBMIT, now + shift, prec, key, a))
                submitted += 1
                try:
                    bid = plain(req)
                except Exception as exc:  # any backend failure is a recorded failure
                    self.failed(job, exc)
                    continue
                acked = perf() + shift
                ack = f'{{"backend_id":{_json_str(bid)}}}'
                put((job, STAGE_SUBMIT_ACK, acked, prec, key, ack))
                acknowledged += 1
                track(bid, job, acked)
            return None
        finally:
            self.next = i
            progress.submitted += submitted
            progress.acknowledged += acknowledged
            progress.late += late
            if acknowledged:  # as the tracker's add would have set it
                progress.in_flight = len(self.tracker.inflight)


async def run_plain(jobs: PlainJobs, stop: asyncio.Event) -> None:
    """Submit ``jobs``, each at its time, waking by timer callbacks; return when all are
    submitted, or at the first wake after ``stop`` is set."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int | None] = loop.create_future()
    handle: asyncio.TimerHandle | None = None

    def wake() -> None:
        """A short wait is over: submit what is due, then wait again, or hand a long
        wait (or the end) back to the task."""
        nonlocal handle
        handle = None
        if stop.is_set():
            done.set_result(None)
            return
        try:
            left = jobs.burst(True)
        except BaseException as exc:  # the task's to raise, as the dispatcher would
            done.set_exception(exc)
            return
        if left is None or left > INTERRUPTIBLE_NS:
            done.set_result(left)
        else:
            handle = loop.call_later(left / 1e9, wake)

    with fewer_collections():
        delay = jobs.burst(False)
        while delay is not None:
            if delay > INTERRUPTIBLE_NS:  # a long wait must end at once on abort
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay / 1e9)
                if stop.is_set():
                    return
                delay = jobs.burst(True)
                continue
            done = loop.create_future()
            handle = loop.call_later(delay / 1e9, wake)
            try:
                delay = await done
            finally:
                if handle is not None:  # cancelled while waiting: no wake after the task ends
                    handle.cancel()
                    handle = None
