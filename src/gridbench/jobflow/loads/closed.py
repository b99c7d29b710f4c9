"""What the closed-loop load models (METHODS 1.6-1.8: sustain, batch, probe) share in
analysis: the per-job table of a trial's events, the seed's '557±124 ms (α=0.05)'
statements, per-job statistics pooled over trials, and the point summary's frame.

Each closed model's own results are computed in its module under
:mod:`gridbench.jobflow.loads` (its docstring says what they are): the trial's ``model``
object in metrics.json (``kind`` names the model) and the point's ``summary.model``
(repetition statistics of every number of the trial objects, plus per-job statistics
pooled over the trials). All times are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gridbench.jobflow.events.model import (
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.lazy import lazy_module
from gridbench.stats import Stats, rep, t_halfwidth

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    from numpy.typing import NDArray

    F64 = NDArray[np.float64]
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not
    np = lazy_module("numpy")  # import numpy and polars
    pl = lazy_module("polars")
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
        pl.col("t_ns").alias("t"),
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


def dur(a: str, b: str) -> pl.Expr:
    """b − a in seconds (null when either is missing)."""
    return (pl.col(b) - pl.col(a)).cast(pl.Float64) / 1e9


def seconds(df: pl.DataFrame, a: str, b: str) -> F64:
    """b − a in seconds of every row (NaN when either is missing)."""
    if df.height == 0:
        return np.empty(0, dtype=np.float64)
    return df.select(dur(a, b).fill_null(float("nan")))[:, 0].to_numpy().astype(np.float64)


def count(df: pl.DataFrame, expr: pl.Expr) -> int:
    """Rows where ``expr`` holds (null: no)."""
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


def summarize(
    trials: Sequence[Mapping[str, Any]], kind: str, pooled_names: Sequence[str]
) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """The frame of a point's ``summary.model`` and the trial models it uses.

    ``{kind, trials, [operation], <rep of every number of the trial models>, pooled:
    {<stats name>: pooled stats}}``; with no trial model, ``{kind, trials: 0, statement:
    'no valid trial'}``. The model adds what is its own, then its ``statement``.
    """
    models = [t["model"] for t in trials if isinstance(t.get("model"), Mapping)]
    out: dict[str, Any] = {"kind": kind, "trials": len(models)}
    if not models:
        out["statement"] = "no valid trial"
        return out, models
    ops = [m.get("operation") for m in models if m.get("operation")]
    if ops:
        out["operation"] = ops[0]
    out.update(_rep_tree(models))
    out["pooled"] = {name: pooled([m.get(name) for m in models]) for name in pooled_names}
    return out, models


def over_trials(models: Sequence[Mapping[str, Any]]) -> str:
    """' over 3 trials' (nothing for one trial)."""
    return f" over {len(models)} trials" if len(models) > 1 else ""
