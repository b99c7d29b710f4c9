"""The terminal summary of an experiment, drawn with rich.

Every string that comes from metrics (names, reasons, backend messages) goes into a
``rich.text.Text`` rather than a markup string, so '[red]' in a job's output stays text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gridbench.report.fmt import fmt_count_pm, fmt_pct, fmt_pm, fmt_rate, fmt_s, fmt_val
from gridbench.report.model import check_metrics, points, rate_label, throughput_stages
from gridbench.report.summary import Headline, headline
from gridbench.report.tables import (
    batch_rows,
    failure_rows,
    growth_statements,
    latency_rows,
    model_statements,
    probe_burst_rows,
    probe_rows,
    sustain_rows,
    threshold_rows,
    throughput_rows,
    user_rows,
    validity_rows,
)


def _headline_panel(hl: Headline, extra: list[tuple[str, str]] | None = None) -> Panel:
    lines = Text()
    if not hl.rate_based:
        lines.append("Load model: ", style="bold")
        lines.append(f"{hl.load_model} (closed loop: no offered rate, so no knee or bottleneck)")
        for label, sentence in extra or []:
            lines.append(f"\n{label}: ", style="bold")
            lines.append(sentence)
        extra = []
    lines.append("Bottleneck: " if hl.rate_based else "", style="bold")
    if not hl.rate_based:
        pass
    elif hl.bottleneck_stage:
        lines.append(hl.bottleneck_stage, style="bold red")
        if hl.bottleneck_label and hl.bottleneck_label != hl.bottleneck_stage:
            lines.append(f" ({hl.bottleneck_label})")
        if hl.bottleneck_from_rate is not None:
            lines.append(f" from {fmt_rate(hl.bottleneck_from_rate)}")
    else:
        lines.append("none found", style="green")
    if hl.rate_based:
        lines.append("\n")
        lines.append("Knee: ", style="bold")
        lines.append(hl.knee_statement)
        lines.append("\n")
        lines.append("Highest sustained rate: ", style="bold")
        lines.append(fmt_rate(hl.highest_sustained_rate))
        lines.append(f"; {hl.capacity_text()}")
    if hl.rate_based and hl.bottleneck_evidence:
        lines.append("\nEvidence: ", style="bold")
        lines.append(hl.bottleneck_evidence)
    for label, sentence in extra or []:
        lines.append(f"\n{label}: ", style="bold")
        lines.append(sentence)
    lines.append("\n")
    lines.append("Validity: ", style="bold")
    if hl.invalid_trials:
        lines.append(
            f"{len(hl.invalid_trials)} invalid trial(s): {', '.join(hl.invalid_trials)}",
            style="red",
        )
    else:
        lines.append("all trials valid", style="green")
    lines.append("   ")
    lines.append(hl.thresholds_text(), style="red" if hl.thresholds_failed else "green")
    return Panel(lines, title=Text(hl.experiment, style="bold"), title_align="left")


def latency_table(metrics: Mapping[str, Any]) -> Table:
    """Table 6: per rate, per component avg/min/max/std (s) across trial means."""
    t = Table(
        title="Latency per component (s) — mean of trial means; min/max/std across trials",
        box=box.SIMPLE_HEAVY,
    )
    for col in ("Rate", "Component", "Avg", "Min", "Max", "Std", "CI95 ±", "Share"):
        t.add_column(col, justify="left" if col in ("Rate", "Component") else "right")
    rows = latency_rows(metrics)
    by_point: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_point.setdefault(r["point_index"], []).append(r)
    pts = {p.get("index"): p for p in points(metrics)}
    for i, (idx, rs) in enumerate(by_point.items()):
        for j, r in enumerate(rs):
            overall = r["component"] == "overall"
            t.add_row(
                Text(rate_label(pts[idx])) if j == 0 else Text(""),
                Text(str(r["component"]), style="bold" if overall else ""),
                fmt_s(r["avg_s"]),
                fmt_s(r["min_s"]),
                fmt_s(r["max_s"]),
                fmt_s(r["std_s"]),
                fmt_s(r["ci95_s"]),
                fmt_pct(r["share_pct"]),
                end_section=j == len(rs) - 1 and i < len(by_point) - 1,
            )
    return t


def throughput_table(metrics: Mapping[str, Any]) -> Table:
    """Throughput against offered rate: one row per stage, one column per rate, each cell
    'mean ± std (actual/expected %)'; the point's bottleneck in red."""
    stages = throughput_stages(metrics)
    pts = points(metrics)
    t = Table(
        title="Throughput (jobs/s, mean ± std across trials; actual/expected in %)",
        box=box.SIMPLE_HEAVY,
    )
    t.add_column("Stage")
    for p in pts:
        t.add_column(Text(rate_label(p).replace(" (", "\n(")), justify="right", no_wrap=True)
    rows = throughput_rows(metrics)
    cell = {(r["point_index"], r["stage"]): r for r in rows}
    for i, s in enumerate(stages, start=1):
        cells: list[Text] = [Text(f"TR{i} {s}")]
        end = i < len(stages)
        for p in pts:
            r = cell.get((p.get("index"), s))
            if r is None or r["mean_per_s"] is None:
                cells.append(Text("–"))
                continue
            ratio = r["ratio_mean"]
            style = "bold red" if r["bottleneck"] else ("yellow" if ratio and ratio < 0.9 else "")
            pct = "" if ratio is None else f"\n{100.0 * ratio:.0f}%"
            cells.append(Text(f"{fmt_pm(r['mean_per_s'], r['std_per_s'])}{pct}", style=style))
        t.add_row(*cells, end_section=end)
    return t


def failures_table(metrics: Mapping[str, Any]) -> Table | None:
    """Failures per rate by kind (mean per trial, total); None when nothing failed."""
    rows = failure_rows(metrics)
    if not rows or not any(r["total"] for r in rows):
        return None
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    t = Table(title="Failures per trial (mean ± std; total over all trials)", box=box.SIMPLE_HEAVY)
    t.add_column("Offered")
    for k in kinds:
        t.add_column(Text(k), justify="right")
    for p in points(metrics):
        mine = {r["kind"]: r for r in rows if r["point_index"] == p.get("index")}
        cells = [Text(rate_label(p))]
        for k in kinds:
            r = mine[k]
            cells.append(Text(f"{fmt_count_pm(r['mean'], r['std'])} ({r['total']})"))
        t.add_row(*cells)
    return t


def thresholds_table(metrics: Mapping[str, Any]) -> Table | None:
    """Thresholds with PASS/FAIL; None when the spec set none."""
    rows = threshold_rows(metrics)
    if not rows:
        return None
    t = Table(title="Thresholds", box=box.SIMPLE_HEAVY)
    for col in ("Result", "Metric", "Limit", "Actual", "Where"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            Text("PASS", style="bold green") if r["passed"] else Text("FAIL", style="bold red"),
            Text(r["metric"]),
            Text(f"{r['op']} {fmt_val(r['value'])}"),
            Text(fmt_val(r["actual"]) if r["actual"] is not None else "not measured"),
            Text(r["where"]),
        )
    return t


def _closed_lines(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Headline lines of the closed models (per point) and of the growth fits."""
    out = [(f"Result {label}", st) for label, st in model_statements(metrics)]
    out.extend(("Growth", st) for st in growth_statements(metrics))
    return out


def _row_label(r: Mapping[str, Any]) -> Text:
    if r["level"] == "point":
        return Text(f"{r['point'] or 'point'} (all trials)", style="bold")
    return Text(f"{r['trial_id']}" + ("" if r["valid"] else " (invalid)"))


def sustain_table(metrics: Mapping[str, Any]) -> Table | None:
    """The MAPPER response-time table: submit and query times, job and exception counts."""
    rows = sustain_rows(metrics)
    if not rows:
        return None
    t = Table(title="Sustain: submit and query times (s), job counts", box=box.SIMPLE_HEAVY)
    cols = ("Trial", "Point", "Submit avg", "min", "max", "Query avg", "min", "max")
    for col in (*cols, "Done", "Canceled", "Failed", "Exceptions"):
        t.add_column(col, justify="left" if col in ("Trial", "Point") else "right")
    for r in rows:
        t.add_row(
            _row_label(r),
            Text(str(r["point"])),
            *(fmt_s(r[f"submit_{k}_s"]) for k in ("avg", "min", "max")),
            *(fmt_s(r[f"query_{k}_s"]) for k in ("avg", "min", "max")),
            *(fmt_val(r[c]) for c in ("done", "canceled", "failed", "exceptions")),
        )
    return t


def users_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per user and trial: jobs, completed, failed and overall latency (spec ``users``)."""
    rows = user_rows(metrics)
    if not rows:
        return None
    t = Table(title="Per user: jobs and overall latency (s)", box=box.SIMPLE_HEAVY)
    cols = ("Trial", "Point", "User", "Jobs", "Done", "Failed", "Mean", "p50", "p90", "Max")
    for col in cols:
        t.add_column(col, justify="left" if col in ("Trial", "Point", "User") else "right")
    for r in rows:
        t.add_row(
            Text(str(r["trial_id"])),
            Text(str(r["point"])),
            Text(r["user"]),
            *(fmt_val(r[c]) for c in ("jobs", "completed", "failed")),
            *(fmt_s(r[f"overall_{k}_s"]) for k in ("mean", "p50", "p90", "max")),
        )
    return t


def batch_table(metrics: Mapping[str, Any]) -> Table | None:
    """The MAPPER throughput table: N, makespan and N ÷ makespan."""
    rows = batch_rows(metrics)
    if not rows:
        return None
    t = Table(
        title="Batch: throughput = jobs ended ÷ (last end − first submit)", box=box.SIMPLE_HEAVY
    )
    for col in ("Trial", "Point", "Ended", "Failed", "Makespan (s)", "Jobs/s", "Submit rate/s"):
        t.add_column(col, justify="left" if col in ("Trial", "Point") else "right")
    for r in rows:
        tp = r["throughput_per_s"]
        t.add_row(
            _row_label(r),
            Text(str(r["point"])),
            fmt_val(r["ended"]),
            fmt_val(r["failed"]),
            fmt_s(r["makespan_s"]),
            fmt_pm(tp, r["throughput_ci95_per_s"]) if r["level"] == "point" else fmt_val(tp),
            fmt_val(r["submit_rate_per_s"]),
        )
    return t


def probe_table(metrics: Mapping[str, Any]) -> Table | None:
    """Single-operation overhead in the seed's form, and the bursts."""
    rows = probe_rows(metrics)
    if not rows:
        return None
    t = Table(title="Probe: single operations, mean ± 95% CI half-width", box=box.SIMPLE_HEAVY)
    for col in ("Trial", "Point", "Operation", "n", "Errors", "Time", "Below the client"):
        t.add_column(col, justify="right" if col in ("n", "Errors") else "left")
    for r in rows:
        below = f"{r['below']} ({r['below_stage']})" if r["below"] else "–"
        t.add_row(
            _row_label(r),
            Text(str(r["point"])),
            Text(str(r["operation"])),
            fmt_val(r["n"]),
            fmt_val(r["errors"]),
            Text(str(r["result"]) or "–"),
            Text(below),
        )
    bursts = probe_burst_rows(metrics)
    if bursts:
        t.add_section()
        for r in bursts:
            total = r["result"] or (f"{fmt_s(r['total_s'])} s" if r["total_s"] is not None else "–")
            each = fmt_s(r["per_request_s"])
            t.add_row(
                _row_label(r),
                Text(str(r["point"])),
                Text(f"burst, {fmt_val(r['threads'])} thread(s)"),
                fmt_val(r["requests"]),
                fmt_val(r["errors"]),
                Text(f"{total} in all, {each} s per request"),
                Text("–"),
            )
    return t


def validity_warnings(metrics: Mapping[str, Any]) -> Text | None:
    """Invalid trials in red with their reasons; other trial warnings in yellow, one line
    per kind of warning listing the trials."""
    out = Text()
    grouped: dict[str, list[str]] = {}
    for r in validity_rows(metrics):
        tid = str(r["trial_id"])
        if not r["valid"]:
            out.append(f"✗ {tid} invalid: ", style="bold red")
            out.append(r["reasons"] or "no reason given", style="red")
            out.append("\n")
        if r["client_bound"]:
            grouped.setdefault("client was CPU-bound (numbers measure the client)", []).append(tid)
        if r["coarse_precision"]:
            msg = f"timestamps too coarse to resolve {r['coarse_precision']}"
            grouped.setdefault(msg, []).append(tid)
        if r["status"] not in (None, "complete"):
            grouped.setdefault(f"trial status {r['status']}", []).append(tid)
    for msg, tids in grouped.items():
        out.append(f"! {msg}: ", style="yellow")
        out.append(", ".join(tids), style="yellow")
        out.append("\n")
    out.rstrip()
    return out if out.plain else None


def render_summary(metrics: Mapping[str, Any], console: Console) -> None:
    """Print the experiment summary: headline, Table 6, throughput, failures, thresholds,
    validity warnings."""
    check_metrics(metrics)
    parts: list[Any] = [_headline_panel(headline(metrics), _closed_lines(metrics))]
    for closed in (sustain_table(metrics), batch_table(metrics), probe_table(metrics)):
        if closed is not None:
            parts.append(closed)
    parts.append(latency_table(metrics))
    parts.append(throughput_table(metrics))
    for extra in (failures_table(metrics), users_table(metrics), thresholds_table(metrics)):
        if extra is not None:
            parts.append(extra)
    warn = validity_warnings(metrics)
    if warn is not None:
        parts.append(Panel(warn, title="Validity", border_style="red", title_align="left"))
    console.print(Group(*parts))
