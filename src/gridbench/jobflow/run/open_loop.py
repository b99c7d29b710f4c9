"""The open-loop dispatcher: a bounded pool of submitters keeping an intended schedule.

Each submitter takes the next job in schedule order, sleeps until its intended time and
submits. If every submitter is busy, jobs wait and start late; a job later than
``max_lateness`` is dropped (counted, never silently skipped), as k6 does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _json_str
from typing import TYPE_CHECKING, Any, TypeVar

from gridbench.jobflow.backends.base import (
    NO_ENTRIES,
    Backend,
    BulkSubmitter,
    InlineSubmit,
    JobRequest,
    SubmitError,
)
from gridbench.jobflow.events.buffer import encode_attrs
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
from gridbench.jobflow.run.plain_loop import INTERRUPTIBLE_NS, PlainJobs, run_plain
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.tracker import StatusTracker

if TYPE_CHECKING:  # annotations only: a job-flow spec loads without numpy
    import numpy as np
    import numpy.typing as npt

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
    return await _rest(aw, pending, deadline)


async def _rest(coro: Coroutine[Any, Any, _T], pending: Any, deadline: float) -> _T:
    """The waiting part of :func:`within`: ``coro``, started, under the time-out that
    ends at ``deadline`` (loop time)."""
    async with asyncio.timeout_at(deadline):
        return await _resume(coro, pending)


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
        rec.stamp(req.name, STAGE_SUBMIT, None, _attributes(req))
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
            rec.stamp(req.name, STAGE_SUBMIT_ACK, None, _backend_id(res))
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
    job = req.name
    sub.rec.stamp(job, STAGE_SUBMIT, t_start, _attributes(req))
    sub.progress.submitted += 1
    try:
        bid = await within((call or sub.backend.submit)(req), sub.timeout_s)
    except Exception as exc:  # any backend failure is a recorded failure, not a crash
        _failed(sub, job, exc)
        return None
    _acked(sub, job, bid)
    return bid


def _attributes(req: JobRequest) -> str:
    """The submit stamp's attrs: the request's attributes as JSON, or ""."""
    attrs = req.attributes
    if attrs is NO_ENTRIES or not attrs:  # the shared empty one: no __len__ call
        return ""
    return encode_attrs(dict(attrs))


def _acked(sub: Submitter, job: str, bid: str, acked_ns: int | None = None) -> None:
    """The backend answered ``bid`` for ``job`` at ``acked_ns`` (default: now): stamp
    the ack and track the job."""
    rec = sub.rec
    acked = rec.clock.now_ns() if acked_ns is None else acked_ns
    rec.put((job, STAGE_SUBMIT_ACK, acked, rec.precision, rec.key, _backend_id(bid)))
    sub.progress.acknowledged += 1
    sub.tracker.add(bid, job, acked)


def _backend_id(bid: str) -> str:
    return f'{{"backend_id":{_json_str(bid)}}}'


def _failed(sub: Submitter, job: str, exc: Exception) -> None:
    """The submission of ``job`` failed with ``exc``: stamp the failure, of its kind."""
    if isinstance(exc, SubmitError):
        kind, msg = exc.kind, exc.message
    elif isinstance(exc, TimeoutError):
        kind, msg = FAIL_SUBMIT_TIMEOUT, f"no answer within {sub.timeout_s:g}s"
    else:
        kind, msg = FAIL_SUBMIT_ERROR, f"{type(exc).__name__}: {exc}"
    sub.rec.stamp(job, STAGE_FAILED, None, {"kind": kind, "message": msg[:500]})
    sub.progress.failed += 1


async def _finish(sub: Submitter, job: str, answer: Awaitable[str]) -> None:
    """Wait for a submission's answer and stamp it."""
    try:
        bid = await answer
    except Exception as exc:  # any backend failure is a recorded failure, not a crash
        _failed(sub, job, exc)
    else:
        _acked(sub, job, bid)


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
    """Submit job ``indices[i]`` at ``start_mono_ns + offsets_ns[i]`` for every i.

    One dispatcher sleeps until each job's time. Each submission is a task of its own
    (:func:`submit_one`), at most ``loop.pool`` at once; with all of them waiting on the
    backend, the next job waits for one to end (late, or dropped if it is then later than
    ``max_lateness``), as a pool of that many submitters would. A backend that answers at
    once (``Capabilities.submit_at_once``: in-process) is called inline instead: no task,
    no timer per job.
    """
    offsets = offsets_ns.tolist()
    idx = indices.tolist()
    max_late = int(loop.max_lateness_s * 1e9)
    late_ns = int(loop.late_threshold_s * 1e9)
    backend = sub.backend
    inline = backend.capabilities().submit_at_once
    if stop.is_set():
        return
    # a plain call when the backend offers one: no coroutine, no StopIteration per job
    plain = backend.inline_submit() if inline and isinstance(backend, InlineSubmit) else None
    if plain is not None:  # waits by timer callbacks: no task step per wake
        jobs = PlainJobs(
            sub.rec,
            sub.tracker,
            sub.progress,
            (start_mono_ns, offsets, idx),
            make_request,
            plain,
            max_late_ns=max_late,
            late_ns=late_ns,
            attributes=_attributes,
            failed=functools.partial(_failed, sub),
        )
        await run_plain(jobs, stop)
        return
    rec, progress = sub.rec, sub.progress
    put, key, prec = rec.put, rec.key, rec.precision
    shift = rec.clock.shift_ns  # stamps here are perf_counter_ns + shift (clock.now_ns)
    submit, pool = backend.submit, loop.pool
    # loop time at a perf_counter_ns reading: an inline call's time-out counts from its start
    loop_shift = asyncio.get_running_loop().time() - time.perf_counter_ns() / 1e9
    perf = time.perf_counter_ns
    waiting = 0
    freed = asyncio.Event()

    def ended(_: object) -> None:
        nonlocal waiting
        waiting -= 1
        freed.set()

    # a TaskGroup: if a submission fails, the dispatcher stops before the trial ends
    async with asyncio.TaskGroup() as tg:
        for i, offset in enumerate(offsets):
            due = start_mono_ns + offset
            delay = due - perf()
            # stop is set by another task: it can only change where this one waits
            if delay > INTERRUPTIBLE_NS:
                # long waits must end on abort; short ones use the cheaper plain sleep
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay / 1e9)
                if stop.is_set():
                    return
            elif delay > 0:
                await asyncio.sleep(delay / 1e9)
                if stop.is_set():
                    return
            if waiting >= pool:
                while waiting >= pool and not stop.is_set():
                    freed.clear()
                    await freed.wait()
                if stop.is_set():
                    return
            now = perf()
            req = make_request(idx[i])
            job = req.name
            put((job, STAGE_INTENDED, due + shift, prec, key, ""))
            lag = now - due
            if lag > max_late:
                rec.stamp(job, STAGE_FAILED, now + shift, {"kind": FAIL_DROPPED, "lag_ns": lag})
                progress.dropped += 1
                continue
            if lag > late_ns:
                progress.late += 1
            if not inline:  # the task stamps the submit when it starts the call
                waiting += 1
                tg.create_task(submit_one(sub, req)).add_done_callback(ended)
                continue
            attrs = "" if req.attributes is NO_ENTRIES else _attributes(req)
            put((job, STAGE_SUBMIT, now + shift, prec, key, attrs))
            progress.submitted += 1
            try:
                call = submit(req)
                pending = call.send(None)
            except StopIteration as done:  # answered without waiting
                _acked(sub, job, done.value, perf() + shift)
                continue
            except Exception as exc:  # any backend failure is a recorded failure, not a crash
                _failed(sub, job, exc)
                continue
            # declared at once, yet it waits: finish it here, in the task that started it
            await _finish(sub, job, _rest(call, pending, now / 1e9 + loop_shift + sub.timeout_s))
            if stop.is_set():
                return
