"""The terminal's compact forms of the tables the page shows at length: Table 6 with the
rate beside its first component, throughput and failures pivoted to one row per stage or
rate, and the validity warnings grouped by kind (sections of scope ``brief``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_count_pm, fmt_pct, fmt_pm, fmt_s
from gridbench.jobflow.report.build import col, table
from gridbench.jobflow.report.model import points, rate_label, throughput_stages
from gridbench.jobflow.report.rows import (
    TABLE6_STATS,
    failure_rows,
    latency_rows,
    throughput_rows,
    validity_rows,
)
from gridbench.sections import Column, RowStyle, Shown, Statements, Status, Table


def latency_brief(metrics: Mapping[str, Any]) -> Table | None:
    """Table 6: per rate, per component avg/min/max/std (s) across trial means."""
    rows = latency_rows(metrics)
    if not rows:
        return None
    labels = {p.get("index"): rate_label(p) for p in points(metrics)}
    body: list[list[Any]] = []
    styles: list[RowStyle | None] = []
    last = object()
    for r in rows:
        first = r["point_index"] != last
        if first:
            styles.append("group-start" if body else None)
            last = r["point_index"]
        else:
            styles.append("total" if r["component"] == "overall" else None)
        body.append(
            [
                labels[last] if first else "",
                r["component"],
                *(Shown(r[f"{s}_s"], fmt_s(r[f"{s}_s"])) for s in TABLE6_STATS),
                Shown(r["share_pct"], fmt_pct(r["share_pct"])),
            ]
        )
    stats = ("Avg", "Min", "Max", "Std", "CI95 ±", "Share")
    return table(
        "latency-brief",
        "Latency per component (s) — mean of trial means; min/max/std across trials",
        [col("Rate"), col("Component"), *(col(s, True) for s in stats)],
        body,
        row_style=tuple(styles),
        scope="brief",
    )


def throughput_brief(metrics: Mapping[str, Any]) -> Table | None:
    """One row per stage, one column per rate, each cell 'mean ± std' over the ratio
    actual/expected in %; the point's bottleneck failed, ratios under 90% warned."""
    stages = throughput_stages(metrics)
    rows = throughput_rows(metrics)
    if not rows or not stages:
        return None
    pts = points(metrics)
    cell = {(r["point_index"], r["stage"]): r for r in rows}
    body: list[list[Any]] = []
    for i, s in enumerate(stages, start=1):
        cells: list[Any] = [f"TR{i} {s}"]
        for p in pts:
            r = cell.get((p.get("index"), s))
            if r is None or r["mean_per_s"] is None:
                cells.append(Shown(None, "–"))
                continue
            ratio = r["ratio_mean"]
            status: Status | None = (
                "fail" if r["bottleneck"] else ("warn" if ratio and ratio < 0.9 else None)
            )
            pct = "" if ratio is None else f"\n{100.0 * ratio:.0f}%"
            text = f"{fmt_pm(r['mean_per_s'], r['std_per_s'])}{pct}"
            cells.append(Shown(r["mean_per_s"], text, status))
        body.append(cells)
    styles: list[RowStyle | None] = [None if i == 0 else "group-start" for i in range(len(body))]
    return table(
        "throughput-brief",
        "Throughput (jobs/s, mean ± std across trials; actual/expected in %)",
        [col("Stage"), *(Column(f"p{p.get('index')}", _two_lines(p), True) for p in pts)],
        body,
        row_style=tuple(styles),
        scope="brief",
    )


def _two_lines(p: Mapping[str, Any]) -> str:
    return rate_label(p).replace(" (", "\n(")


def failures_brief(metrics: Mapping[str, Any]) -> Table | None:
    """Failures per rate by kind (mean per trial, total); None when nothing failed."""
    rows = failure_rows(metrics)
    if not rows or not any(r["total"] for r in rows):
        return None
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    body: list[list[Any]] = []
    for p in points(metrics):
        mine = {r["kind"]: r for r in rows if r["point_index"] == p.get("index")}
        body.append(
            [rate_label(p)]
            + [
                Shown(
                    mine[k]["mean"],
                    f"{fmt_count_pm(mine[k]['mean'], mine[k]['std'])} ({mine[k]['total']})",
                )
                for k in kinds
            ]
        )
    return table(
        "failures-brief",
        "Failures per trial (mean ± std; total over all trials)",
        [col("Offered"), *(col(k, True) for k in kinds)],
        body,
        scope="brief",
    )


def validity_brief(metrics: Mapping[str, Any]) -> Statements | None:
    """Invalid trials with their reasons; other warnings one line per kind, listing the
    trials."""
    lines: list[tuple[Status, str]] = []
    grouped: dict[str, list[str]] = {}
    for r in validity_rows(metrics):
        tid = str(r["trial_id"])
        if not r["valid"]:
            lines.append(("fail", f"{tid} invalid: {r['reasons'] or 'no reason given'}"))
        if r["client_bound"]:
            grouped.setdefault("client was CPU-bound (numbers measure the client)", []).append(tid)
        if r["coarse_precision"]:
            msg = f"timestamps too coarse to resolve {r['coarse_precision']}"
            grouped.setdefault(msg, []).append(tid)
        if r["status"] not in (None, "complete"):
            grouped.setdefault(f"trial status {r['status']}", []).append(tid)
    lines += [("warn", f"{msg}: {', '.join(tids)}") for msg, tids in grouped.items()]
    if not lines:
        return None
    return Statements("validity-brief", "Validity", tuple(lines), scope="brief")
