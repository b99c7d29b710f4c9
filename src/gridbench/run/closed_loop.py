"""Closed-loop load models: sustain (MAPPER response time), batch (MAPPER throughput), probe.

Timed operations other than submission (status queries, probe calls) are recorded as
``op_start``/``op_end`` event pairs on a pseudo-job ``<trial>-op-<agent>-<seq>`` with
``attrs.op`` naming the operation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import Callable

from gridbench.backends.base import Backend, BulkSubmitter, JobRequest
from gridbench.errors import BackendError
from gridbench.run.observer import TrialProgress
from gridbench.run.open_loop import submit_chunk, submit_one
from gridbench.run.recorder import Recorder
from gridbench.run.tracker import StatusTracker

STAGE_OP_START = "op_start"
STAGE_OP_END = "op_end"


class _Ops:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.seq = 0

    def name(self, agent: str) -> str:
        self.seq += 1
        return f"{self.trial_id}-op-{agent}-{self.seq:06d}"


async def run_sustain(
    backend: Backend,
    make_request: Callable[[int, int], JobRequest],
    recs: list[Recorder],
    tracker: StatusTracker,
    progress: TrialProgress,
    *,
    trial_id: str,
    users: int,
    jobs_per_user: int,
    sleep_coef_s: float,
    duration_s: float,
    submit_timeout_s: float,
    seed: int,
    stop: asyncio.Event,
) -> None:
    """k users each keep ``jobs_per_user`` jobs in the system until the duration ends."""
    ops = _Ops(trial_id)
    counter = 0
    deadline = time.perf_counter() + duration_s

    async def user(u: int) -> None:
        nonlocal counter
        base = recs[u % len(recs)]
        agent = f"user{u}"
        # each virtual user is its own submitter agent, so results break down per user
        rec = Recorder(base.log, base.clock, agent, base.offset)
        rng = random.Random(seed * 1000 + u)
        mine: set[str] = set()
        while not stop.is_set() and time.perf_counter() < deadline:
            while (
                len(mine) < jobs_per_user and time.perf_counter() < deadline and not stop.is_set()
            ):
                counter += 1
                req = make_request(counter - 1, u)
                if req.user is None:  # no declared users: each virtual user is its agent
                    req = dataclasses.replace(req, user=agent)
                bid = await submit_one(backend, req, rec, tracker, progress, submit_timeout_s)
                if bid is not None:
                    mine.add(bid)
            await _sleep_or_stop(rng.uniform(0, sleep_coef_s), stop, deadline)
            if not mine:
                continue
            op = ops.name(agent)
            rec.stamp(op, STAGE_OP_START, None, {"op": "query", "user": agent, "jobs": len(mine)})
            try:
                states = await backend.status(sorted(mine))
            except Exception as exc:
                rec.stamp(op, STAGE_OP_END, None, {"op": "query", "error": str(exc)[:200]})
                continue
            rec.stamp(op, STAGE_OP_END, None, {"op": "query"})
            await tracker.observe(states)  # this user's poll is how the client sees ends
            mine = {b for b in mine if b in tracker.inflight}

    async with asyncio.TaskGroup() as tg:
        for u in range(users):
            tg.create_task(user(u))


async def _sleep_or_stop(seconds: float, stop: asyncio.Event, deadline: float) -> None:
    seconds = min(seconds, max(0.0, deadline - time.perf_counter()))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def run_batch(
    backend: Backend,
    make_request: Callable[[int], JobRequest],
    recs: list[Recorder],
    tracker: StatusTracker,
    progress: TrialProgress,
    *,
    jobs: int,
    submitters: int,
    submit_timeout_s: float,
    stop: asyncio.Event,
    bulk: int = 1,
) -> None:
    """N jobs submitted by k submitters as fast as they go: one per call, or ``bulk`` per
    call (job arrays) when the backend can."""
    cursor = 0
    bulk_backend = backend if bulk > 1 and isinstance(backend, BulkSubmitter) else None
    if bulk > 1 and bulk_backend is None:
        raise BackendError(
            f"the {backend.name} backend cannot submit in bulk",
            where="load.bulk",
            fix="set load.bulk: 1, or use a backend that can (slurm: job arrays)",
        )

    async def submitter(k: int) -> None:
        nonlocal cursor
        rec = recs[k % len(recs)]
        while not stop.is_set() and cursor < jobs:
            i = cursor
            n = min(bulk, jobs - i)
            cursor += n
            if bulk_backend is not None:
                reqs = [make_request(j) for j in range(i, i + n)]
                await submit_chunk(bulk_backend, reqs, rec, tracker, progress, submit_timeout_s)
            else:
                await submit_one(backend, make_request(i), rec, tracker, progress, submit_timeout_s)

    async with asyncio.TaskGroup() as tg:
        for k in range(submitters):
            tg.create_task(submitter(k))


async def run_probe(
    backend: Backend,
    make_request: Callable[[int], JobRequest],
    recs: list[Recorder],
    tracker: StatusTracker,
    progress: TrialProgress,
    *,
    trial_id: str,
    operation: str,
    count: int,
    gap_s: float,
    burst_requests: int | None,
    burst_threads: list[int],
    submit_timeout_s: float,
    stop: asyncio.Event,
) -> None:
    """N single operations spaced by a gap, then optional bursts with 1..k client threads."""
    rec = recs[0]
    ops = _Ops(trial_id)
    seq = 0

    async def one(tag: str) -> None:
        nonlocal seq
        seq += 1
        if operation == "submit":
            req = make_request(seq - 1)
            req = dataclasses.replace(req, attributes={**req.attributes, "probe": tag})
            await submit_one(backend, req, rec, tracker, progress, submit_timeout_s)
            return
        op = ops.name("probe")
        ids = list(tracker.inflight)[:1] or ["gridbench-probe-none"]
        rec.stamp(op, STAGE_OP_START, None, {"op": operation, "probe": tag})
        try:
            if operation == "status":
                await backend.status(ids)
            else:
                await backend.cancel(ids)
            rec.stamp(op, STAGE_OP_END, None, {"op": operation, "probe": tag})
        except Exception as exc:
            rec.stamp(
                op, STAGE_OP_END, None, {"op": operation, "probe": tag, "error": str(exc)[:200]}
            )

    for i in range(count):
        if stop.is_set():
            return
        await one("single")
        if i + 1 < count:
            await _sleep_or_stop(gap_s, stop, time.perf_counter() + gap_s)
    if not burst_requests:
        return
    for threads in burst_threads:
        if stop.is_set():
            return
        left = burst_requests
        op = ops.name(f"burst{threads}")
        rec.stamp(
            op,
            STAGE_OP_START,
            None,
            {"op": "burst", "threads": threads, "requests": burst_requests},
        )

        async def worker(tag: str) -> None:
            nonlocal left
            while left > 0 and not stop.is_set():
                left -= 1
                await one(tag)

        async with asyncio.TaskGroup() as tg:
            for _ in range(threads):
                tg.create_task(worker(f"burst{threads}"))
        rec.stamp(op, STAGE_OP_END, None, {"op": "burst", "threads": threads})
