"""Pure functions: metrics.json dict -> table rows (lists of dicts) in the seed's forms.

Every table is a list of flat dicts with the same keys, so it goes straight to CSV, to a
polars DataFrame (:func:`as_frame`) or to a report section. Numbers stay unrounded floats;
the section builders write their text. The closed load models' rows live in their own
modules (sustain, batch, probe, retry, growth) and are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import polars as pl
from scipy import stats as sps

from gridbench.jobflow.report.batch import batch_rows
from gridbench.jobflow.report.clocks import clock_rows
from gridbench.jobflow.report.growth import growth_rows, growth_statements, model_statements
from gridbench.jobflow.report.model import (
    OTHER,
    OVERALL,
    Row,
    as_dict,
    chain_view,
    failure_kinds,
    latency_components,
    latency_keys,
    num,
    nums,
    point_cols,
    points,
    queue_segments,
    rate,
    throughput_stages,
    trial_entries,
    trials,
)
from gridbench.jobflow.report.probe import probe_burst_rows, probe_rows
from gridbench.jobflow.report.rates import rates_rows
from gridbench.jobflow.report.retry import retry_rows
from gridbench.jobflow.report.schedule import hour_rows, time_rows
from gridbench.jobflow.report.server import server_rows
from gridbench.jobflow.report.staging import staging_rows
from gridbench.jobflow.report.sustain import sustain_rows, sustain_user_rows
from gridbench.jobflow.report.verdicts import (
    outlier_rows,
    point_rows,
    threshold_rows,
    user_rows,
    validity_rows,
)

Basis = Literal["trials", "jobs"]

#: Statistics of the seed's Table 6, in its column order, plus the CI.
TABLE6_STATS: tuple[str, ...] = ("avg", "min", "max", "std", "ci95")


def as_frame(rows: list[Row]) -> pl.DataFrame:
    """The rows as a polars DataFrame (all rows scanned for the schema)."""
    return pl.DataFrame(rows, infer_schema_length=None)


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
                    **point_cols(p),
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
            row = {**point_cols(p), "statistic": stat}
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
                    **point_cols(p),
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
        ts = trials(p)
        for i, s in enumerate(stages, start=1):
            t, q = _rep(as_dict(tp.get(s))), _rep(as_dict(ratio.get(s)))
            failed = [
                num(as_dict(as_dict(tr.get("throughput")).get(s)).get("failures")) for tr in ts
            ]
            rows.append(
                {
                    **point_cols(p),
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
                    # jobs reported failing at the stage, every trial of the point: not
                    # passages, so not in the throughput (None: analysed before it counted)
                    "failed": int(sum(f for f in failed if f is not None))
                    if any(f is not None for f in failed)
                    else None,
                    "bottleneck": p.get("bottleneck") == s,
                }
            )
    return rows


_TRIAL_THROUGHPUT = {
    "average_per_s": "average",
    "steady_per_s": "steady",
    "expected_ratio": "expected_ratio",
    "edgi_ratio": "edgi_ratio",
    "count": "count",
    "failures": "failures",
}


def throughput_trial_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Every trial's throughput per stage (EDGI average, steady slope and both ratios)."""
    entries = trial_entries(metrics, lambda t: t.get("throughput"), throughput_stages(metrics))
    return [
        {
            **point_cols(p),
            "trial_id": t.get("trial_id"),
            "valid": bool(t.get("valid", True)),
            "stage": s,
            **nums(d, _TRIAL_THROUGHPUT),
        }
        for p, t, s, d in entries
    ]


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
                    **point_cols(p),
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
    entries = trial_entries(metrics, lambda t: t.get("queues"), queue_segments(metrics))
    return [
        {
            **point_cols(p),
            "trial_id": t.get("trial_id"),
            "segment": s,
            **nums(d, {k: k for k in ("max", "final", "growth_per_s")}),
        }
        for p, t, s, d in entries
    ]


def all_tables(metrics: Mapping[str, Any]) -> dict[str, list[Row]]:
    """Every raw table (the CSV files and report.json), by file stem."""
    return {
        "points": point_rows(metrics),
        "latency": latency_rows(metrics, "trials"),
        "latency_wide": latency_wide_rows(metrics, "trials"),
        "latency_jobs": latency_rows(metrics, "jobs"),
        "latency_detail": latency_detail_rows(metrics),
        "throughput": throughput_rows(metrics),
        "throughput_trials": throughput_trial_rows(metrics),
        "rates": rates_rows(metrics),
        "failures": failure_rows(metrics),
        "queues": queue_rows(metrics),
        "thresholds": threshold_rows(metrics),
        "validity": validity_rows(metrics),
        "agents_clocks": clock_rows(metrics),
        "outliers": outlier_rows(metrics),
        "sustain": sustain_rows(metrics),
        "sustain_users": sustain_user_rows(metrics),
        "users": user_rows(metrics),
        "batch": batch_rows(metrics),
        "probe": probe_rows(metrics),
        "probe_bursts": probe_burst_rows(metrics),
        "retry": retry_rows(metrics),
        "growth": growth_rows(metrics),
        "server_processes": server_rows(metrics),
        "staging": staging_rows(metrics),
        "time_of_day": time_rows(metrics),
        "time_of_day_hours": hour_rows(metrics),
    }


__all__ = [
    "TABLE6_STATS",
    "Basis",
    "Row",
    "all_tables",
    "as_frame",
    "batch_rows",
    "failure_rows",
    "growth_rows",
    "growth_statements",
    "latency_detail_rows",
    "latency_rows",
    "latency_wide_rows",
    "model_statements",
    "outlier_rows",
    "point_rows",
    "probe_burst_rows",
    "probe_rows",
    "queue_rows",
    "retry_rows",
    "server_rows",
    "sustain_rows",
    "sustain_user_rows",
    "threshold_rows",
    "throughput_rows",
    "throughput_trial_rows",
    "user_rows",
    "validity_rows",
]
