"""The report sections of the tables every load model shares: latency, throughput and
failures against rate, per user, thresholds, validity, outliers and queues (the full
forms; the terminal's compact forms are in :mod:`gridbench.jobflow.report.brief`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_count_pm, fmt_pct, fmt_pm, fmt_s, fmt_val
from gridbench.jobflow.report.build import Shown, col, table
from gridbench.jobflow.report.model import Row, points, rate_label
from gridbench.jobflow.report.rows import (
    TABLE6_STATS,
    failure_rows,
    latency_rows,
    outlier_rows,
    queue_rows,
    threshold_rows,
    throughput_rows,
    user_rows,
    validity_rows,
)
from gridbench.sections import RowStyle, Status, Table


def _offered(r: Row) -> str:
    return rate_label({"offered_rate_per_s": r["rate_per_s"]})


def _share(x: float | None) -> str:
    return fmt_pct(None if x is None else 100.0 * x)


def latency_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Mean latency per component and rate (mean ± std), then the seed's Table 6."""
    rows = latency_rows(metrics)
    if not rows:
        return []
    pts = points(metrics)
    comps = list(dict.fromkeys(r["component"] for r in rows))
    by = {(r["point_index"], r["component"]): r for r in rows}
    wide = table(
        "latency",
        "Latency",
        [col("offered rate"), *(col(c, True) for c in comps)],
        (
            [rate_label(p)]
            + [
                Shown(r["avg_s"], fmt_pm(r["avg_s"], r["std_s"]))
                if (r := by.get((p.get("index"), c))) is not None
                else None
                for c in comps
            ]
            for p in pts
        ),
        note="Mean latency per component (s), mean ± std across trials.",
        scope="full",
    )
    labels = {p.get("index"): rate_label(p) for p in pts}
    body: list[list[Any]] = []
    styles: list[RowStyle | None] = []
    last = object()
    for r in rows:
        if r["point_index"] != last:
            last = r["point_index"]
            body.append([labels[last], *([None] * 7)])
            styles.append("group")
        body.append(
            [
                r["component"],
                r["label"],
                *(Shown(r[f"{s}_s"], fmt_s(r[f"{s}_s"])) for s in TABLE6_STATS),
                Shown(r["share_pct"], fmt_pct(r["share_pct"])),
            ]
        )
        styles.append("total" if r["component"] == "overall" else None)
    stats = ("avg (s)", "min (s)", "max (s)", "std (s)", "CI95 ± (s)", "share")
    table6 = table(
        "latency-components",
        "Latency per component and rate",
        [col("component"), col("from → to"), *(col(s, True) for s in stats)],
        ([Shown(None, "") if c is None else c for c in b] for b in body),
        note="Latency per component and rate: mean of the trial means, min/max/std across "
        "trials (the seed's Table 6), 95% CI of the mean.",
        styles=styles,
        scope="full",
    )
    return [wide, table6]


def throughput_table(metrics: Mapping[str, Any]) -> Table | None:
    """Throughput per stage against offered rate, the bottleneck marked."""
    rows = throughput_rows(metrics)
    if not rows:
        return None
    return table(
        "throughput",
        "Throughput against offered rate",
        [
            col("offered"),
            col("stage"),
            col("label"),
            col("jobs/s (mean ± std)", True),
            col("CI95 ±", True),
            col("actual/expected", True),
            col(""),
        ],
        (
            [
                _offered(r) if r["tr"] == "TR1" else "",
                f"{r['tr']} {r['stage']}",
                r["label"],
                Shown(r["mean_per_s"], fmt_pm(r["mean_per_s"], r["std_per_s"])),
                r["ci95_per_s"],
                Shown(r["ratio_mean"], fmt_pm(r["ratio_mean"], r["ratio_std"])),
                Shown(True, "bottleneck", "fail") if r["bottleneck"] else Shown(False, ""),
            ]
            for r in rows
        ),
        note="Average throughput per stage (EDGI definition), repetition statistics across trials.",
        styles=["group-start" if r["tr"] == "TR1" else None for r in rows],
        scope="full",
    )


def failures_table(metrics: Mapping[str, Any]) -> Table | None:
    """Failures per kind against offered rate."""
    rows = failure_rows(metrics)
    if not rows:
        return None
    return table(
        "failures",
        "Failures against offered rate",
        [
            col("offered"),
            col("kind"),
            col("per trial (mean ± std)", True),
            col("min", True),
            col("max", True),
            col("total", True),
            col("share of planned", True),
        ],
        (
            [
                _offered(r),
                r["kind"],
                Shown(r["mean"], fmt_count_pm(r["mean"], r["std"])),
                r["min"],
                r["max"],
                r["total"],
                Shown(r["share_of_planned"], _share(r["share_of_planned"])),
            ]
            for r in rows
        ),
        scope="full",
    )


def users_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per trial and user (spec ``users``): jobs, failures and overall latency."""
    rows = user_rows(metrics)
    if not rows:
        return None
    stats = ("mean", "p50", "p90", "max")
    return table(
        "users",
        "Per user: jobs and overall latency (s)",
        [
            col("trial"),
            col("point"),
            col("user"),
            *(col(c, True) for c in ("jobs", "completed", "failed")),
            col("failures"),
            *(col(f"{s} (s)", True) for s in stats),
        ],
        (
            [
                *(r[c] for c in ("trial_id", "point", "user", "jobs", "completed", "failed")),
                r["failures"],
                *(Shown(r[f"overall_{s}_s"], fmt_s(r[f"overall_{s}_s"])) for s in stats),
            ]
            for r in rows
        ),
    )


def thresholds_table(metrics: Mapping[str, Any]) -> Table:
    """The spec's thresholds with PASS/FAIL (a note in the page when it set none)."""
    rows = threshold_rows(metrics)
    if not rows:
        return table(
            "thresholds", "Thresholds", [], [], note="The spec set no thresholds.", scope="full"
        )
    return table(
        "thresholds",
        "Thresholds",
        [col("result"), col("metric"), col("limit"), col("actual", True), col("where")],
        (
            [
                Shown(r["passed"], "PASS" if r["passed"] else "FAIL", _verdict(r["passed"])),
                r["metric"],
                f"{r['op']} {fmt_val(r['value'])}",
                Shown(None, "not measured") if r["actual"] is None else r["actual"],
                r["where"],
            ]
            for r in rows
        ),
    )


def _verdict(ok: bool) -> Status:
    return "pass" if ok else "fail"


def validity_table(metrics: Mapping[str, Any]) -> Table | None:
    """One row per trial: the verdict, its reasons and the evidence behind it."""
    rows = validity_rows(metrics)
    if not rows:
        return None
    return table(
        "validity",
        "Validity per trial",
        [
            col("trial"),
            col("offered"),
            col("verdict"),
            col("reasons"),
            col("status"),
            col("completed / planned"),
            col("late", True),
            col("dropped", True),
            col("client CPU max %", True),
            col("background queue"),
            col("coarse timestamps"),
            col("bottleneck"),
        ],
        (
            [
                r["trial_id"],
                _offered(r),
                Shown(r["valid"], "valid" if r["valid"] else "INVALID", _verdict(r["valid"])),
                r["reasons"] or "–",
                r["status"],
                f"{fmt_val(r['completed'])} / {fmt_val(r['planned'])}",
                Shown(r["late_share"], _share(r["late_share"])),
                Shown(r["dropped_share"], _share(r["dropped_share"])),
                r["client_cpu_max"],
                f"{fmt_val(r['background_queue_start'])} → {fmt_val(r['background_queue_end'])}",
                r["coarse_precision"] or "–",
                r["bottleneck"] or "–",
            ]
            for r in rows
        ),
        row_status=[None if r["valid"] else "fail" for r in rows],
        scope="full",
    )


def outliers_table(metrics: Mapping[str, Any]) -> Table | None:
    """Outlying trials per point, kept or dropped, and why."""
    rows = outlier_rows(metrics)
    if not rows:
        return None
    return table(
        "outliers",
        "Outliers",
        [
            col("offered"),
            col("trial"),
            col("metric"),
            col("value", True),
            col("kept"),
            col("reason"),
        ],
        (
            [
                _offered(r),
                r["trial_id"],
                r["metric"],
                r["value"],
                Shown(r["kept"], "kept" if r["kept"] else "dropped", _verdict(r["kept"])),
                r["reason"],
            ]
            for r in rows
        ),
        scope="full",
    )


def queues_table(metrics: Mapping[str, Any]) -> Table | None:
    """Jobs waiting per segment and trial (folded away: a detail)."""
    rows = queue_rows(metrics)
    if not rows:
        return None
    return table(
        "queues",
        "Jobs waiting per segment, per trial",
        [
            col("trial"),
            col("segment"),
            col("max", True),
            col("final", True),
            col("growth during submission (jobs/s)", True),
        ],
        ([r["trial_id"], r["segment"], r["max"], r["final"], r["growth_per_s"]] for r in rows),
        scope="full",
        collapsed=True,
    )
