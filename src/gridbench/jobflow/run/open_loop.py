"""The open-loop dispatcher: a bounded pool of submitters keeping an intended schedule.

Each submitter takes the next job in schedule order, sleeps until its intended time and
submits. If every submitter is busy, jobs wait and start late; a job later than
``max_lateness`` is dropped (counted, never silently skipped), as k6 does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _json_str
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from gridbench.jobflow.backends.base import Backend, BulkSubmitter, JobRequest, SubmitError
from gridbench.jobflow.events.model import (
    FAIL_DROPPED,
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_TIMEOUT,
    STAGE_FAILED,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.tracker import StatusTracker

INTERRUPTIBLE_NS = 50_000_000
_T = TypeVar("_T")


@types.coroutine
def _resume(coro: Coroutine[Any, Any, _T], pending: Any) -> Generator[Any, Any, _T]:
    """Go on driving ``coro``, already started and now waiting on ``pending``, exactly as
    ``await coro`` would: what the task sends or throws in is passed on to ``coro``."""
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation (the time-out's, say): coro's to handle
            try:
                pending = coro.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


async def within(aw: Awaitable[_T], timeout_s: float) -> _T:
    """``await aw`` under a ``timeout_s`` time-out (``TimeoutError``), counted from now.

    A time-out can only fire where ``aw`` waits, so the timer is armed at its first wait:
    a call that answers without waiting (an in-process backend) costs no timer handle.
    """
    if not isinstance(aw, types.CoroutineType):
        async with asyncio.timeout(timeout_s):
            return await aw
    deadline = asyncio.get_running_loop().time() + timeout_s
    try:
        pending = aw.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    async with asyncio.timeout_at(deadline):
        return await _resume(aw, pending)


async def submit_chunk(
    backend: BulkSubmitter,
    reqs: Sequence[JobRequest],
    rec: Recorder,
    tracker: StatusTracker,
    progress: TrialProgress,
    submit_timeout_s: float,
) -> None:
    """Submit jobs in one bulk call: every job gets the call's submit and ack stamps (or
    its failure), so per-job latency includes the whole call, as a user would see it."""
    for req in reqs:
        rec.stamp(req.name, STAGE_SUBMIT, None, dict(req.attributes) if req.attributes else None)
    progress.submitted += len(reqs)
    results: list[str | SubmitError]
    try:
        async with asyncio.timeout(submit_timeout_s):
            results = await backend.submit_bulk(reqs)
        if len(results) != len(reqs):
            raise SubmitError(
                FAIL_SUBMIT_ERROR, f"bulk submit returned {len(results)} results for {len(reqs)}"
            )
    except SubmitError as exc:
        results = [exc] * len(reqs)
    except TimeoutError:
        results = [SubmitError(FAIL_SUBMIT_TIMEOUT, f"no answer within {submit_timeout_s:g}s")]
        results *= len(reqs)
    except Exception as exc:  # any backend failure is a recorded failure, not a crash
        results = [SubmitError(FAIL_SUBMIT_ERROR, f"{type(exc).__name__}: {exc}")] * len(reqs)
    for req, res in zip(reqs, results, strict=True):
        if isinstance(res, SubmitError):
            rec.stamp(
                req.name, STAGE_FAILED, None, {"kind": res.kind, "message": res.message[:500]}
            )
            progress.failed += 1
        else:
            rec.stamp(req.name, STAGE_SUBMIT_ACK, None, '{"backend_id":' + _json_str(res) + "}")
            tracker.add(res, req.name)
            progress.acknowledged += 1


@dataclass(frozen=True)
class Submitter:
    """Where one agent's submissions go and are counted: the backend, the agent's
    recorder, the trial's tracker and progress, and the time-out of one call."""

    backend: Backend
    rec: Recorder
    tracker: StatusTracker
    progress: TrialProgress
    timeout_s: float


@dataclass(frozen=True)
class OpenLoop:
    """How an agent keeps its share of an open schedule: ``pool`` concurrent submitters;
    a job later than ``max_lateness_s`` is dropped, later than ``late_threshold_s`` late."""

    pool: int
    max_lateness_s: float
    late_threshold_s: float


def split_for_agents(offsets: npt.NDArray[np.int64], agents: int) -> list[npt.NDArray[np.int64]]:
    """Interleave a schedule across agents so each keeps an even share of the rate."""
    return [offsets[k::agents] for k in range(agents)]


async def submit_one(
    sub: Submitter,
    req: JobRequest,
    t_start: int | None = None,
    call: Callable[[JobRequest], Awaitable[str]] | None = None,
) -> str | None:
    """Submit one job with submit/submit_ack/failed stamps; return the backend id.
    ``call`` submits instead of ``backend.submit`` (a held submission, say)."""
    backend, rec, tracker, progress = sub.backend, sub.rec, sub.tracker, sub.progress
    submit_timeout_s = sub.timeout_s
    job = req.name
    rec.stamp(job, STAGE_SUBMIT, t_start, dict(req.attributes) if req.attributes else None)
    progress.submitted += 1
    try:
        bid = await within((call or backend.submit)(req), submit_timeout_s)
    except SubmitError as exc:
        kind, msg = exc.kind, exc.message
    except TimeoutError:
        kind, msg = FAIL_SUBMIT_TIMEOUT, f"no answer within {submit_timeout_s:g}s"
    except Exception as exc:  # any backend failure is a recorded failure, not a crash
        kind, msg = FAIL_SUBMIT_ERROR, f"{type(exc).__name__}: {exc}"
    else:
        acked = rec.stamp(job, STAGE_SUBMIT_ACK, None, '{"backend_id":' + _json_str(bid) + "}")
        progress.acknowledged += 1
        tracker.add(bid, job, acked)
        return bid
    rec.stamp(job, STAGE_FAILED, None, {"kind": kind, "message": msg[:500]})
    progress.failed += 1
    return None


async def run_open_loop(
    sub: Submitter,
    offsets_ns: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int64],
    make_request: Callable[[int], JobRequest],
    loop: OpenLoop,
    *,
    start_mono_ns: int,
    stop: asyncio.Event,
) -> None:
    """Submit job ``indices[i]`` at ``start_mono_ns + offsets_ns[i]`` for every i."""
    n = len(offsets_ns)
    offsets = offsets_ns.tolist()
    idx = indices.tolist()
    cursor = 0
    max_late = int(loop.max_lateness_s * 1e9)
    late_ns = int(loop.late_threshold_s * 1e9)
    rec, progress = sub.rec, sub.progress
    clock = rec.clock

    async def submitter() -> None:
        nonlocal cursor
        while not stop.is_set():
            i = cursor
            if i >= n:
                return
            cursor += 1
            due = start_mono_ns + offsets[i]
            delay = due - time.perf_counter_ns()
            if delay > INTERRUPTIBLE_NS:
                # long waits must end on abort; short ones use the cheaper plain sleep
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay / 1e9)
            elif delay > 0:
                await asyncio.sleep(delay / 1e9)
            if stop.is_set():
                return
            now = time.perf_counter_ns()
            req = make_request(idx[i])
            rec.stamp(req.name, STAGE_INTENDED, clock.mono_to_wall(due))
            lag = now - due
            if lag > max_late:
                rec.stamp(req.name, STAGE_FAILED, None, {"kind": FAIL_DROPPED, "lag_ns": lag})
                progress.dropped += 1
                continue
            if lag > late_ns:
                progress.late += 1
            await submit_one(sub, req, clock.mono_to_wall(now))

    # a TaskGroup: if one submitter fails, the others stop before the trial finalises
    async with asyncio.TaskGroup() as tg:
        for _ in range(min(loop.pool, max(n, 1))):
            tg.create_task(submitter())
