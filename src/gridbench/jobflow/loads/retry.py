"""The retry load model (parallel submission with retries, METHODS 1.9; the XtreemOS
Amibe test: 35 jobs, one per CAD face, resubmitted up to 10 times).

Attempt 1 submits M jobs at the same instant. The ones that failed are resubmitted
together as attempt 2, and so on, until none fails, R retries are used or the trial is
stopped. What counts as failed is ``retry_on``: ``submit`` only refused or timed-out
submissions; ``any`` (the default) also a job the backend reports failed or cancelled, so
with ``any`` each attempt waits for its acknowledged jobs to end (at most
``timeouts.drain``; a job not ended by then is cancelled and counts as failed).

With ``reserve_nodes: N`` the trial first creates a reservation of N nodes (Slurm's
``scontrol create reservation nodecnt=N``; its name ``gridbench-<token>-<trial>-1``
recorded as a ``reserve`` operation, so ``gridbench cleanup`` deletes it after a crash),
submits every attempt into it and deletes it at the end (a ``release`` operation): with
jobs that each need a node, the jobs beyond N wait, are cancelled at the drain and
retried, which is the seed's failures against the number of reserved nodes.

Every submission is its own job: request index (attempt − 1)·M + slot, its submit event
carrying ``attempt``, ``slot`` and ``retry_on``. The runner records each attempt in
trial.json (``retry.attempts``); the results are computed from the events alone
(:mod:`gridbench.jobflow.loads.retry_metrics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobRequest, JobState
from gridbench.jobflow.backends.operations import NodeReserver
from gridbench.jobflow.events.model import FAIL_LOST, STAGE_CANCELLED, STAGE_FAILED
from gridbench.jobflow.loads.base import BaseLoadModel, LoadBase, PlanEstimate, TrialContext, narrow
from gridbench.jobflow.loads.retry_metrics import (
    NO_JOB_COMPLETED,
    retry_metrics,
    retry_summary,
)
from gridbench.jobflow.run.closed_loop import sleep_or_stop, timed_op
from gridbench.units import Duration

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.backends.base import Backend
    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.run.tracker import StatusTracker
    from gridbench.jobflow.specbase.model import ExperimentBase


#: the request of (attempt, slot)
MakeRetry = Callable[[int, int], JobRequest]


class RetryLoad(LoadBase):
    """``load:`` of the retry model."""

    model: Literal["retry"]
    jobs: int | None = Field(default=None, ge=1)
    retries: int = Field(
        default=10, ge=0, le=1000, description="resubmissions after the first attempt (retry)"
    )
    retry_on: Literal["any", "submit"] = Field(
        default="any",
        description="what is retried: any failure, or only refused submissions (retry)",
    )
    pause: Duration = Field(default=0.0, description="wait between two attempts (retry)")
    reserve_nodes: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="run the trial's jobs in a fresh reservation of this many nodes, made "
        "at the trial's start and deleted at its end (Slurm); sweep it for failures and "
        "time to success against the nodes reserved (retry)",
    )


def retry_jobs(spec: ExperimentBase) -> int:
    """M: load.jobs, else trial.jobs."""
    load = narrow(spec.load, RetryLoad)
    return load.jobs or spec.trial.jobs or 0


def expected_attempts(m: int, retries: int, admitted: int | None) -> int:
    """Attempts a trial of M jobs takes when the system admits ``admitted`` at once and
    refuses the rest (each attempt resubmits the refused): ceil(M / admitted), at most
    R + 1; one when nothing bounds admission."""
    if not admitted or m <= admitted:
        return 1
    return min(retries + 1, -(-m // admitted))


def retry_seconds(spec: ExperimentBase, drain_s: float) -> float:
    """One trial: every attempt submits (10 ms a job) and, retrying any failure, waits
    for its jobs to end (about the drain); the pauses between attempts; the final drain
    when only refusals are retried. The attempts come from the backend's admission bound
    (``Capabilities.admission_limit``)."""
    from gridbench.jobflow.backends.registry import capabilities_of

    m, load = retry_jobs(spec), narrow(spec.load, RetryLoad)
    admitted = capabilities_of(spec.backend.type, spec.backend.options).admission_limit
    n = expected_attempts(m, load.retries, admitted)
    wait = drain_s if load.retry_on == "any" else 0.0
    tail = 0.0 if load.retry_on == "any" else drain_s
    return n * (wait + m * 0.01) + (n - 1) * load.pause + tail


# --- runner -------------------------------------------------------------------------------


class EndWaiter:
    """Collects the jobs the status tracker sees end (its ``on_end`` hook) and waits for a
    given set of them; :meth:`close` unhooks it."""

    def __init__(self, tracker: StatusTracker) -> None:
        self.tracker = tracker
        self.ended: dict[str, JobState] = {}
        self._want: set[str] = set()
        self._all_ended = asyncio.Event()
        tracker.on_end.append(self._on_end)

    def _on_end(self, job: str, state: JobState) -> None:
        self.ended[job] = state
        self._want.discard(job)
        if not self._want:
            self._all_ended.set()

    async def wait(self, jobs: Iterable[str], timeout_s: float, stop: asyncio.Event) -> None:
        """Until every job of ``jobs`` has ended, ``timeout_s`` passed or ``stop`` is set."""
        self._want = {j for j in jobs if j not in self.ended}
        if not self._want:
            return
        self._all_ended.clear()
        waits = [asyncio.create_task(self._all_ended.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await w

    def close(self) -> None:
        """Remove the hook from the tracker."""
        with contextlib.suppress(ValueError):
            self.tracker.on_end.remove(self._on_end)


async def _give_up(ctx: TrialContext, left: Mapping[str, str], attempt: int) -> None:
    """Cancel the attempt's jobs that did not end in time (they count as failed and are
    resubmitted: none is left running); a failed cancel records them as lost."""
    tracker, rec = ctx.tracker, ctx.recorders[0]
    ids = [bid for bid in left.values() if bid in tracker.inflight]
    if not ids:
        return
    why = f"not ended within timeouts.drain: failed at attempt {attempt}"
    try:
        await ctx.backend.cancel(ids)
    except Exception as exc:  # a cancel that fails must not end the trial
        stage, attrs = STAGE_FAILED, {"kind": FAIL_LOST, "message": f"{why}; cancel: {exc}"[:500]}
    else:
        stage, attrs = STAGE_CANCELLED, {"by": "gridbench", "why": why}
    for bid in ids:
        job = tracker.inflight.pop(bid, None)  # a sweep during the cancel may have seen it end
        if job is not None:
            rec.stamp(job, stage, None, attrs)
            if stage == STAGE_FAILED:
                ctx.progress.failed += 1
    ctx.progress.in_flight = len(tracker.inflight)


async def _attempt(
    ctx: TrialContext, make: MakeRetry, attempt: int, slots: list[int], waiter: EndWaiter | None
) -> dict[str, Any]:
    """Submit ``slots`` at once as ``attempt``; its record (the failed slots under
    ``failed_slots``)."""
    reqs = [make(attempt, s) for s in slots]
    recs = ctx.recorders
    bids = await asyncio.gather(*(ctx.submit(r, recs[i % len(recs)]) for i, r in enumerate(reqs)))
    failed = {s for s, bid in zip(slots, bids, strict=True) if bid is None}
    acked = {r.name: (s, bid) for s, r, bid in zip(slots, reqs, bids, strict=True) if bid}
    not_ended = 0
    interrupted = False
    if waiter is not None and acked:
        await waiter.wait(acked, ctx.spec.timeouts.drain, ctx.stop)
        interrupted = ctx.stop.is_set()
        left = {n: bid for n, (_, bid) in acked.items() if n not in waiter.ended}
        not_ended = len(left)
        if left and not interrupted:
            await _give_up(ctx, left, attempt)
        # not ended: cancelled here, or (after a stop) by the trial, or left lost: failed
        failed |= {s for n, (s, _) in acked.items() if waiter.ended.get(n) is not JobState.DONE}
    return {
        "attempt": attempt,
        "submitted": len(slots),
        "failed": len(failed),
        "failure_rate": len(failed) / len(slots) if slots else None,
        "not_ended": not_ended,
        "interrupted": interrupted,
        "failed_slots": sorted(failed),
    }


def _maker(ctx: TrialContext, m: int, load: RetryLoad) -> MakeRetry:
    """The request of ``slot`` at ``attempt``: job (attempt − 1)·M + slot, its attributes
    naming both (and the retry_on mode), so its submit event carries them."""
    base = ctx.requests(m * (load.retries + 1))

    def make(attempt: int, slot: int) -> JobRequest:
        req = base((attempt - 1) * m + slot)
        attrs = {**req.attributes, "attempt": attempt, "slot": slot, "retry_on": load.retry_on}
        return dataclasses.replace(req, attributes=attrs)

    return make


async def run_retry(ctx: TrialContext) -> None:
    """Attempt 1: M jobs at once; then the failures together, up to R more times; with
    ``reserve_nodes``, all of it inside a reservation made for the trial."""
    load = narrow(ctx.spec.load, RetryLoad)
    if load.reserve_nodes is None:
        await _run_attempts(ctx, load)
        return
    backend = ctx.backend
    if not isinstance(backend, NodeReserver):
        raise _no_reserver(ctx.spec.backend.type)
    rec = ctx.recorders[0]
    name = f"gridbench-{secrets.token_hex(4)}-{ctx.trial_id}-1"
    attrs = {"op": "reserve", "reservation": name, "nodes": load.reserve_nodes}
    got = await timed_op(rec, name, attrs, dict(attrs), _reserve(backend, name, load), durable=True)
    if got is None:
        raise BackendError(
            f"the reservation of {load.reserve_nodes} node(s) could not be made",
            where="load.reserve_nodes",
            fix="see the trial's op_end error; ask for at most the cluster's nodes",
        )
    ctx.info["reservation"] = {"name": got, "nodes": load.reserve_nodes}
    try:
        backend.use_reservation(got)
        await _run_attempts(ctx, load)
    finally:
        backend.use_reservation(None)
        end = {"op": "release", "reservation": got}
        await timed_op(rec, name, end, dict(end), backend.release(got))


async def _reserve(backend: NodeReserver, name: str, load: RetryLoad) -> str:
    assert load.reserve_nodes is not None
    return await backend.reserve_nodes(name, load.reserve_nodes)


def _no_reserver(backend_type: str) -> SpecError:
    return SpecError(
        f"the {backend_type} backend cannot reserve nodes",
        where="load.reserve_nodes",
        fix="use the slurm backend, or drop load.reserve_nodes",
    )


async def _run_attempts(ctx: TrialContext, load: RetryLoad) -> None:
    """Attempt 1: M jobs at once; then the failures together, up to R more times."""
    m = retry_jobs(ctx.spec)
    record: dict[str, Any] = {
        "jobs": m,
        "retries": load.retries,
        "retry_on": load.retry_on,
        "attempts": [],
    }
    ctx.info["retry"] = record
    waiter = EndWaiter(ctx.tracker) if load.retry_on == "any" else None
    make = _maker(ctx, m, load)
    failing = list(range(m))
    submitted = 0
    try:
        for attempt in range(1, load.retries + 2):
            if not failing or ctx.stop.is_set():
                break
            if attempt > 1 and load.pause > 0:
                await sleep_or_stop(load.pause, ctx.stop, time.perf_counter() + load.pause)
                if ctx.stop.is_set():
                    break
            rec = await _attempt(ctx, make, attempt, failing, waiter)
            failing = rec.pop("failed_slots")
            submitted += rec["submitted"]
            record["attempts"].append(rec)
            # the jobs planned grow with each retry: generic shares are of what was submitted
            ctx.info["planned_jobs"] = ctx.progress.planned = submitted
            if rec["not_ended"] and not rec["interrupted"]:
                ctx.info.setdefault("notes", []).append(
                    f"attempt {attempt}: {rec['not_ended']} job(s) had not ended within "
                    "timeouts.drain; they were cancelled and count as failed"
                )
            record["never_succeeded"] = len(failing)
            ctx.write_info()
    finally:
        if waiter is not None:
            waiter.close()


# --- the model ----------------------------------------------------------------------------


class Retry(BaseLoadModel):
    """The retry model (see the module docstring)."""

    name = "retry"
    spec = RetryLoad
    growth = ("model.first_failure_rate", "first-attempt failure rate (share)", "")
    section_refs = ("gridbench.jobflow.report.retry:retry_table",)  # failure rate per attempt
    run = staticmethod(run_retry)
    summary = staticmethod(retry_summary)

    def check_spec(self, spec: ExperimentBase) -> None:
        """M must be given."""
        if narrow(spec.load, RetryLoad).jobs is None and spec.trial.jobs is None:
            raise ValueError("the retry model needs load.jobs (M jobs submitted at once)")

    def check_backend(self, spec: ExperimentBase, backend: Backend) -> None:
        """``reserve_nodes`` needs a backend that reserves nodes."""
        if narrow(spec.load, RetryLoad).reserve_nodes is not None and not isinstance(
            backend, NodeReserver
        ):
            raise _no_reserver(spec.backend.type)

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """Jobs: the most a trial can submit, M × (R + 1), so that the safety caps hold
        whatever fails. Seconds: see :func:`retry_seconds`."""
        m, load = retry_jobs(spec), narrow(spec.load, RetryLoad)
        return PlanEstimate(m * (load.retries + 1), retry_seconds(spec, drain_s), None)

    reads_events = True  # trial_metrics reads the trial's events

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """See :func:`retry_metrics`."""
        return retry_metrics(events)

    def adjust_validity(
        self, validity: dict[str, Any], model: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Refusals are what this model measures: 'no job completed' does not make a trial
        invalid; a trial that submitted nothing is."""
        if not model or model.get("kind") != "retry":
            return validity
        reasons = [r for r in validity.get("reasons", []) if r != NO_JOB_COMPLETED]
        if not model.get("attempts_used"):
            reasons.append("no retry-model submission was made")
        return {**validity, "reasons": reasons, "valid": not reasons}


MODEL = Retry()
