"""The batch load model (MAPPER throughput benchmark, METHODS 1.7): N jobs submitted by k
submitters as fast as they go, one per call or ``bulk`` per call (job arrays).

Results (the trial's ``model`` object): a job *ends* at the last server-side stage of the
chain (``local_end``, ``ce_done``), or at ``client_done`` when it has none. ``ended`` = N,
``makespan_s`` = last end − first submit, ``throughput_per_s`` = N / makespan;
``submit_rate_per_s`` = acknowledged submissions / (last submit_ack − first submit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gridbench.errors import BackendError, SpecError
from gridbench.jobflow import text
from gridbench.jobflow.backends.base import BulkSubmitter
from gridbench.jobflow.events.model import (
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.jobflow.loads.base import BaseLoadModel, LoadBase, PlanEstimate, TrialContext, narrow
from gridbench.jobflow.loads.closed import count, job_table, over_trials, seconds, summarize
from gridbench.jobflow.run.open_loop import submit_chunk
from gridbench.lazy import lazy_module
from gridbench.stats import describe

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.backends.base import Backend
    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.specbase.model import ExperimentBase
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    pl = lazy_module("polars")

NO_BULK_FIX = "set load.bulk: 1, or use a backend that can (slurm: job arrays)"


#: a client program's submit call, and the controller's floor per job (plan estimates)
SUBMIT_CALL_S = 0.01
MIN_PER_JOB_S = 0.001


class BatchLoad(LoadBase):
    """``load:`` of the batch model."""

    model: Literal["batch"]
    jobs: int | None = Field(default=None, ge=1)
    submitters: int = Field(default=10, ge=1, le=10_000)
    bulk: int = Field(
        default=1, ge=1, le=10_000, description="jobs per submission call (job arrays; batch)"
    )


def batch_jobs(spec: ExperimentBase) -> int:
    """N: load.jobs, else trial.jobs."""
    load = narrow(spec.load, BatchLoad)
    return load.jobs or spec.trial.jobs or 0


# --- runner -------------------------------------------------------------------------------


async def run_batch(ctx: TrialContext) -> None:
    """N jobs submitted by k submitters as fast as they go: one per call, or ``bulk`` per
    call (job arrays) when the backend can."""
    load = narrow(ctx.spec.load, BatchLoad)
    backend, bulk, stop = ctx.backend, load.bulk, ctx.stop
    jobs = batch_jobs(ctx.spec)
    make_request = ctx.requests(jobs)
    cursor = 0
    bulk_backend = backend if bulk > 1 and isinstance(backend, BulkSubmitter) else None
    if bulk > 1 and bulk_backend is None:
        raise BackendError(
            f"the {backend.name} backend cannot submit in bulk", where="load.bulk", fix=NO_BULK_FIX
        )

    async def submitter(k: int) -> None:
        nonlocal cursor
        rec = ctx.recorders[k % len(ctx.recorders)]
        while not stop.is_set() and cursor < jobs:
            i = cursor
            n = min(bulk, jobs - i)
            cursor += n
            if bulk_backend is not None:
                reqs = [make_request(j) for j in range(i, i + n)]
                await submit_chunk(
                    bulk_backend, reqs, rec, ctx.tracker, ctx.progress, ctx.submit_timeout_s
                )
            else:
                await ctx.submit(make_request(i), rec)

    async with asyncio.TaskGroup() as tg:
        for k in range(load.submitters):
            tg.create_task(submitter(k))


# --- analysis -----------------------------------------------------------------------------


def server_end_stage(chain: StageChain) -> str | None:
    """The last server-side stage of the chain (``local_end``, ``ce_done``), if any."""
    server = [s.name for s in chain.stages if s.source != "client"]
    return server[-1] if server else None


def batch_metrics(tbl: pl.DataFrame, server_end: str | None) -> dict[str, Any]:
    """The batch ``model`` object of one trial (see the module docstring)."""
    jobs = tbl.filter(pl.col(STAGE_SUBMIT).is_not_null())
    has_server = server_end is not None and count(jobs, pl.col(server_end).is_not_null()) > 0
    end_stage = server_end if has_server and server_end is not None else STAGE_CLIENT_DONE
    end = pl.coalesce(pl.col(end_stage), pl.col(STAGE_CLIENT_DONE))
    jobs = jobs.with_columns(end.alias("_end"))
    ended = jobs.filter(pl.col("_end").is_not_null())
    first_submit = jobs[STAGE_SUBMIT].min() if jobs.height else None
    last_end = ended["_end"].max() if ended.height else None
    last_ack = jobs[STAGE_SUBMIT_ACK].max() if jobs.height else None
    acked = count(jobs, pl.col(STAGE_SUBMIT_ACK).is_not_null())
    makespan = _span(first_submit, last_end)
    submit_span = _span(first_submit, last_ack)
    n = ended.height
    completed = count(ended, pl.col("fail_kind").is_null() & pl.col(STAGE_CANCELLED).is_null())
    throughput = n / makespan if makespan else None
    out = {
        "kind": "batch",
        "end_stage": end_stage,
        "submitted": jobs.height,
        "acknowledged": acked,
        "ended": n,
        "completed": completed,
        "failed": count(jobs, pl.col("fail_kind").is_not_null()),
        "makespan_s": makespan,
        "throughput_per_s": throughput,
        "submit_span_s": submit_span,
        "submit_rate_per_s": acked / submit_span if submit_span else None,
        "submit": describe(seconds(jobs, STAGE_SUBMIT, STAGE_SUBMIT_ACK)),
    }
    out["statement"] = batch_statement(out)
    return out


def _span(a: Any, b: Any) -> float | None:
    if not isinstance(a, int) or not isinstance(b, int) or b <= a:
        return None
    return (b - a) / 1e9


def batch_statement(m: Mapping[str, Any]) -> str:
    """'25 jobs ended in 3.2 s (last local_end − first submit): throughput 7.8/s (469/min)'."""
    tp, span = m.get("throughput_per_s"), m.get("makespan_s")
    if tp is None or span is None:
        return f"{m.get('ended', 0)} of {m.get('submitted', 0)} jobs ended: no throughput"
    s = (
        f"{m['ended']} jobs ended in {text.seconds(span)} (first submit to last "
        f"{m['end_stage']}): throughput {text.rate(tp)}"
    )
    if m.get("submit_rate_per_s") is not None:
        s += f"; submitted at {text.rate(m['submit_rate_per_s'])}"
    return s


def batch_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's ``summary.model``: the mean throughput over the trials, with its CI."""
    out, models = summarize(trials, "batch", ("submit",))
    if models:
        tp = out.get("throughput_per_s") or {}
        if tp.get("mean") is None:
            out["statement"] = "no throughput measured"
        else:
            ci = f" ± {text.num(tp['ci95'])}/s (95% CI)" if tp.get("ci95") is not None else ""
            mean = f", mean{over_trials(models)}" if len(models) > 1 else ""
            out["statement"] = f"throughput {text.rate(tp['mean'])}{ci}{mean}"
    return out


class Batch(BaseLoadModel):
    """The batch model (see the module docstring)."""

    name = "batch"
    spec = BatchLoad
    growth = ("model.throughput_per_s", "batch throughput", "jobs/s")
    section_refs = ("gridbench.jobflow.report.batch:batch_table",)  # throughput per point
    run = staticmethod(run_batch)
    summary = staticmethod(batch_summary)

    def check_spec(self, spec: ExperimentBase) -> None:
        """N must be given."""
        if narrow(spec.load, BatchLoad).jobs is None and spec.trial.jobs is None:
            raise ValueError("the batch model needs load.jobs (N jobs to submit)")

    def check_backend(self, spec: ExperimentBase, backend: Backend) -> None:
        """Bulk submission needs a backend that can (job arrays)."""
        if narrow(spec.load, BatchLoad).bulk > 1 and not isinstance(backend, BulkSubmitter):
            raise SpecError(
                f"the {spec.backend.type} backend cannot submit in bulk",
                where="load.bulk",
                fix=NO_BULK_FIX,
            )

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """N jobs from k submitters in parallel, about 10 ms per call each (a client
        program's start), but no faster than 1 ms per job (the controller's own CPU per
        call, bench/bench_spawn.py); then the drain."""
        n = batch_jobs(spec)
        load = narrow(spec.load, BatchLoad)
        per_job = max(SUBMIT_CALL_S / load.submitters, MIN_PER_JOB_S) / load.bulk
        return PlanEstimate(n, drain_s + n * per_job, None)

    reads_events = True  # trial_metrics reads the trial's events

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """See :func:`batch_metrics`."""
        end = server_end_stage(chain)
        return batch_metrics(job_table(events, [end] if end else []), end)


MODEL = Batch()
