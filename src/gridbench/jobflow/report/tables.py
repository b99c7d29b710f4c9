"""The report sections of the tables every load model shares: latency, throughput and
failures against rate, per user, thresholds, validity, outliers and queues (the full
forms; the terminal's compact forms are in :mod:`gridbench.jobflow.report.brief`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gridbench.fmt import fmt_count_pm, fmt_pct, fmt_pm, fmt_s, fmt_val
from gridbench.jobflow.report.build import Spec, TableDef, col, spec_table, table
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
from gridbench.sections import RowStyle, Shown, Status, Table


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
        row_style=tuple(styles),
        scope="full",
    )
    return [wide, table6]


def _pm(mean: str, std: str) -> Callable[[Row], Shown]:
    """A cell: the mean under ``mean``, shown as mean ± the value under ``std``."""
    return lambda r: Shown(r[mean], fmt_pm(r[mean], r[std]))


def _flag(key: str, yes: str, no: str) -> Callable[[Row], Shown]:
    """A verdict cell: the boolean under ``key``, shown as ``yes`` (pass) or ``no`` (fail)."""
    return lambda r: Shown(r[key], yes if r[key] else no, _verdict(r[key]))


def _or_dash(key: str) -> Callable[[Row], Any]:
    return lambda r: r[key] or "–"


def _verdict(ok: bool) -> Status:
    return "pass" if ok else "fail"


_OFFERED = Spec("offered", _offered)
_TRIAL = Spec("trial", "trial_id")

_THROUGHPUT = (
    Spec("offered", lambda r: _offered(r) if r["tr"] == "TR1" else ""),
    Spec("stage", lambda r: f"{r['tr']} {r['stage']}"),
    Spec("label", "label"),
    Spec("jobs/s (mean ± std)", _pm("mean_per_s", "std_per_s"), True),
    Spec("CI95 ±", "ci95_per_s", True),
    Spec("actual/expected", _pm("ratio_mean", "ratio_std"), True),
    Spec("failed here", "failed", True),
    Spec(
        "",
        lambda r: Shown(True, "bottleneck", "fail") if r["bottleneck"] else Shown(False, ""),
    ),
)


#: Throughput per stage against offered rate, the bottleneck marked.
throughput_table = TableDef(
    "throughput",
    "Throughput against offered rate",
    throughput_rows,
    _THROUGHPUT,
    note="Average throughput per stage (EDGI definition: jobs that completed the stage), "
    "repetition statistics across trials; 'failed here' counts the jobs reported failing at "
    "the stage, over every trial of the point.",
    style=lambda r: "group-start" if r["tr"] == "TR1" else None,
    scope="full",
)


_FAILURES = (
    _OFFERED,
    Spec("kind", "kind"),
    Spec(
        "per trial (mean ± std)",
        lambda r: Shown(r["mean"], fmt_count_pm(r["mean"], r["std"])),
        True,
    ),
    Spec("min", "min", True),
    Spec("max", "max", True),
    Spec("total", "total", True),
    Spec("share of planned", "share_of_planned", True, _share),
)


#: Failures per kind against offered rate.
failures_table = TableDef(
    "failures", "Failures against offered rate", failure_rows, _FAILURES, scope="full"
)


_USERS = (
    _TRIAL,
    Spec("point", "point"),
    Spec("user", "user"),
    *(Spec(c, c, True) for c in ("jobs", "completed", "failed")),
    Spec("failures", "failures"),
    *(Spec(f"{s} (s)", f"overall_{s}_s", True, fmt_s) for s in ("mean", "p50", "p90", "max")),
)


#: Per trial and user (spec ``users``): jobs, failures and overall latency.
users_table = TableDef("users", "Per user: jobs and overall latency (s)", user_rows, _USERS)


_THRESHOLDS = (
    Spec("result", _flag("passed", "PASS", "FAIL")),
    Spec("metric", "metric"),
    Spec("limit", lambda r: f"{r['op']} {fmt_val(r['value'])}"),
    Spec(
        "actual",
        lambda r: Shown(None, "not measured") if r["actual"] is None else r["actual"],
        True,
    ),
    Spec("where", "where"),
)


def thresholds_table(metrics: Mapping[str, Any]) -> Table:
    """The spec's thresholds with PASS/FAIL (a note in the page when it set none)."""
    return spec_table("thresholds", "Thresholds", threshold_rows(metrics), _THRESHOLDS) or table(
        "thresholds", "Thresholds", [], [], note="The spec set no thresholds.", scope="full"
    )


_VALIDITY = (
    _TRIAL,
    _OFFERED,
    Spec("verdict", _flag("valid", "valid", "INVALID")),
    Spec("reasons", _or_dash("reasons")),
    Spec("status", "status"),
    Spec("completed / planned", lambda r: f"{fmt_val(r['completed'])} / {fmt_val(r['planned'])}"),
    Spec("late", "late_share", True, _share),
    Spec("dropped", "dropped_share", True, _share),
    Spec("client CPU max %", "client_cpu_max", True),
    Spec(
        "background queue",
        lambda r: f"{fmt_val(r['background_queue_start'])} → {fmt_val(r['background_queue_end'])}",
    ),
    Spec("coarse timestamps", _or_dash("coarse_precision")),
    Spec("negative segments", _or_dash("negative_segments")),
    Spec("bottleneck", _or_dash("bottleneck")),
)


#: One row per trial: the verdict, its reasons and the evidence behind it.
validity_table = TableDef(
    "validity",
    "Validity per trial",
    validity_rows,
    _VALIDITY,
    status=lambda r: None if r["valid"] else "fail",
    scope="full",
)


_OUTLIERS = (
    _OFFERED,
    _TRIAL,
    Spec("metric", "metric"),
    Spec("value", "value", True),
    Spec("kept", _flag("kept", "kept", "dropped")),
    Spec("reason", "reason"),
)


#: Outlying trials per point, kept or dropped, and why.
outliers_table = TableDef("outliers", "Outliers", outlier_rows, _OUTLIERS, scope="full")


_QUEUES = (
    _TRIAL,
    Spec("segment", "segment"),
    Spec("max", "max", True),
    Spec("final", "final", True),
    Spec("growth during submission (jobs/s)", "growth_per_s", True),
)


#: Jobs waiting per segment and trial (folded away: a detail).
queues_table = TableDef(
    "queues",
    "Jobs waiting per segment, per trial",
    queue_rows,
    _QUEUES,
    scope="full",
    collapsed=True,
)
