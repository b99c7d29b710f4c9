"""Results of the closed-loop load models (METHODS 1.6-1.8): sustain, batch and probe.

Each trial of a closed model gets a ``model`` object in metrics.json (``kind`` names the
model); each point gets ``summary.model`` (repetition statistics of every number of the
trial objects, plus per-job statistics pooled over the trials). All times are seconds.

**sustain** (MAPPER response-time benchmark): ``submit`` = stats of submit_ack − submit
over the acknowledged submissions; ``query`` = stats of op_end − op_start over the
``query`` calls that returned without an error; ``counts`` = Done, Canceled, Failed and
Lost jobs (each job counted once: canceled, then failed, then lost, then done) and the
exceptions (submit errors: rejected, timed out, errored; plus query calls whose op_end
carries an ``error``); ``per_user`` = the same by virtual user (the submit event's agent).

**batch** (MAPPER throughput benchmark): a job *ends* at the last server-side stage of the
chain (``local_end``, ``ce_done``), or at ``client_done`` when it has none. ``ended`` = N,
``makespan_s`` = last end − first submit, ``throughput_per_s`` = N / makespan;
``submit_rate_per_s`` = acknowledged submissions / (last submit_ack − first submit).

**probe** (single-operation overhead): ``single`` = stats of the spaced single operations
(submit: submit_ack − submit; status/cancel: op_end − op_start), with ``errors`` and the
seed's statement '557±124 ms (α=0.05)'. For submissions, ``below`` is the part of the call
spent in the layers below the client: submit_ack − the server's submit stage (the first
server-side stage named ``*_submit``, else the first server-side stage), for the calls in
which that stage was stamped while the call was open. ``bursts`` = per burst (keyed by its
thread count): the total time of the burst, the time per request (total ÷ requests) and
the stats of its individual requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.analysis import text
from gridbench.analysis.failures import SUBMIT_FAILURES
from gridbench.analysis.stats import Stats, describe, rep, t_halfwidth
from gridbench.backends.base import StageChain
from gridbench.events.model import (
    FAIL_JOB,
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)

F64 = NDArray[np.float64]
CLOSED_MODELS = ("sustain", "batch", "probe")
OP_START = "op_start"
OP_END = "op_end"
ALPHA = 0.05
BASE_STAGES = (
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
    STAGE_CLIENT_DONE,
    STAGE_CANCELLED,
    STAGE_FAILED,
    OP_START,
    OP_END,
)
#: Per-job statistics pooled over a point's trials, per model.
POOLED = {"sustain": ("submit", "query"), "batch": ("submit",), "probe": ("single", "below")}


# --- the per-job table ---------------------------------------------------------------------


def _first(col: str, *stages: str) -> pl.Expr:
    return pl.col(col).filter(pl.col("stage").is_in(stages)).first()


def _attr(col: str, key: str) -> pl.Expr:
    return pl.col(col).str.json_path_match(f"$.{key}")


def job_table(events: pl.DataFrame, extra_stages: Sequence[str] = ()) -> pl.DataFrame:
    """One row per job or timed operation: the earliest reference time (ns) of each stage,
    and the facts the closed models need from the attributes.

    Columns: ``job``, one Int64 column per stage (null = not stamped), ``agent`` (of the
    submit or op_start event), ``probe`` (submit/op attrs), ``op``, ``user``, ``threads``,
    ``requests``, ``op_error`` (op_end has an error), ``fail_kind`` (earliest failure's
    kind) and ``done_state`` (client_done's state: null = done, else failed/cancelled).
    """
    stages = list(dict.fromkeys([*BASE_STAGES, *extra_stages]))
    ev = events.select(
        "job",
        "stage",
        (pl.col("t_ns") + pl.col("clock_offset_ns").fill_null(0)).alias("t"),
        "agent",
        "attrs",
    ).sort("t", maintain_order=True)  # so .first() below is the earliest event
    tbl = ev.group_by("job", maintain_order=True).agg(
        *[pl.col("t").filter(pl.col("stage") == s).min().alias(s) for s in stages],
        _first("agent", STAGE_SUBMIT, OP_START).alias("agent"),
        _first("attrs", STAGE_SUBMIT, OP_START).alias("_start"),
        _first("attrs", STAGE_FAILED).alias("_failed"),
        _first("attrs", STAGE_CLIENT_DONE).alias("_done"),
        _first("attrs", OP_END).alias("_end"),
    )
    return tbl.with_columns(
        _attr("_start", "probe").alias("probe"),
        _attr("_start", "op").alias("op"),
        _attr("_start", "user").alias("user"),
        _attr("_start", "threads").cast(pl.Int64, strict=False).alias("threads"),
        _attr("_start", "requests").cast(pl.Int64, strict=False).alias("requests"),
        _attr("_end", "error").is_not_null().alias("op_error"),
        pl.when(pl.col(STAGE_FAILED).is_not_null())
        .then(_attr("_failed", "kind").fill_null("unknown"))
        .alias("fail_kind"),
        _attr("_done", "state").alias("done_state"),
    ).drop("_start", "_failed", "_done", "_end")


def _dur(a: str, b: str) -> pl.Expr:
    """b − a in seconds (null when either is missing)."""
    return (pl.col(b) - pl.col(a)).cast(pl.Float64) / 1e9


def _seconds(df: pl.DataFrame, a: str, b: str) -> F64:
    if df.height == 0:
        return np.empty(0, dtype=np.float64)
    return df.select(_dur(a, b).fill_null(float("nan")))[:, 0].to_numpy().astype(np.float64)


def _count(df: pl.DataFrame, expr: pl.Expr) -> int:
    return int(df.select(expr.fill_null(False).sum())[:, 0][0]) if df.height else 0


# --- statements ---------------------------------------------------------------------------


def _unit(mean_s: float) -> tuple[str, float]:
    return ("ms", 1000.0) if abs(mean_s) < 1.0 else ("s", 1.0)


def _decimals(x: float) -> int:
    """Decimals that show ``x`` to 3 significant digits (none for 100 and above)."""
    return max(0, 2 - math.floor(math.log10(abs(x)))) if x else 0


def pm_text(mean_s: float, half_s: float | None, unit_of: float | None = None) -> str:
    """The seed's form '557±124 ms' (mean ± 95% CI half-width), in ms below 1 s, else s.

    ``unit_of`` picks the unit from another value (so a part shares the total's unit).
    """
    unit, f = _unit(mean_s if unit_of is None else unit_of)
    d = _decimals(mean_s * f)
    if half_s is None:
        return f"{mean_s * f:.{d}f} {unit}"
    return f"{mean_s * f:.{d}f}±{half_s * f:.{d}f} {unit}"


def ci_statement(stats: Mapping[str, Any]) -> str:
    """'557±124 ms (α=0.05)', or the mean alone with the reason there is no interval."""
    mean, n = stats.get("mean"), int(stats.get("n") or 0)
    if mean is None:
        return "not measured"
    ci = stats.get("ci95")
    if ci is None:
        return f"{pm_text(mean, None)} (n={n}, too few for a confidence interval)"
    return f"{pm_text(mean, ci)} (α={ALPHA:g})"


def below_statement(below: Mapping[str, Any], total: Mapping[str, Any]) -> str | None:
    """'234±43 ms of the 557': the part below, in the total's unit."""
    bm, tm = below.get("mean"), total.get("mean")
    if bm is None or tm is None:
        return None
    _, f = _unit(tm)
    part = pm_text(bm, below.get("ci95"), unit_of=tm)
    return f"{part} of the {tm * f:.{_decimals(tm * f)}f}"


# --- sustain ------------------------------------------------------------------------------


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
    submit = describe(_seconds(jobs, STAGE_SUBMIT, STAGE_SUBMIT_ACK))
    query = describe(_seconds(ok_q, OP_START, OP_END))
    q_exc = _count(queries, pl.col("op_error"))
    s_exc = _count(jobs, pl.col("is_exception"))
    counts = {
        "submitted": jobs.height,
        "done": _count(jobs, pl.col("is_done")),
        "canceled": _count(jobs, pl.col("is_canceled")),
        "failed": _count(jobs, pl.col("is_failed")),
        "lost": _count(jobs, pl.col("is_lost")),
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
        _dur(STAGE_SUBMIT, STAGE_SUBMIT_ACK).mean().alias("submit_mean"),
        _dur(STAGE_SUBMIT, STAGE_SUBMIT_ACK).max().alias("submit_max"),
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
            _dur(OP_START, OP_END).filter(ok).mean().alias("query_mean"),
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


# --- batch --------------------------------------------------------------------------------


def server_end_stage(chain: StageChain) -> str | None:
    """The last server-side stage of the chain (``local_end``, ``ce_done``), if any."""
    server = [s.name for s in chain.stages if s.source != "client"]
    return server[-1] if server else None


def batch_metrics(tbl: pl.DataFrame, server_end: str | None) -> dict[str, Any]:
    """The batch ``model`` object of one trial (see the module docstring)."""
    jobs = tbl.filter(pl.col(STAGE_SUBMIT).is_not_null())
    has_server = server_end is not None and _count(jobs, pl.col(server_end).is_not_null()) > 0
    end_stage = server_end if has_server and server_end is not None else STAGE_CLIENT_DONE
    end = pl.coalesce(pl.col(end_stage), pl.col(STAGE_CLIENT_DONE))
    jobs = jobs.with_columns(end.alias("_end"))
    ended = jobs.filter(pl.col("_end").is_not_null())
    first_submit = jobs[STAGE_SUBMIT].min() if jobs.height else None
    last_end = ended["_end"].max() if ended.height else None
    last_ack = jobs[STAGE_SUBMIT_ACK].max() if jobs.height else None
    acked = _count(jobs, pl.col(STAGE_SUBMIT_ACK).is_not_null())
    makespan = _span(first_submit, last_end)
    submit_span = _span(first_submit, last_ack)
    n = ended.height
    completed = _count(ended, pl.col("fail_kind").is_null() & pl.col(STAGE_CANCELLED).is_null())
    throughput = n / makespan if makespan else None
    out = {
        "kind": "batch",
        "end_stage": end_stage,
        "submitted": jobs.height,
        "acknowledged": acked,
        "ended": n,
        "completed": completed,
        "failed": _count(jobs, pl.col("fail_kind").is_not_null()),
        "makespan_s": makespan,
        "throughput_per_s": throughput,
        "submit_span_s": submit_span,
        "submit_rate_per_s": acked / submit_span if submit_span else None,
        "submit": describe(_seconds(jobs, STAGE_SUBMIT, STAGE_SUBMIT_ACK)),
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


# --- probe --------------------------------------------------------------------------------


def below_stage(chain: StageChain) -> str | None:
    """The server's submit stage: the first server-side ``*_submit`` stage, else the first
    server-side stage (``None`` when the chain has no server-side stage)."""
    server = [s.name for s in chain.stages if s.source != "client"]
    named = [s for s in server if s.endswith("_submit")]
    return named[0] if named else (server[0] if server else None)


def probe_operation(tbl: pl.DataFrame) -> str:
    """The probed operation: status or cancel when such calls were timed, else submit."""
    ops = tbl.filter(pl.col("op").is_in(["status", "cancel"]))["op"]
    return str(ops[0]) if ops.len() else "submit"


def _op_times(rows: pl.DataFrame, operation: str) -> tuple[F64, int]:
    """Durations of the successful calls among ``rows`` and the number of errors."""
    if operation == "submit":
        ok = pl.col(STAGE_SUBMIT_ACK).is_not_null()
        good = rows.filter(ok)
        return _seconds(good, STAGE_SUBMIT, STAGE_SUBMIT_ACK), rows.height - good.height
    ok = pl.col(OP_END).is_not_null() & ~pl.col("op_error")
    good = rows.filter(ok)
    return _seconds(good, OP_START, OP_END), rows.height - good.height


def probe_metrics(tbl: pl.DataFrame, below_at: str | None) -> dict[str, Any]:
    """The probe ``model`` object of one trial (see the module docstring)."""
    operation = probe_operation(tbl)
    if operation == "submit":
        calls = tbl.filter(pl.col(STAGE_SUBMIT).is_not_null() & pl.col("probe").is_not_null())
    else:
        calls = tbl.filter(pl.col("op") == operation)
    singles = calls.filter(pl.col("probe") == "single")
    times, errors = _op_times(singles, operation)
    single: dict[str, Any] = {**describe(times), "errors": errors}
    single["statement"] = ci_statement(single)
    below = None
    if operation == "submit" and below_at is not None:
        t = pl.col(below_at)
        inside = singles.filter((t >= pl.col(STAGE_SUBMIT)) & (t <= pl.col(STAGE_SUBMIT_ACK)))
        if inside.height:
            below = {**describe(_seconds(inside, below_at, STAGE_SUBMIT_ACK)), "stage": below_at}
            below["statement"] = below_statement(below, single)
    out = {
        "kind": "probe",
        "operation": operation,
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
    """'submit: 557±124 ms (α=0.05), n=30; 234±43 ms of the 557 below ce_submit; ...'."""
    single = m.get("single") or {}
    s = f"{m.get('operation')}: {single.get('statement') or ci_statement(single)}"
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


# --- entry points -------------------------------------------------------------------------


def model_metrics(
    load_model: str, events: pl.DataFrame, chain: StageChain
) -> dict[str, Any] | None:
    """The trial's ``model`` object for a closed load model (``None`` for open)."""
    if load_model not in CLOSED_MODELS:
        return None
    if load_model == "batch":
        end = server_end_stage(chain)
        return batch_metrics(job_table(events, [end] if end else []), end)
    if load_model == "probe":
        at = below_stage(chain)
        return probe_metrics(job_table(events, [at] if at else []), at)
    return sustain_metrics(job_table(events))


NO_JOB_COMPLETED = "no job completed"


def adjust_validity(validity: dict[str, Any], model: Mapping[str, Any] | None) -> dict[str, Any]:
    """A status or cancel probe submits no jobs: 'no job completed' does not apply to it,
    'no call succeeded' does."""
    if not model or model.get("kind") != "probe" or model.get("operation") == "submit":
        return validity
    reasons = [r for r in validity.get("reasons", []) if r != NO_JOB_COMPLETED]
    if not (model.get("single") or {}).get("n"):
        reasons.append(f"no single {model.get('operation')} call succeeded")
    return {**validity, "reasons": reasons, "valid": not reasons}


# --- point summary ------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _rep_tree(objs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every numeric leaf of the objects replaced by its rep object across them."""
    keys: list[str] = []
    for o in objs:
        keys.extend(k for k in o if k not in keys)
    out: dict[str, Any] = {}
    for k in keys:
        vals = [o.get(k) for o in objs]
        if any(isinstance(v, Mapping) for v in vals):
            out[k] = _rep_tree([v if isinstance(v, Mapping) else {} for v in vals])
        elif any(_is_number(v) for v in vals) and all(v is None or _is_number(v) for v in vals):
            out[k] = rep([float(v) if isinstance(v, int | float) else None for v in vals])
    return out


def pooled(parts: Sequence[Mapping[str, Any] | None]) -> Stats:
    """Per-job statistics of several trials' stats objects, pooled exactly from n, mean
    and std: n, mean, std, min, max and the Student-t ci95 of the pooled sample."""
    ps = [p for p in parts if p and p.get("n") and p.get("mean") is not None]
    out: Stats = {"n": 0, "mean": None, "std": None, "min": None, "max": None, "ci95": None}
    if not ps:
        return out
    ns = np.array([float(p["n"]) for p in ps])
    ms = np.array([float(p["mean"]) for p in ps])
    ss = np.array([float(p.get("std") or 0.0) for p in ps])
    total = float(ns.sum())
    mean = float(np.dot(ns, ms) / total)
    out.update(
        n=int(total),
        mean=mean,
        min=min(float(p["min"]) for p in ps),
        max=max(float(p["max"]) for p in ps),
    )
    if total >= 2:
        # within-trial sums of squares plus the spread of the trial means: exact
        sq = float(np.dot(ns - 1.0, ss * ss) + np.dot(ns, (ms - mean) ** 2))
        std = math.sqrt(max(sq, 0.0) / (total - 1.0))
        out["std"] = std
        out["ci95"] = t_halfwidth(std, int(total))
    return out


def model_summary(
    trials: Sequence[Mapping[str, Any]], kind: str | None = None
) -> dict[str, Any] | None:
    """The point's ``summary.model`` from the trial objects it uses (valid, not dropped).

    ``{kind, trials, <rep of every number of the trial models>, pooled: {<stats name>:
    pooled stats}, statement}``; ``None`` when no trial has a model.
    """
    models = [t["model"] for t in trials if isinstance(t.get("model"), Mapping)]
    kind = kind or (str(models[0].get("kind")) if models else None)
    if kind is None:
        return None
    out: dict[str, Any] = {"kind": kind, "trials": len(models)}
    if not models:
        out["statement"] = "no valid trial"
        return out
    ops = [m.get("operation") for m in models if m.get("operation")]
    if ops:
        out["operation"] = ops[0]
    out.update(_rep_tree(models))
    pool: dict[str, Any] = {name: pooled([m.get(name) for m in models]) for name in POOLED[kind]}
    if kind == "probe":
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
    out["pooled"] = pool
    out["statement"] = _summary_statement(kind, out, models)
    return out


def _summary_statement(
    kind: str, summ: Mapping[str, Any], models: Sequence[Mapping[str, Any]]
) -> str:
    pool = summ["pooled"]
    k = len(models)
    over = f" over {k} trials" if k > 1 else ""
    if kind == "probe":
        s = f"{summ.get('operation', 'submit')}: {pool['single']['statement']}"
        if pool["single"]["n"]:
            s += f", n={pool['single']['n']}{over}"
        below = pool.get("below") or {}
        if below.get("statement"):
            s += f"; {below['statement']} below {below.get('stage')}"
        return s
    if kind == "sustain":
        counts = {
            c: sum(int((m.get("counts") or {}).get(c) or 0) for m in models)
            for c in ("done", "canceled", "failed", "exceptions")
        }
        return sustain_statement(pool["submit"], pool["query"], counts) + over
    tp = summ.get("throughput_per_s") or {}
    if tp.get("mean") is None:
        return "no throughput measured"
    ci = f" ± {text.num(tp['ci95'])}/s (95% CI)" if tp.get("ci95") is not None else ""
    return f"throughput {text.rate(tp['mean'])}{ci}" + (f", mean{over}" if k > 1 else "")
