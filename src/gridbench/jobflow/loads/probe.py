"""The probe load model (single-operation overhead, METHODS 1.8): ``count`` single
operations spaced by ``gap``, then optional bursts of ``requests`` operations with 1..k
client threads. The operations (submit, status and cancel of real jobs, reserve, release,
credential, checkpoint, restart, ``op:<name>``) and the backend capability each needs are
in :mod:`gridbench.jobflow.loads.probe_ops`.

Results (the trial's ``model`` object, seconds): ``single`` = stats of the spaced single
operations (submit: submit_ack − submit; the others: op_end − op_start), with ``errors``
and the seed's statement '557±124 ms (α=0.05)'. For submissions, ``below`` is the part of
the call spent in the layers below the client: submit_ack − the server's submit stage (the
first server-side stage named ``*_submit``, else the first server-side stage), for the
calls in which that stage was stamped while the call was open. ``bursts`` = per burst
(keyed by its thread count): the total time of the burst, the time per request (total ÷
requests) and the stats of its individual requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from gridbench.jobflow import text
from gridbench.jobflow.events.model import STAGE_SUBMIT, STAGE_SUBMIT_ACK
from gridbench.jobflow.loads import probe_ops
from gridbench.jobflow.loads.base import (
    BaseLoadModel,
    LoadBase,
    PlanEstimate,
    Strict,
    TrialContext,
    narrow,
)
from gridbench.jobflow.loads.closed import (
    OP_END,
    OP_START,
    below_statement,
    ci_statement,
    job_table,
    over_trials,
    seconds,
    summarize,
)
from gridbench.jobflow.run.closed_loop import STAGE_OP_END, STAGE_OP_START, OpNames, sleep_or_stop
from gridbench.lazy import lazy_module
from gridbench.stats import describe
from gridbench.units import Duration

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.backends.base import Backend
    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.loads.closed import F64
    from gridbench.jobflow.run.recorder import Recorder
    from gridbench.jobflow.specbase.model import ExperimentBase
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    pl = lazy_module("polars")

NO_JOB_COMPLETED = "no job completed"


class BurstSpec(Strict):
    """Bursts after the single operations: ``requests`` calls with each thread count."""

    requests: int = Field(default=100, ge=1, le=1_000_000)
    # each thread count is that many concurrent calls at once
    threads: list[Annotated[int, Field(ge=1, le=10_000)]] = Field(
        default_factory=lambda: [1, 10, 20, 33]
    )


class ProbeLoad(LoadBase):
    """``load:`` of the probe model."""

    model: Literal["probe"]
    operation: str = Field(
        default="submit",
        description="submit, status, cancel, reserve, release, credential, checkpoint, "
        "restart or op:<name>",
    )
    count: int = Field(default=30, ge=1, le=1_000_000)
    gap: Duration = 2.0
    burst: BurstSpec | None = None
    status_of: Literal["held", "running"] = Field(
        default="held",
        description="the status probe's job: held in the queue, or running (its nodes "
        "allocated, so status time can be set against job.nodes)",
    )
    start_timeout: Duration = Field(
        default=120.0, description="how long a running status job may take to start"
    )

    @field_validator("operation")
    @classmethod
    def _operation(cls, v: str) -> str:
        return probe_ops.check_name(v)


# --- runner -------------------------------------------------------------------------------


async def run_probe(ctx: TrialContext) -> None:
    """N single operations spaced by a gap, then optional bursts with 1..k client threads."""
    load = narrow(ctx.spec.load, ProbeLoad)
    stop = ctx.stop
    operation = load.operation
    # validate refuses a backend without the capability; a run checks again (a SpecError
    # ends the trial with that message)
    probe_ops.check_backend(operation, ctx.backend, ctx.spec.backend.type, load.status_of)
    make_request = ctx.requests(load.count)
    rec = ctx.recorders[0]
    ops = OpNames(ctx.trial_id)
    seq = 0
    runner = (
        None if operation == "submit" else probe_ops.OpRunner(ctx, operation, make_request, ops)
    )

    async def one(tag: str) -> None:
        nonlocal seq
        seq += 1
        if runner is not None:
            await runner.call(tag)
            return
        req = make_request(seq - 1)
        req = dataclasses.replace(req, attributes={**req.attributes, "probe": tag})
        await ctx.submit(req, rec)

    try:
        if runner is not None and not await runner.prepare(load.status_of, load.start_timeout):
            return
        await _probes(load, stop, rec, ops, one)
    finally:
        if runner is not None:
            await runner.finish()


async def _probes(
    load: ProbeLoad,
    stop: asyncio.Event,
    rec: Recorder,
    ops: OpNames,
    one: Callable[[str], Awaitable[None]],
) -> None:
    """The spaced single probes, then the bursts."""
    for i in range(load.count):
        if stop.is_set():
            return
        await one("single")
        if i + 1 < load.count:
            await sleep_or_stop(load.gap, stop, time.perf_counter() + load.gap)
    if load.burst is None:
        return
    burst_requests = load.burst.requests
    for threads in load.burst.threads:
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


# --- analysis -----------------------------------------------------------------------------


def below_stage(chain: StageChain) -> str | None:
    """The server's submit stage: the first server-side ``*_submit`` stage, else the first
    server-side stage (``None`` when the chain has no server-side stage)."""
    server = [s.name for s in chain.stages if s.source != "client"]
    named = [s for s in server if s.endswith("_submit")]
    return named[0] if named else (server[0] if server else None)


def probe_operation(tbl: pl.DataFrame) -> str:
    """The probed operation: that of the timed calls tagged as probes (not the bursts'
    own records, not ``setup`` calls), else submit."""
    if "op" not in tbl.columns:
        return "submit"
    probes = tbl.filter(
        pl.col("op").is_not_null() & (pl.col("op") != "burst") & (pl.col("probe") != "setup")
    )["op"]
    return str(probes[0]) if probes.len() else "submit"


def _op_times(rows: pl.DataFrame, operation: str) -> tuple[F64, int]:
    """Durations of the successful calls among ``rows`` and the number of errors."""
    if operation == "submit":
        ok = pl.col(STAGE_SUBMIT_ACK).is_not_null()
        good = rows.filter(ok)
        return seconds(good, STAGE_SUBMIT, STAGE_SUBMIT_ACK), rows.height - good.height
    ok = pl.col(OP_END).is_not_null() & ~pl.col("op_error")
    good = rows.filter(ok)
    return seconds(good, OP_START, OP_END), rows.height - good.height


def probe_metrics(tbl: pl.DataFrame, below_at: str | None) -> dict[str, Any]:
    """The probe ``model`` object of one trial (see the module docstring)."""
    operation = probe_operation(tbl)
    if operation == "submit":
        calls = tbl.filter(pl.col(STAGE_SUBMIT).is_not_null() & pl.col("probe").is_not_null())
    else:
        calls = tbl.filter((pl.col("op") == operation) & (pl.col("probe") != "setup"))
    singles = calls.filter(pl.col("probe") == "single")
    times, errors = _op_times(singles, operation)
    single: dict[str, Any] = {**describe(times), "errors": errors}
    single["statement"] = ci_statement(single)
    below = None
    if operation == "submit" and below_at is not None:
        t = pl.col(below_at)
        inside = singles.filter((t >= pl.col(STAGE_SUBMIT)) & (t <= pl.col(STAGE_SUBMIT_ACK)))
        if inside.height:
            below = {**describe(seconds(inside, below_at, STAGE_SUBMIT_ACK)), "stage": below_at}
            below["statement"] = below_statement(below, single)
    out = {
        "kind": "probe",
        "operation": operation,
        "label": probe_ops.label(operation),
        "calls": calls.height,  # every probe call (singles and bursts): server CPU per call
        "single": single,
        "below": below,
        "bursts": _bursts(tbl, calls, operation),
    }
    out["statement"] = probe_statement(out)
    return out


def _bursts(tbl: pl.DataFrame, calls: pl.DataFrame, operation: str) -> dict[str, Any]:
    """Per burst: total time, time per request and the stats of its requests."""
    bursts = tbl.filter(pl.col("op") == "burst").sort(OP_START)
    out: dict[str, Any] = {}
    for r in bursts.iter_rows(named=True):  # one row per burst, a handful per trial
        threads = r["threads"]
        key = str(threads)
        k = 2
        while key in out:
            key, k = f"{threads}-{k}", k + 1
        mine = calls.filter(pl.col("probe") == f"burst{threads}")
        times, errors = _op_times(mine, operation)
        total = (r[OP_END] - r[OP_START]) / 1e9 if r[OP_END] is not None else None
        req = r["requests"]
        out[key] = {
            "threads": threads,
            "requests": req,
            "total_s": total,
            "per_request_s": total / req if total is not None and req else None,
            "request": describe(times),
            "errors": errors,
        }
    return out


def probe_statement(m: Mapping[str, Any]) -> str:
    """'submission time: 557±124 ms (α=0.05), n=30; 234±43 ms of the 557 below ce_submit;
    ...' (the label names the operation: 'credential-issue time: ...')."""
    single = m.get("single") or {}
    name = probe_ops.label(str(m.get("operation") or "submit"))
    s = f"{name}: {single.get('statement') or ci_statement(single)}"
    if single.get("n"):
        s += f", n={single['n']}"
    below = m.get("below")
    if below and below.get("statement"):
        s += f"; {below['statement']} below {below.get('stage')}"
    parts = []
    for b in (m.get("bursts") or {}).values():
        if b.get("total_s") is not None:
            each = b.get("per_request_s")
            parts.append(
                f"{b['requests']} requests with {b['threads']} thread(s) in "
                f"{text.seconds(b['total_s'])}"
                + (f" ({text.seconds(each)} per request)" if each is not None else "")
            )
    if parts:
        s += "; bursts: " + ", ".join(parts)
    return s


def adjust_validity(validity: dict[str, Any], model: Mapping[str, Any] | None) -> dict[str, Any]:
    """A status or cancel probe submits no jobs: 'no job completed' does not apply to it,
    'no call succeeded' does."""
    if not model or model.get("kind") != "probe" or model.get("operation") == "submit":
        return validity
    reasons = [r for r in validity.get("reasons", []) if r != NO_JOB_COMPLETED]
    if not (model.get("single") or {}).get("n"):
        reasons.append(f"no single {model.get('operation')} call succeeded")
    return {**validity, "reasons": reasons, "valid": not reasons}


def probe_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's ``summary.model``: single (and below) times pooled over the trials, and
    each burst's total time across them."""
    out, models = summarize(trials, "probe", ("single", "below"))
    if not models:
        return out
    pool = out["pooled"]
    out["label"] = probe_ops.label(str(out.get("operation") or "submit"))
    single = pool["single"]
    single["statement"] = ci_statement(single)
    if pool["below"]["n"]:
        stage = next((m["below"].get("stage") for m in models if m.get("below")), None)
        pool["below"]["stage"] = stage
        pool["below"]["statement"] = below_statement(pool["below"], single)
    for b in (out.get("bursts") or {}).values():
        # the seed's burst form, '47±10 s (α=0.05)', across the trials' burst times
        total = b.get("total_s") or {}
        b["statement"] = ci_statement(
            {"n": total.get("n"), "mean": total.get("mean"), "ci95": total.get("ci95")}
        )
    s = f"{probe_ops.label(str(out.get('operation') or 'submit'))}: {single['statement']}"
    if single["n"]:
        s += f", n={single['n']}{over_trials(models)}"
    below = pool.get("below") or {}
    if below.get("statement"):
        s += f"; {below['statement']} below {below.get('stage')}"
    out["statement"] = s
    return out


class Probe(BaseLoadModel):
    """The probe model (see the module docstring)."""

    name = "probe"
    spec = ProbeLoad
    # single operations per point, then the bursts
    section_refs = ("gridbench.jobflow.report.probe:probe_tables",)
    run = staticmethod(run_probe)
    summary = staticmethod(probe_summary)
    adjust_validity = staticmethod(adjust_validity)

    def check_backend(self, spec: ExperimentBase, backend: Backend) -> None:
        """The operation's capability (a held job, reservations, credentials, ...)."""
        load = narrow(spec.load, ProbeLoad)
        probe_ops.check_backend(load.operation, backend, spec.backend.type, load.status_of)

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """count spaced by gap, plus the bursts' requests; the bursts leave a backlog that
        drains at the backend's throughput (``Capabilities.throughput_per_s``) before the
        trial's own drain."""
        from gridbench.jobflow.backends.registry import capabilities_of

        load = narrow(spec.load, ProbeLoad)
        burst = load.burst
        bursts = burst.requests * len(burst.threads) if burst else 0
        rate = capabilities_of(spec.backend.type, spec.backend.options).throughput_per_s
        backlog = bursts / rate if rate else 0.0
        return PlanEstimate(load.count + bursts, load.count * load.gap + backlog + drain_s, None)

    reads_events = True  # trial_metrics reads the trial's events

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """See :func:`probe_metrics`."""
        at = below_stage(chain)
        return probe_metrics(job_table(events, [at] if at else []), at)

    def growth_quantity(self, points: Sequence[Mapping[str, Any]]) -> tuple[str, str, str] | None:
        """The single operation's time, named after the probed operation."""
        ops = [((p.get("summary") or {}).get("model") or {}).get("operation") for p in points]
        op = next((o for o in ops if isinstance(o, str)), None)
        return ("model.single.mean", probe_ops.label(op or "submit"), "s")


MODEL = Probe()
