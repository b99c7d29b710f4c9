"""Results of the retry load model (METHODS 1.9), from a trial's events alone.

A submission of the model is a job whose ``submit`` event carries ``attempt``, ``slot``
and ``retry_on``. It *failed* when, with ``retry_on: submit``, it was never acknowledged
(refused, timed out); with ``retry_on: any``, also when it has a ``failed`` stamp (the job
failed, or was lost) or a ``cancelled`` one (by the backend, or by gridbench after it had
not ended within ``timeouts.drain``).

The trial's ``model`` object: per attempt (keyed '1', '2', ...) ``submitted``, ``failed``,
``failure_rate`` = failed ÷ submitted at that attempt and ``kinds`` (failures by kind);
``first_failure_rate`` (attempt 1: failed ÷ the M jobs submitted at once),
``time_to_success_s`` (a slot's first submission to its success, mean over the slots that
succeeded) and ``time_to_all_success_s`` (to the last success, when all succeeded),
``average_failure_rate`` (the seed's: the mean of the per-attempt rates, the last attempt
included), ``attempts_used``, ``never_succeeded`` (slots still failing after their last
attempt) and a statement such as '35 jobs at once: 40% failed at attempt 1, 12% at 2,
none at 3 (average 17%)'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gridbench.jobflow import text
from gridbench.jobflow.events.model import (
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.jobflow.loads.closed import job_table, over_trials, summarize
from gridbench.lazy import lazy_module

if TYPE_CHECKING:
    import polars as pl
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    pl = lazy_module("polars")

NO_JOB_COMPLETED = "no job completed"


def _attr(key: str) -> pl.Expr:
    return pl.col("attrs").str.json_path_match(f"$.{key}")


def retry_jobs_table(events: pl.DataFrame) -> pl.DataFrame:
    """One row per submission of the retry model: ``job``, ``attempt``, ``slot``,
    ``retry_on``, ``failed`` (bool) and ``kind`` (of the failure; null when it succeeded)."""
    subs = (
        events.filter(pl.col("stage") == STAGE_SUBMIT)
        .select(
            "job",
            _attr("attempt").cast(pl.Int64, strict=False).alias("attempt"),
            _attr("slot").cast(pl.Int64, strict=False).alias("slot"),
            _attr("retry_on").alias("retry_on"),
        )
        .filter(pl.col("attempt").is_not_null() & pl.col("slot").is_not_null())
        .unique("job", keep="first", maintain_order=True)
    )
    if subs.height == 0:
        return subs.with_columns(
            pl.lit(False).alias("failed"), pl.lit(None, pl.String).alias("kind")
        )
    by = (
        events.filter(pl.col("stage") == STAGE_CANCELLED)
        .group_by("job", maintain_order=True)
        .agg(_attr("by").first().alias("cancelled_by"))
    )
    tbl = job_table(events.filter(pl.col("job").is_in(subs["job"].implode())))
    tbl = subs.join(tbl, on="job", how="left").join(by, on="job", how="left")
    refused = pl.col(STAGE_SUBMIT_ACK).is_null()
    cancelled = pl.col(STAGE_CANCELLED).is_not_null()
    broke = refused | pl.col("fail_kind").is_not_null() | cancelled
    failed = pl.when(pl.col("retry_on") == "submit").then(refused).otherwise(broke)
    kind = (
        pl.when(~pl.col("failed"))
        .then(None)
        .when(pl.col("fail_kind").is_not_null())
        .then(pl.col("fail_kind"))
        .when(cancelled)
        .then(pl.lit("cancelled by ") + pl.col("cancelled_by").fill_null("backend"))
        .otherwise(pl.lit("not acknowledged"))
    )
    tbl = tbl.with_columns(failed.fill_null(True).alias("failed"))
    return tbl.with_columns(kind.alias("kind")).select(
        "job", "attempt", "slot", "retry_on", "failed", "kind"
    )


def retry_metrics(events: pl.DataFrame) -> dict[str, Any]:
    """The retry ``model`` object of one trial (see the module docstring)."""
    tbl = retry_jobs_table(events)
    modes = tbl["retry_on"].drop_nulls().unique().to_list() if tbl.height else []
    attempts: dict[str, Any] = {}
    for (k,), part in tbl.sort("attempt").group_by("attempt", maintain_order=True):
        n, bad = part.height, int(part["failed"].sum())
        kinds = part.filter(pl.col("failed"))["kind"].value_counts(sort=True)
        attempts[str(k)] = {
            "attempt": int(str(k)),
            "submitted": n,
            "failed": bad,
            "failure_rate": bad / n if n else None,
            "kinds": {str(a): int(b) for a, b in kinds.iter_rows()},
        }
    rates = [a["failure_rate"] for a in attempts.values() if a["failure_rate"] is not None]
    last = tbl.sort("attempt").group_by("slot").agg(pl.col("failed").last())
    first = attempts.get("1") or {}
    out: dict[str, Any] = {
        "kind": "retry",
        "retry_on": modes[0] if len(modes) == 1 else None,
        "jobs": int(first.get("submitted") or 0),
        "attempts": attempts,
        "attempts_used": len(attempts),
        "submissions": tbl.height,
        "first_failure_rate": first.get("failure_rate"),
        "average_failure_rate": sum(rates) / len(rates) if rates else None,
        "never_succeeded": int(last["failed"].sum()) if last.height else 0,
        **time_to_success(events, tbl),
    }
    out["statement"] = retry_statement(out)
    return out


def time_to_success(events: pl.DataFrame, tbl: pl.DataFrame) -> dict[str, float | None]:
    """Seconds from a slot's first submission to the end its client saw of the attempt
    that succeeded: the mean over the slots that succeeded (``time_to_success_s``), and
    from the first submission to the last success when every slot succeeded
    (``time_to_all_success_s``)."""
    none: dict[str, float | None] = {"time_to_success_s": None, "time_to_all_success_s": None}
    if tbl.height == 0:
        return none
    t = (
        events.filter(pl.col("stage").is_in([STAGE_SUBMIT, STAGE_CLIENT_DONE]))
        .group_by("job", "stage")
        .agg(pl.col("t_ns").min())
        .pivot("stage", index="job", values="t_ns")
    )
    if STAGE_SUBMIT not in t.columns or STAGE_CLIENT_DONE not in t.columns:
        return none
    jobs = tbl.join(t, on="job", how="left")
    slots = jobs.group_by("slot").agg(
        pl.col(STAGE_SUBMIT).min().alias("first"),
        pl.col(STAGE_CLIENT_DONE).filter(~pl.col("failed")).min().alias("done"),
    )
    ok = slots.drop_nulls()
    if ok.height == 0:
        return none
    done, first = ok["done"].to_numpy(), ok["first"].to_numpy()
    took = float((done - first).mean()) / 1e9
    every = ok.height == slots.height
    span = float(done.max() - slots["first"].to_numpy().min()) / 1e9 if every else None
    return {"time_to_success_s": took, "time_to_all_success_s": span}


def _rate(x: float) -> str:
    return "none" if x == 0 else text.pct(x)


def retry_statement(m: Mapping[str, Any], suffix: str = "") -> str:
    """'35 jobs at once: 40% failed at attempt 1, 12% at 2, none at 3 (average 17%)'.

    The rates are a trial's, or a point summary's means (rep objects: their ``mean``)."""
    jobs, attempts = m.get("jobs"), m.get("attempts") or {}
    rates = [(k, _value(a.get("failure_rate"))) for k, a in attempts.items()]
    shown = [(k, r) for k, r in rates if r is not None]
    if not shown:
        return "no retry-model submission was made"
    parts = [
        f"{_rate(r)} failed at attempt {k}" if i == 0 else f"{_rate(r)} at {k}"
        for i, (k, r) in enumerate(shown)
    ]
    s = f"{text.num(_value(jobs) or 0)} jobs at once: {', '.join(parts)}"
    avg = _value(m.get("average_failure_rate"))
    if avg is not None:
        s += f" (average {text.pct(avg)})"
    never = _value(m.get("never_succeeded"))
    if never:
        s += f"; {text.num(never)} never succeeded"
    return s + suffix


def _value(v: Any) -> float | None:
    """A number, or a rep object's mean."""
    if isinstance(v, Mapping):
        v = v.get("mean")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def retry_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's ``summary.model``: every number of the trials' objects across them (the
    mean failure rate per attempt, over the trials that reached that attempt)."""
    out, models = summarize(trials, "retry", ())
    if models:
        out.pop("pooled", None)
        out["statement"] = retry_statement(
            out, f", mean{over_trials(models)}" if len(models) > 1 else ""
        )
    return out
