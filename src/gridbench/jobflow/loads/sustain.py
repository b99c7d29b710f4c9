"""The sustain load model (MAPPER response-time benchmark, METHODS 1.6): k virtual users
each keep ``jobs_per_user`` jobs in the system, sleeping up to ``sleep_coef`` between
status queries of their own jobs, until the trial's duration ends.

Results (the trial's ``model`` object, seconds): ``submit`` = stats of submit_ack − submit
over the acknowledged submissions; ``query`` = stats of op_end − op_start over the
``query`` calls that returned without an error; ``counts`` = Done, Canceled, Failed and
Lost jobs (each job counted once: canceled, then failed, then lost, then done) and the
exceptions (submit errors: rejected, timed out, errored; plus query calls whose op_end
carries an ``error``); ``per_user`` = the same by virtual user (the submit event's agent).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gridbench.jobflow import text
from gridbench.jobflow.events.model import (
    FAIL_JOB,
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
    SUBMIT_FAILURES,
)
from gridbench.jobflow.loads.base import BaseLoadModel, LoadBase, PlanEstimate, TrialContext, narrow
from gridbench.jobflow.loads.closed import (
    OP_END,
    OP_START,
    count,
    dur,
    job_table,
    over_trials,
    seconds,
    summarize,
)
from gridbench.jobflow.run.closed_loop import OpNames, sleep_or_stop, timed_op
from gridbench.jobflow.run.recorder import Recorder
from gridbench.lazy import lazy_module
from gridbench.stats import describe
from gridbench.units import Duration

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.specbase.model import ExperimentBase
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    pl = lazy_module("polars")


class SustainLoad(LoadBase):
    """``load:`` of the sustain model."""

    model: Literal["sustain"]
    users: int = Field(default=10, ge=1, le=10_000)
    jobs_per_user: int = Field(default=5, ge=1, le=1_000_000)
    sleep_coef: Duration = 10.0


# --- runner -------------------------------------------------------------------------------


async def run_sustain(ctx: TrialContext) -> None:
    """k users each keep ``jobs_per_user`` jobs in the system until the duration ends."""
    load = narrow(ctx.spec.load, SustainLoad)
    backend, tracker, stop = ctx.backend, ctx.tracker, ctx.stop
    make_request = ctx.requests(0)
    recs = ctx.recorders
    ops = OpNames(ctx.trial_id)
    counter = 0
    deadline = time.perf_counter() + (ctx.spec.trial.duration or 0.0)

    async def user(u: int) -> None:
        nonlocal counter
        base = recs[u % len(recs)]
        agent = f"user{u}"
        # each virtual user is its own submitter agent, so results break down per user
        rec = Recorder(base.log, base.clock, agent, base.offset)
        rng = random.Random(ctx.seed * 1000 + u)
        mine: set[str] = set()
        while not stop.is_set() and time.perf_counter() < deadline:
            while (
                len(mine) < load.jobs_per_user
                and time.perf_counter() < deadline
                and not stop.is_set()
            ):
                counter += 1
                req = make_request(counter - 1, u)
                if req.user is None:  # no declared users: each virtual user is its agent
                    req = dataclasses.replace(req, user=agent)
                bid = await ctx.submit(req, rec)
                if bid is not None:
                    mine.add(bid)
            await sleep_or_stop(rng.uniform(0, load.sleep_coef), stop, deadline)
            if not mine:
                continue
            start = {"op": "query", "user": agent, "jobs": len(mine)}
            asked = rec.clock.now_ns()  # the bracket of client_done starts at the ask
            states = await timed_op(
                rec, ops.name(agent), start, {"op": "query"}, backend.status(sorted(mine))
            )
            if states is None:
                continue
            await tracker.observe(states, asked)  # this user's poll: how the client sees ends
            mine = {b for b in mine if b in tracker.inflight}

    async with asyncio.TaskGroup() as tg:
        for u in range(load.users):
            tg.create_task(user(u))


# --- analysis -----------------------------------------------------------------------------


def _job_flags(jobs: pl.DataFrame) -> pl.DataFrame:
    """Each submitted job classified once: exception, canceled, failed, lost or done."""
    kind = pl.col("fail_kind")
    exc = kind.is_in(list(SUBMIT_FAILURES)).fill_null(False)
    canceled = (
        pl.col(STAGE_CANCELLED).is_not_null()
        | (pl.col("done_state") == "cancelled").fill_null(False)
    ) & ~exc
    failed = ((kind == FAIL_JOB) | (pl.col("done_state") == "failed")).fill_null(False)
    failed = failed & ~exc & ~canceled
    lost = (kind == FAIL_LOST).fill_null(False) & ~exc & ~canceled & ~failed
    done = pl.col(STAGE_CLIENT_DONE).is_not_null() & kind.is_null() & ~canceled & ~failed
    return jobs.with_columns(
        exc.alias("is_exception"),
        canceled.alias("is_canceled"),
        failed.alias("is_failed"),
        lost.alias("is_lost"),
        done.alias("is_done"),
    )


def sustain_metrics(tbl: pl.DataFrame) -> dict[str, Any]:
    """The sustain ``model`` object of one trial (see the module docstring)."""
    jobs = _job_flags(tbl.filter(pl.col(STAGE_SUBMIT).is_not_null()))
    queries = tbl.filter(pl.col("op") == "query")
    ok_q = queries.filter(pl.col(OP_END).is_not_null() & ~pl.col("op_error"))
    submit = describe(seconds(jobs, STAGE_SUBMIT, STAGE_SUBMIT_ACK))
    query = describe(seconds(ok_q, OP_START, OP_END))
    q_exc = count(queries, pl.col("op_error"))
    s_exc = count(jobs, pl.col("is_exception"))
    counts = {
        "submitted": jobs.height,
        "done": count(jobs, pl.col("is_done")),
        "canceled": count(jobs, pl.col("is_canceled")),
        "failed": count(jobs, pl.col("is_failed")),
        "lost": count(jobs, pl.col("is_lost")),
        "exceptions": s_exc + q_exc,
        "submit_exceptions": s_exc,
        "query_exceptions": q_exc,
        "queries": queries.height,
    }
    return {
        "kind": "sustain",
        "users": len(_users(jobs, queries)),
        "submit": submit,
        "query": query,
        "counts": counts,
        "per_user": _per_user(jobs, queries),
        "statement": sustain_statement(submit, query, counts),
    }


def _users(jobs: pl.DataFrame, queries: pl.DataFrame) -> list[str]:
    names = [*jobs["agent"].drop_nulls().to_list(), *queries["user"].drop_nulls().to_list()]
    return sorted(set(names), key=lambda u: (len(u), u))  # user2 before user10


def _per_user(jobs: pl.DataFrame, queries: pl.DataFrame) -> dict[str, Any]:
    """Submit time and job counts by virtual user (the submit event's agent)."""
    by_job = jobs.group_by("agent").agg(
        pl.len().alias("submitted"),
        dur(STAGE_SUBMIT, STAGE_SUBMIT_ACK).mean().alias("submit_mean"),
        dur(STAGE_SUBMIT, STAGE_SUBMIT_ACK).max().alias("submit_max"),
        pl.col("is_done").sum().alias("done"),
        pl.col("is_canceled").sum().alias("canceled"),
        pl.col("is_failed").sum().alias("failed"),
        pl.col("is_exception").sum().alias("submit_exceptions"),
    )
    ok = pl.col(OP_END).is_not_null() & ~pl.col("op_error")
    by_q = (
        queries.with_columns(pl.col("user").fill_null(pl.col("agent")))
        .group_by("user")
        .agg(
            pl.len().alias("queries"),
            dur(OP_START, OP_END).filter(ok).mean().alias("query_mean"),
            pl.col("op_error").sum().alias("query_exceptions"),
        )
    )
    rows = {r["agent"]: dict(r) for r in by_job.iter_rows(named=True) if r["agent"] is not None}
    qrows = {r["user"]: dict(r) for r in by_q.iter_rows(named=True) if r["user"] is not None}
    out: dict[str, Any] = {}
    for u in _users(jobs, queries):
        j, q = rows.get(u, {}), qrows.get(u, {})
        out[u] = {
            "submitted": int(j.get("submitted") or 0),
            "submit_mean": j.get("submit_mean"),
            "submit_max": j.get("submit_max"),
            "done": int(j.get("done") or 0),
            "canceled": int(j.get("canceled") or 0),
            "failed": int(j.get("failed") or 0),
            "exceptions": int(j.get("submit_exceptions") or 0)
            + int(q.get("query_exceptions") or 0),
            "queries": int(q.get("queries") or 0),
            "query_mean": q.get("query_mean"),
        }
    return out


def _avg_min_max(s: Mapping[str, Any]) -> str:
    if s.get("mean") is None:
        return "not measured"
    return (
        f"avg {text.seconds(s['mean'])} (min {text.seconds(s['min'])}, "
        f"max {text.seconds(s['max'])})"
    )


def sustain_statement(
    submit: Mapping[str, Any], query: Mapping[str, Any], counts: Mapping[str, Any]
) -> str:
    """'submit time avg 52 ms (min 10 ms, max 200 ms); query time ...; 120 done, ...'."""
    return (
        f"submit time {_avg_min_max(submit)}; query time {_avg_min_max(query)}; "
        f"{text.num(counts['done'])} done, {text.num(counts['canceled'])} canceled, "
        f"{text.num(counts['failed'])} failed, {text.num(counts['exceptions'])} exceptions"
    )


def sustain_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's ``summary.model``: pooled submit and query times, summed counts."""
    out, models = summarize(trials, "sustain", ("submit", "query"))
    if models:
        pool = out["pooled"]
        counts = {
            c: sum(int((m.get("counts") or {}).get(c) or 0) for m in models)
            for c in ("done", "canceled", "failed", "exceptions")
        }
        out["statement"] = sustain_statement(pool["submit"], pool["query"], counts) + over_trials(
            models
        )
    return out


class Sustain(BaseLoadModel):
    """The sustain model (see the module docstring)."""

    name = "sustain"
    spec = SustainLoad
    users_by_agent = True  # each virtual user submits as its own agent
    growth = ("model.submit.mean", "submit time", "s")
    # submit and query times and job counts per point
    section_refs = ("gridbench.jobflow.report.sustain:sustain_table",)
    run = staticmethod(run_sustain)
    summary = staticmethod(sustain_summary)

    def check_spec(self, spec: ExperimentBase) -> None:
        """A duration, and a virtual user for every declared user."""
        load = narrow(spec.load, SustainLoad)
        if spec.trial.duration is None:
            raise ValueError("the sustain model needs trial.duration")
        if spec.users and load.users < len(spec.users):
            raise ValueError(
                f"load.users is {load.users} but {len(spec.users)} users are declared: "
                "some would get no virtual user; raise load.users"
            )

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """Open-ended: as many jobs as the users get through in the duration."""
        return PlanEstimate(None, (spec.trial.duration or 0.0) + drain_s, None)

    reads_events = True  # trial_metrics reads the trial's events

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """See :func:`sustain_metrics`."""
        return sustain_metrics(job_table(events))


MODEL = Sustain()
