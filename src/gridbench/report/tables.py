"""Pure functions: metrics.json dict -> table rows (lists of dicts) in the seed's forms.

Every table is a list of flat dicts with the same keys, so it goes straight to CSV, to a
polars DataFrame (:func:`as_frame`), to an HTML table or to a rich table. Numbers stay
unrounded floats; formatting is the renderers' job.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Literal

import polars as pl
from scipy import stats as sps

from gridbench.report.model import (
    OTHER,
    OVERALL,
    as_dict,
    as_list,
    chain_view,
    failure_kinds,
    latency_components,
    latency_keys,
    num,
    point_label,
    points,
    queue_segments,
    rate,
    rate_label,
    throughput_stages,
    trials,
)

Row = dict[str, Any]
Basis = Literal["trials", "jobs"]

#: Statistics of the seed's Table 6, in its column order, plus the CI.
TABLE6_STATS: tuple[str, ...] = ("avg", "min", "max", "std", "ci95")


def as_frame(rows: list[Row]) -> pl.DataFrame:
    """The rows as a polars DataFrame (all rows scanned for the schema)."""
    return pl.DataFrame(rows, infer_schema_length=None)


def _point_cols(p: Mapping[str, Any]) -> Row:
    r = rate(p)
    return {
        "point_index": p.get("index"),
        "point": point_label(p),
        "rate_per_s": r,
        "rate_per_min": None if r is None else r * 60.0,
    }


def _pooled(parts: list[Mapping[str, Any]]) -> Row:
    """Per-job statistics pooled from per-trial stats objects (n, mean, std, min, max)."""
    ns, means, stds, mins, maxs = [], [], [], [], []
    for s in parts:
        n, m = num(s.get("n")), num(s.get("mean"))
        if not n or m is None:
            continue
        ns.append(n)
        means.append(m)
        stds.append(num(s.get("std")) or 0.0)
        if (v := num(s.get("min"))) is not None:
            mins.append(v)
        if (v := num(s.get("max"))) is not None:
            maxs.append(v)
    total = sum(ns)
    if not total:
        return {"n": 0, "avg": None, "min": None, "max": None, "std": None, "ci95": None}
    mean = sum(n * m for n, m in zip(ns, means, strict=True)) / total
    std: float | None = None
    ci: float | None = None
    if total >= 2:
        # Sum of squares within trials plus between trial means: the exact pooled variance.
        ss = sum(
            (n - 1) * s * s + n * (m - mean) ** 2 for n, m, s in zip(ns, means, stds, strict=True)
        )
        std = math.sqrt(max(ss, 0.0) / (total - 1))
        ci = float(sps.t.ppf(0.975, total - 1)) * std / math.sqrt(total)
    return {
        "n": int(total),
        "avg": mean,
        "min": min(mins) if mins else None,
        "max": max(maxs) if maxs else None,
        "std": std,
        "ci95": ci,
    }


def _rep(rep: Mapping[str, Any]) -> Row:
    """A repetition-statistics object in Table-6 terms."""
    n = num(rep.get("n"))
    return {
        "n": None if n is None else int(n),
        "avg": num(rep.get("mean")),
        "min": num(rep.get("min")),
        "max": num(rep.get("max")),
        "std": num(rep.get("std")),
        "ci95": num(rep.get("ci95")),
    }


def latency_rows(metrics: Mapping[str, Any], basis: Basis = "trials") -> list[Row]:
    """Table 6: latency per component per rate, with avg/min/max/std/ci95 in seconds.

    ``basis="trials"`` (the seed's form) takes the repetition statistics of the trial
    means from each point's summary: avg is the mean of the trial means, min/max/std are
    across trials. ``basis="jobs"`` pools the per-job statistics of the point's valid
    trials instead (min/max of any job, pooled standard deviation). ``share_pct`` is the
    component's share of the overall mean (Figure 27).
    """
    chain = chain_view(metrics)
    comps = latency_components(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        if basis == "trials":
            lat = as_dict(as_dict(p.get("summary")).get("latency"))
            per = {c: _rep(as_dict(lat.get(c))) for c in comps}
        else:
            ts = [t for t in trials(p) if t.get("valid", True)]
            per = {
                c: _pooled([as_dict(as_dict(t.get("latency")).get(c)) for t in ts]) for c in comps
            }
        overall = per[OVERALL]["avg"]
        for c in comps:
            st = per[c]
            share = None
            if c != OVERALL and st["avg"] is not None and overall:
                share = 100.0 * st["avg"] / overall
            rows.append(
                {
                    **_point_cols(p),
                    "component": c,
                    "label": chain.segment_label(c),
                    "role": c if c in (OTHER, OVERALL) else "component",
                    "basis": basis,
                    "n": st["n"],
                    "avg_s": st["avg"],
                    "min_s": st["min"],
                    "max_s": st["max"],
                    "std_s": st["std"],
                    "ci95_s": st["ci95"],
                    "share_pct": share,
                }
            )
    return rows


def latency_wide_rows(metrics: Mapping[str, Any], basis: Basis = "trials") -> list[Row]:
    """Table 6 pivoted: one row per (rate, statistic), one column per component (seconds)."""
    long = latency_rows(metrics, basis)
    comps = latency_components(metrics)
    out: list[Row] = []
    for p in points(metrics):
        mine = {r["component"]: r for r in long if r["point_index"] == p.get("index")}
        for stat in TABLE6_STATS:
            row = {**_point_cols(p), "statistic": stat}
            for c in comps:
                row[c] = mine[c][f"{stat}_s"] if c in mine else None
            out.append(row)
    return out


_STATS_FIELDS = ("n", "mean", "min", "max", "std", "p50", "p90", "p99", "p999", "ci95")


def latency_detail_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Every trial's full latency statistics (percentiles too), one row per key."""
    keys = latency_keys(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            lat = as_dict(t.get("latency"))
            for k in keys:
                if k not in lat:
                    continue
                s = as_dict(lat[k])
                row = {
                    **_point_cols(p),
                    "trial_id": t.get("trial_id"),
                    "valid": bool(t.get("valid", True)),
                    "segment": k,
                }
                for f in _STATS_FIELDS:
                    row[f if f == "n" else f"{f}_s"] = num(s.get(f))
                rows.append(row)
    return rows


def throughput_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Throughput against offered rate per stage (Figures 22 and 23).

    mean/std/min/max/ci95 are the repetition statistics of the trials' throughput
    (jobs/s); ``ratio_*`` those of actual ÷ expected. ``tr`` numbers the stages TR1..TRn in
    chain order, as the seed's Table 4 did. ``bottleneck`` marks the point's bottleneck.
    """
    chain = chain_view(metrics)
    stages = throughput_stages(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        summ = as_dict(p.get("summary"))
        tp, ratio = as_dict(summ.get("throughput")), as_dict(summ.get("expected_ratio"))
        for i, s in enumerate(stages, start=1):
            t, q = _rep(as_dict(tp.get(s))), _rep(as_dict(ratio.get(s)))
            rows.append(
                {
                    **_point_cols(p),
                    "stage": s,
                    "tr": f"TR{i}",
                    "label": chain.stage_label(s),
                    "expected_per_s": rate(p),
                    "n": t["n"],
                    "mean_per_s": t["avg"],
                    "std_per_s": t["std"],
                    "min_per_s": t["min"],
                    "max_per_s": t["max"],
                    "ci95_per_s": t["ci95"],
                    "ratio_mean": q["avg"],
                    "ratio_std": q["std"],
                    "ratio_ci95": q["ci95"],
                    "bottleneck": p.get("bottleneck") == s,
                }
            )
    return rows


def throughput_trial_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Every trial's throughput per stage (EDGI average, steady slope and both ratios)."""
    stages = throughput_stages(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            tp = as_dict(t.get("throughput"))
            for s in stages:
                if s not in tp:
                    continue
                d = as_dict(tp[s])
                rows.append(
                    {
                        **_point_cols(p),
                        "trial_id": t.get("trial_id"),
                        "valid": bool(t.get("valid", True)),
                        "stage": s,
                        "average_per_s": num(d.get("average")),
                        "steady_per_s": num(d.get("steady")),
                        "expected_ratio": num(d.get("expected_ratio")),
                        "edgi_ratio": num(d.get("edgi_ratio")),
                        "count": num(d.get("count")),
                    }
                )
    return rows


def failure_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Failures against rate by kind (Figure 25).

    mean/std/min/max are per trial (repetition statistics from the summary); ``total``
    sums every trial of the point, valid or not, and ``share_of_planned`` divides it by
    the planned jobs of those trials.
    """
    kinds = failure_kinds(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        summ = as_dict(as_dict(p.get("summary")).get("failures"))
        ts = trials(p)
        planned = sum(num(as_dict(t.get("jobs")).get("planned")) or 0.0 for t in ts)
        for k in kinds:
            total = sum(num(as_dict(t.get("failures")).get(k)) or 0.0 for t in ts)
            if k in summ:
                st = _rep(as_dict(summ[k]))
            elif ts and not total:
                # A kind no trial of this point saw happened zero times in each of them.
                n_valid = sum(1 for t in ts if t.get("valid", True))
                st = {"n": n_valid, "avg": 0.0, "min": 0.0, "max": 0.0, "std": 0.0}
            else:
                st = _rep({})
            rows.append(
                {
                    **_point_cols(p),
                    "kind": k,
                    "mean": st["avg"],
                    "std": st["std"],
                    "min": st["min"],
                    "max": st["max"],
                    "total": int(total),
                    "share_of_planned": (total / planned) if planned else None,
                }
            )
    return rows


def queue_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Jobs waiting in each segment per trial: maximum, final and growth during submission."""
    segs = queue_segments(metrics)
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            qs = as_dict(t.get("queues"))
            for s in segs:
                if s not in qs:
                    continue
                d = as_dict(qs[s])
                rows.append(
                    {
                        **_point_cols(p),
                        "trial_id": t.get("trial_id"),
                        "segment": s,
                        "max": num(d.get("max")),
                        "final": num(d.get("final")),
                        "growth_per_s": num(d.get("growth_per_s")),
                    }
                )
    return rows


def threshold_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The spec's thresholds with the measured value and pass/fail."""
    rows: list[Row] = []
    for th in as_list(metrics.get("thresholds")):
        d = as_dict(th)
        rows.append(
            {
                "metric": str(d.get("metric", "")),
                "op": str(d.get("op", "")),
                "value": num(d.get("value")),
                "actual": num(d.get("actual")),
                "passed": bool(d.get("passed", False)),
                "where": str(d.get("where") or ""),
            }
        )
    return rows


def validity_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial: the validity verdict, its reasons and the evidence behind it."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            v = as_dict(t.get("validity"))
            jobs = as_dict(t.get("jobs"))
            bq = as_dict(t.get("background_queue"))
            reasons = [str(r) for r in as_list(v.get("reasons"))]
            coarse = [str(c) for c in as_list(v.get("coarse_precision"))]
            rows.append(
                {
                    **_point_cols(p),
                    "trial_id": t.get("trial_id"),
                    "status": t.get("status"),
                    "valid": bool(t.get("valid", v.get("valid", True))),
                    "reasons": "; ".join(reasons),
                    "planned": num(jobs.get("planned")),
                    "submitted": num(jobs.get("submitted")),
                    "completed": num(jobs.get("completed")),
                    "failed": num(jobs.get("failed")),
                    "dropped": num(jobs.get("dropped")),
                    "late": num(jobs.get("late")),
                    "late_share": num(v.get("late_share")),
                    "dropped_share": num(v.get("dropped_share")),
                    "client_cpu_max": num(v.get("client_cpu_max")),
                    "client_cpu_mean": num(v.get("client_cpu_mean")),
                    "client_bound": bool(v.get("client_bound", False)),
                    "coarse_precision": "; ".join(coarse),
                    "background_queue_start": num(bq.get("start")),
                    "background_queue_end": num(bq.get("end")),
                    "bottleneck": t.get("bottleneck"),
                }
            )
    return rows


def outlier_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Outlying trials per point, with the reason each was kept or dropped."""
    rows: list[Row] = []
    for p in points(metrics):
        for o in as_list(as_dict(p.get("summary")).get("outliers")):
            d = as_dict(o)
            rows.append(
                {
                    **_point_cols(p),
                    "trial_id": d.get("trial_id"),
                    "metric": str(d.get("metric", "")),
                    "value": num(d.get("value")),
                    "reason": str(d.get("reason", "")),
                    "kept": bool(d.get("kept", False)),
                }
            )
    return rows


def _job_total(ts: list[Row], key: str) -> int:
    return int(sum(num(as_dict(t.get("jobs")).get(key)) or 0.0 for t in ts))


def point_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per point: rate, trial counts, bottleneck and job totals."""
    rows: list[Row] = []
    for p in points(metrics):
        summ = as_dict(p.get("summary"))
        ts = trials(p)
        rows.append(
            {
                **_point_cols(p),
                "rate": rate_label(p),
                "parameters": json.dumps(as_dict(p.get("point")), sort_keys=True),
                "trials": len(ts),
                "valid_trials": num(summ.get("valid_trials")),
                "invalid_trials": num(summ.get("invalid_trials")),
                "bottleneck": p.get("bottleneck"),
                "planned": _job_total(ts, "planned"),
                "submitted": _job_total(ts, "submitted"),
                "completed": _job_total(ts, "completed"),
                "failed": _job_total(ts, "failed"),
            }
        )
    return rows


# --- closed load models (metrics ``model`` objects; METHODS 1.6-1.8) ---------------------


def _model(obj: Mapping[str, Any], kind: str) -> Row:
    """The trial's (or summary's) ``model`` object when it is of ``kind``, else {}."""
    m = as_dict(obj.get("model"))
    return m if m.get("kind") == kind else {}


def _stat_cols(prefix: str, st: Mapping[str, Any]) -> Row:
    return {
        f"n_{prefix}": num(st.get("n")),
        f"{prefix}_avg_s": num(st.get("mean")),
        f"{prefix}_min_s": num(st.get("min")),
        f"{prefix}_max_s": num(st.get("max")),
        f"{prefix}_ci95_s": num(st.get("ci95")),
    }


_SUSTAIN_COUNTS = (
    "done",
    "canceled",
    "failed",
    "lost",
    "exceptions",
    "submit_exceptions",
    "query_exceptions",
)


def sustain_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The MAPPER response-time table: per trial (and per point, pooled over its valid
    trials, when it has several) the avg/min/max submit and query times and the Done,
    Canceled, Failed and exception counts."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = [(t, _model(t, "sustain")) for t in trials(p)]
        ts = [(t, m) for t, m in ts if m]
        for t, m in ts:
            counts = as_dict(m.get("counts"))
            rows.append(
                {
                    **_point_cols(p),
                    "level": "trial",
                    "trial_id": t.get("trial_id"),
                    "valid": bool(t.get("valid", True)),
                    "users": num(m.get("users")),
                    **_stat_cols("submit", as_dict(m.get("submit"))),
                    **_stat_cols("query", as_dict(m.get("query"))),
                    **{c: num(counts.get(c)) for c in _SUSTAIN_COUNTS},
                }
            )
        summ = _model(as_dict(p.get("summary")), "sustain")
        if len(ts) > 1 and summ:
            pool = as_dict(summ.get("pooled"))
            valid = [m for t, m in ts if t.get("valid", True)]
            rows.append(
                {
                    **_point_cols(p),
                    "level": "point",
                    "trial_id": None,
                    "valid": bool(valid),
                    "users": num(as_dict(summ.get("users")).get("mean")),
                    **_stat_cols("submit", as_dict(pool.get("submit"))),
                    **_stat_cols("query", as_dict(pool.get("query"))),
                    **{
                        c: sum(num(as_dict(m.get("counts")).get(c)) or 0.0 for m in valid)
                        for c in _SUSTAIN_COUNTS
                    },
                }
            )
    return rows


def sustain_user_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial and virtual user: submit time (mean, max), query time and job counts."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            for user, d in as_dict(_model(t, "sustain").get("per_user")).items():
                u = as_dict(d)
                rows.append(
                    {
                        **_point_cols(p),
                        "trial_id": t.get("trial_id"),
                        "user": str(user),
                        "submitted": num(u.get("submitted")),
                        "submit_mean_s": num(u.get("submit_mean")),
                        "submit_max_s": num(u.get("submit_max")),
                        "queries": num(u.get("queries")),
                        "query_mean_s": num(u.get("query_mean")),
                        "done": num(u.get("done")),
                        "canceled": num(u.get("canceled")),
                        "failed": num(u.get("failed")),
                        "exceptions": num(u.get("exceptions")),
                    }
                )
    return rows


def user_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Per trial and user (spec ``users``): job counts, failures and overall latency."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            for user, d in as_dict(t.get("by_user")).items():
                u = as_dict(d)
                overall = as_dict(u.get("overall"))
                kinds = as_dict(u.get("failures"))
                rows.append(
                    {
                        **_point_cols(p),
                        "trial_id": t.get("trial_id"),
                        "user": str(user),
                        "jobs": num(u.get("jobs")),
                        "completed": num(u.get("completed")),
                        "failed": num(u.get("failed")),
                        "failures": ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())),
                        "overall_mean_s": num(overall.get("mean")),
                        "overall_p50_s": num(overall.get("p50")),
                        "overall_p90_s": num(overall.get("p90")),
                        "overall_max_s": num(overall.get("max")),
                        "submit_call_mean_s": num(as_dict(u.get("submit_call")).get("mean")),
                    }
                )
    return rows


_BATCH_COUNTS = ("submitted", "acknowledged", "ended", "completed", "failed")


def batch_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The MAPPER throughput table: per trial N (jobs ended), makespan (last end − first
    submit), throughput N ÷ makespan and the submission rate; per point (several trials)
    the mean throughput with its std and 95% CI across the valid trials."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = [(t, _model(t, "batch")) for t in trials(p)]
        ts = [(t, m) for t, m in ts if m]
        for t, m in ts:
            rows.append(
                {
                    **_point_cols(p),
                    "level": "trial",
                    "trial_id": t.get("trial_id"),
                    "valid": bool(t.get("valid", True)),
                    "end_stage": str(m.get("end_stage") or ""),
                    **{c: num(m.get(c)) for c in _BATCH_COUNTS},
                    "makespan_s": num(m.get("makespan_s")),
                    "throughput_per_s": num(m.get("throughput_per_s")),
                    "throughput_std_per_s": None,
                    "throughput_ci95_per_s": None,
                    "submit_rate_per_s": num(m.get("submit_rate_per_s")),
                    "submit_avg_s": num(as_dict(m.get("submit")).get("mean")),
                }
            )
        summ = _model(as_dict(p.get("summary")), "batch")
        if len(ts) > 1 and summ:
            valid = [m for t, m in ts if t.get("valid", True)]
            tp = as_dict(summ.get("throughput_per_s"))
            rows.append(
                {
                    **_point_cols(p),
                    "level": "point",
                    "trial_id": None,
                    "valid": bool(valid),
                    "end_stage": str(valid[0].get("end_stage") or "") if valid else "",
                    **{c: sum(num(m.get(c)) or 0.0 for m in valid) for c in _BATCH_COUNTS},
                    "makespan_s": num(as_dict(summ.get("makespan_s")).get("mean")),
                    "throughput_per_s": num(tp.get("mean")),
                    "throughput_std_per_s": num(tp.get("std")),
                    "throughput_ci95_per_s": num(tp.get("ci95")),
                    "submit_rate_per_s": num(as_dict(summ.get("submit_rate_per_s")).get("mean")),
                    "submit_avg_s": num(
                        as_dict(as_dict(summ.get("pooled")).get("submit")).get("mean")
                    ),
                }
            )
    return rows


def _probe_cols(single: Mapping[str, Any], below: Mapping[str, Any]) -> Row:
    return {
        "n": num(single.get("n")),
        "errors": num(single.get("errors")),
        "mean_s": num(single.get("mean")),
        "std_s": num(single.get("std")),
        "min_s": num(single.get("min")),
        "max_s": num(single.get("max")),
        "ci95_s": num(single.get("ci95")),
        "result": str(single.get("statement") or ""),
        "below_stage": str(below.get("stage") or ""),
        "below_n": num(below.get("n")),
        "below_mean_s": num(below.get("mean")),
        "below_ci95_s": num(below.get("ci95")),
        "below": str(below.get("statement") or ""),
    }


def probe_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Single-operation overhead: per trial (and per point, pooled over its valid trials,
    when it has several) n, mean and 95% CI in the seed's form '557±124 ms (α=0.05)', and
    the part spent below the client ('234±43 ms of the 557')."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = [(t, _model(t, "probe")) for t in trials(p)]
        ts = [(t, m) for t, m in ts if m]
        for t, m in ts:
            rows.append(
                {
                    **_point_cols(p),
                    "level": "trial",
                    "trial_id": t.get("trial_id"),
                    "valid": bool(t.get("valid", True)),
                    "operation": str(m.get("operation") or ""),
                    **_probe_cols(as_dict(m.get("single")), as_dict(m.get("below"))),
                }
            )
        summ = _model(as_dict(p.get("summary")), "probe")
        if len(ts) > 1 and summ:
            pool = as_dict(summ.get("pooled"))
            single = dict(as_dict(pool.get("single")))
            single["errors"] = sum(
                num(as_dict(m.get("single")).get("errors")) or 0.0
                for t, m in ts
                if t.get("valid", True)
            )
            rows.append(
                {
                    **_point_cols(p),
                    "level": "point",
                    "trial_id": None,
                    "valid": any(t.get("valid", True) for t, _ in ts),
                    "operation": str(summ.get("operation") or ""),
                    **_probe_cols(single, as_dict(pool.get("below"))),
                }
            )
    return rows


def probe_burst_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Bursts per trial: thread count, requests, total time, time per request (total ÷
    requests) and the mean of the individual requests; per point the mean burst time with
    its 95% CI across trials ('47±10 s (α=0.05)')."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            for key, b in as_dict(_model(t, "probe").get("bursts")).items():
                d = as_dict(b)
                rows.append(
                    {
                        **_point_cols(p),
                        "level": "trial",
                        "trial_id": t.get("trial_id"),
                        "valid": bool(t.get("valid", True)),
                        "burst": str(key),
                        "threads": num(d.get("threads")),
                        "requests": num(d.get("requests")),
                        "total_s": num(d.get("total_s")),
                        "total_ci95_s": None,
                        "per_request_s": num(d.get("per_request_s")),
                        "request_mean_s": num(as_dict(d.get("request")).get("mean")),
                        "errors": num(d.get("errors")),
                        "result": "",
                    }
                )
        summ = _model(as_dict(p.get("summary")), "probe")
        if summ.get("trials", 0) and len(trials(p)) > 1:
            for key, b in as_dict(summ.get("bursts")).items():
                d = as_dict(b)
                total = as_dict(d.get("total_s"))
                rows.append(
                    {
                        **_point_cols(p),
                        "level": "point",
                        "trial_id": None,
                        "valid": True,
                        "burst": str(key),
                        "threads": num(as_dict(d.get("threads")).get("mean")),
                        "requests": num(as_dict(d.get("requests")).get("mean")),
                        "total_s": num(total.get("mean")),
                        "total_ci95_s": num(total.get("ci95")),
                        "per_request_s": num(as_dict(d.get("per_request_s")).get("mean")),
                        "request_mean_s": num(
                            as_dict(as_dict(d.get("request")).get("mean")).get("mean")
                        ),
                        "errors": num(as_dict(d.get("errors")).get("mean")),
                        "result": str(d.get("statement") or ""),
                    }
                )
    return rows


def growth_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The growth curves fitted against each numeric swept parameter (METHODS 1.8)."""
    rows: list[Row] = []
    for g in as_list(metrics.get("growth")):
        d = as_dict(g)
        coef = as_dict(d.get("coefficients"))
        rows.append(
            {
                "parameter": str(d.get("parameter") or ""),
                "fixed": json.dumps(as_dict(d.get("fixed")), sort_keys=True),
                "quantity": str(d.get("quantity") or ""),
                "unit": str(d.get("unit") or ""),
                "model": str(d.get("model") or ""),
                "form": str(d.get("form") or ""),
                "a": num(coef.get("a")),
                "b": num(coef.get("b")),
                "r2": num(d.get("r2")),
                "n": num(d.get("n")),
                "statement": str(d.get("statement") or ""),
            }
        )
    return rows


def model_statements(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(point label, statement) of every point's closed-model result, for headlines."""
    out: list[tuple[str, str]] = []
    for p in points(metrics):
        st = as_dict(as_dict(p.get("summary")).get("model")).get("statement")
        if isinstance(st, str) and st:
            out.append((rate_label(p), st))
    return out


def growth_statements(metrics: Mapping[str, Any]) -> list[str]:
    """The growth-fit sentences, e.g. 'submission time grows quadratically: 0.0062·x² s'."""
    return [r["statement"] for r in growth_rows(metrics) if r["statement"]]


def all_tables(metrics: Mapping[str, Any]) -> dict[str, list[Row]]:
    """Every table of the report, by file stem."""
    return {
        "points": point_rows(metrics),
        "latency": latency_rows(metrics, "trials"),
        "latency_wide": latency_wide_rows(metrics, "trials"),
        "latency_jobs": latency_rows(metrics, "jobs"),
        "latency_detail": latency_detail_rows(metrics),
        "throughput": throughput_rows(metrics),
        "throughput_trials": throughput_trial_rows(metrics),
        "failures": failure_rows(metrics),
        "queues": queue_rows(metrics),
        "thresholds": threshold_rows(metrics),
        "validity": validity_rows(metrics),
        "outliers": outlier_rows(metrics),
        "sustain": sustain_rows(metrics),
        "sustain_users": sustain_user_rows(metrics),
        "users": user_rows(metrics),
        "batch": batch_rows(metrics),
        "probe": probe_rows(metrics),
        "probe_bursts": probe_burst_rows(metrics),
        "growth": growth_rows(metrics),
    }
