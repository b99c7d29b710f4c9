"""The self-contained HTML report: one file, readable offline, safe with hostile text.

plotly.js is inlined once from the installed ``plotly`` package (no CDN). Every string
from metrics, series or the spec summary is escaped with :func:`html.escape`; figures are
embedded as JSON in ``<script type="application/json">`` blocks with '<', '>' and '&'
written as \\u escapes, so no data can close the script element. A Content-Security-Policy
forbids every network fetch.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.io as pio
import plotly.offline

from gridbench import __version__
from gridbench.errors import ResultsError
from gridbench.report.charts import Chart, all_charts
from gridbench.report.fmt import fmt_count_pm, fmt_pct, fmt_pm, fmt_rate, fmt_s, fmt_val
from gridbench.report.model import check_metrics, points, rate_label
from gridbench.report.summary import (
    EvaluationSummary,
    Headline,
    downsampled_trials,
    evaluation_summary,
    headline,
)
from gridbench.report.tables import (
    TABLE6_STATS,
    batch_rows,
    failure_rows,
    growth_rows,
    latency_rows,
    model_statements,
    outlier_rows,
    probe_burst_rows,
    probe_rows,
    queue_rows,
    sustain_rows,
    threshold_rows,
    throughput_rows,
    user_rows,
    validity_rows,
)
from gridbench.store.layout import write_text_atomic

#: URL prefixes inside the plotly.js bundle that only map/geo traces (never used here)
#: would fetch; rewritten so the offline file names no CDN at all.
DORMANT_CDN_PREFIXES = ("https://cdn.plot.ly/", "https://cdn.jsdelivr.net/")

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

#: The CSV files next to the report, linked from the tables section.
CSV_NOTE = "Every table is also in tables/*.csv and, with the metrics, in report.json."


class Raw(str):
    """Already-escaped HTML (only built inside this module)."""

    __slots__ = ()


class Num(Raw):
    """An already-formatted number: right-aligned like raw numbers."""

    __slots__ = ()


def e(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape(str(value), quote=True)


def json_for_script(text: str) -> str:
    """JSON text made inert inside a <script> element: no '<', '>' or '&' characters,
    and no JS line separators."""
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


@functools.cache
def offline_plotlyjs() -> str:
    """The installed plotly.js bundle, with dormant CDN URLs neutralised."""
    js: str = plotly.offline.get_plotlyjs()
    for prefix in DORMANT_CDN_PREFIXES:
        js = js.replace(prefix, "about:invalid#offline/")
    # Cannot occur in a minified bundle today, but would end the inline script if it did.
    return js.replace("</script", "<\\/script")


# --- small HTML builders --------------------------------------------------------------


def _cell(v: Any, tag: str = "td") -> str:
    numeric = isinstance(v, Num) or (
        v is None or (isinstance(v, int | float) and not isinstance(v, bool))
    )
    attr = ' class="n"' if numeric and tag == "td" else ""
    body = v if isinstance(v, Raw) else e(fmt_val(v) if not isinstance(v, str) else v)
    return f"<{tag}{attr}>{body}</{tag}>"


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    cls: str = "",
    caption: str = "",
    row_classes: Sequence[str] | None = None,
) -> str:
    out = [f'<table class="{e(cls)}">' if cls else "<table>"]
    if caption:
        out.append(f"<caption>{e(caption)}</caption>")
    out.append("<thead><tr>" + "".join(_cell(h, "th") for h in headers) + "</tr></thead><tbody>")
    for i, r in enumerate(rows):
        rc = row_classes[i] if row_classes and i < len(row_classes) else ""
        out.append(
            (f'<tr class="{e(rc)}">' if rc else "<tr>") + "".join(_cell(c) for c in r) + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _badge(ok: bool, yes: str = "PASS", no: str = "FAIL") -> Raw:
    return Raw(f'<span class="badge {"ok" if ok else "bad"}">{e(yes if ok else no)}</span>')


# --- sections ----------------------------------------------------------------------------


def _headline_html(hl: Headline) -> str:
    verdict_ok = hl.valid and not hl.invalid_trials and not hl.thresholds_failed
    if hl.rate_based:
        items = [
            f'<p class="bottleneck"><strong>{e(hl.bottleneck_statement)}</strong></p>',
            f'<p class="knee">{e(hl.knee_statement)}</p>',
            "<p>Highest sustained rate: "
            f"<strong>{e(fmt_rate(hl.highest_sustained_rate))}</strong>; "
            f"{e(hl.capacity_text())}.</p>",
        ]
    else:
        items = [
            f"<p>Load model <strong>{e(hl.load_model)}</strong> (closed loop): no offered rate, "
            "so no knee or bottleneck ratio; see Results.</p>"
        ]
    if hl.rate_based and hl.bottleneck_evidence:
        items.append(f'<p class="evidence">Evidence: {e(hl.bottleneck_evidence)}</p>')
    if hl.invalid_trials:
        items.append(
            f'<p class="bad">{len(hl.invalid_trials)} invalid trial(s): '
            f"{e(', '.join(hl.invalid_trials))}</p>"
        )
        if hl.validity_reasons:
            items.append(
                '<ul class="bad">'
                + "".join(f"<li>{e(r)}</li>" for r in hl.validity_reasons)
                + "</ul>"
            )
    if not hl.valid:
        items.append('<p class="bad"><strong>The experiment as a whole is not valid.</strong></p>')
    items.append(
        f'<p class="{"ok" if not hl.thresholds_failed else "bad"}">{e(hl.thresholds_text())}</p>'
    )
    cls = "headline ok" if verdict_ok else "headline warn"
    return f'<section id="headline" class="{cls}">{"".join(items)}</section>'


def _closed_results_html(metrics: Mapping[str, Any]) -> str:
    """The closed-model result of every point and the growth fits, under the headline."""
    results = model_statements(metrics)
    growth = [r["statement"] for r in growth_rows(metrics) if r["statement"]]
    if not results and not growth:
        return ""
    items = [f"<li><strong>{e(label)}</strong>: {e(st)}</li>" for label, st in results]
    items += [f'<li class="growth"><strong>growth</strong>: {e(st)}</li>' for st in growth]
    return (
        '<section id="results" class="headline"><h2>Results</h2>'
        f'<ul class="results">{"".join(items)}</ul></section>'
    )


def _trial_cell(r: Mapping[str, Any]) -> Any:
    if r["level"] == "point":
        return Raw(f"<strong>{e(r['point'] or 'point')} (all trials)</strong>")
    return str(r["trial_id"]) + ("" if r["valid"] else " (invalid)")


def _sustain_html(metrics: Mapping[str, Any]) -> str:
    rows = sustain_rows(metrics)
    if not rows:
        return ""
    body = [
        [
            _trial_cell(r),
            r["point"],
            *(Num(e(fmt_s(r[f"submit_{k}_s"]))) for k in ("avg", "min", "max")),
            *(Num(e(fmt_s(r[f"query_{k}_s"]))) for k in ("avg", "min", "max")),
            *(r[c] for c in ("done", "canceled", "failed", "exceptions")),
        ]
        for r in rows
    ]
    return '<h3 id="table-sustain">Sustain: response times</h3>' + _table(
        [
            "trial",
            "point",
            "submit avg (s)",
            "submit min (s)",
            "submit max (s)",
            "query avg (s)",
            "query min (s)",
            "query max (s)",
            "Done",
            "Canceled",
            "Failed",
            "exceptions",
        ],
        body,
        caption="The MAPPER response-time table: submit_job and query_state call times, "
        "jobs by end state and exceptions (submit errors and failed queries). Point rows "
        "pool the jobs of the point's valid trials.",
        row_classes=["total" if r["level"] == "point" else "" for r in rows],
    )


def _batch_html(metrics: Mapping[str, Any]) -> str:
    rows = batch_rows(metrics)
    if not rows:
        return ""
    body = [
        [
            _trial_cell(r),
            r["point"],
            r["submitted"],
            r["ended"],
            r["failed"],
            r["end_stage"],
            Num(e(fmt_s(r["makespan_s"]))),
            Num(e(fmt_pm(r["throughput_per_s"], r["throughput_ci95_per_s"])))
            if r["level"] == "point"
            else r["throughput_per_s"],
            r["submit_rate_per_s"],
        ]
        for r in rows
    ]
    return '<h3 id="table-batch">Batch: throughput</h3>' + _table(
        [
            "trial",
            "point",
            "submitted",
            "ended (N)",
            "failed",
            "end stage",
            "makespan (s)",
            "throughput (jobs/s)",
            "submit rate (jobs/s)",
        ],
        body,
        caption="The MAPPER throughput benchmark: N ÷ (last end − first submit). Point rows "
        "give the mean ± 95% CI across the valid trials.",
        row_classes=["total" if r["level"] == "point" else "" for r in rows],
    )


def _probe_html(metrics: Mapping[str, Any]) -> str:
    rows = probe_rows(metrics)
    if not rows:
        return ""
    single = _table(
        ["trial", "point", "operation", "n", "errors", "time (α=0.05)", "below the client"],
        [
            [
                _trial_cell(r),
                r["point"],
                r["operation"],
                r["n"],
                r["errors"],
                r["result"] or "–",
                f"{r['below']} ({r['below_stage']})" if r["below"] else "–",
            ]
            for r in rows
        ],
        caption="Single operations spaced by a gap: mean ± 95% CI half-width (Student t); "
        "below the client = from the server's submit stage to the call's return.",
        row_classes=["total" if r["level"] == "point" else "" for r in rows],
    )
    bursts = probe_burst_rows(metrics)
    burst_table = ""
    if bursts:
        burst_table = _table(
            ["trial", "point", "threads", "requests", "total (s)", "per request (s)", "errors"],
            [
                [
                    _trial_cell(r),
                    r["point"],
                    r["threads"],
                    r["requests"],
                    r["result"] or Num(e(fmt_s(r["total_s"]))),
                    Num(e(fmt_s(r["per_request_s"]))),
                    r["errors"],
                ]
                for r in bursts
            ],
            caption="Bursts: the time for all requests with k client threads, and per request.",
        )
    return f'<h3 id="table-probe">Probe: single-operation overhead</h3>{single}{burst_table}'


def _growth_html(metrics: Mapping[str, Any]) -> str:
    rows = growth_rows(metrics)
    if not rows:
        return ""
    return '<h3 id="table-growth">Growth curves</h3>' + _table(
        ["parameter", "held fixed", "quantity", "model", "a", "b", "R²", "statement"],
        [
            [
                r["parameter"],
                r["fixed"],
                r["quantity"],
                r["form"],
                r["a"],
                r["b"],
                r["r2"],
                r["statement"],
            ]
            for r in rows
        ],
        caption="Least-squares fits of constant, linear, x·ln x and quadratic growth, chosen "
        "by AIC (the simplest model within 2 of the best).",
    )


def _summary_html(s: EvaluationSummary) -> str:
    tested = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in s.tested)
    configured = _table(["setting", "value"], s.configured, cls="kv") if s.configured else ""
    marks = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "info": "INFO"}
    outcome = "".join(
        f'<li><span class="badge {e(st)}">{e(marks[st])}</span> {e(text)}</li>'
        for st, text in s.outcome
    )
    left = "".join(f"<li>{e(x)}</li>" for x in s.left_open)
    return (
        '<section id="evaluation"><h2>Evaluation summary</h2>'
        "<h3>What was tested</h3>"
        f"<dl>{tested}</dl>"
        "<h3>How it was configured</h3>"
        f"{configured}"
        "<h3>What passed or failed</h3>"
        f'<ul class="outcome">{outcome}</ul>'
        "<h3>What is left open</h3>"
        f'<ul class="open">{left}</ul></section>'
    )


def _figure_json(chart: Chart) -> str:
    return json_for_script(pio.to_json(chart.figure, validate=False, pretty=False))


def _charts_html(charts: list[Chart], notes: list[str]) -> str:
    parts = ['<section id="charts"><h2>Charts</h2>']
    parts.extend(f'<p class="note">{e(n)}</p>' for n in notes)
    parts.append(
        '<noscript><p class="note">Charts need JavaScript; the tables below '
        "hold the same numbers.</p></noscript>"
    )
    for c in charts:
        cid = e(c.id)
        parts.append(
            f'<figure id="chart-{cid}" class="chart"><h3>{e(c.title)}</h3>'
            f'<div id="plot-{cid}" class="plot"></div>'
            f"<figcaption>{e(c.caption)}</figcaption>"
            f'<script type="application/json" id="fig-{cid}" data-plot="plot-{cid}">'
            f"{_figure_json(c)}</script></figure>"
        )
    parts.append("</section>")
    return "".join(parts)


def _latency_html(metrics: Mapping[str, Any]) -> str:
    rows = latency_rows(metrics)
    if not rows:
        return ""
    pts = {p.get("index"): p for p in points(metrics)}
    body: list[list[Any]] = []
    classes: list[str] = []
    last = object()
    for r in rows:
        if r["point_index"] != last:
            last = r["point_index"]
            body.append([Raw(f"<strong>{e(rate_label(pts[last]))}</strong>")] + [""] * 7)
            classes.append("group")
        body.append(
            [
                r["component"],
                r["label"],
                *(Num(e(fmt_s(r[f"{s}_s"]))) for s in TABLE6_STATS),
                Num(e(fmt_pct(r["share_pct"]))),
            ]
        )
        classes.append("total" if r["component"] == "overall" else "")
    table6 = _table(
        [
            "component",
            "from → to",
            "avg (s)",
            "min (s)",
            "max (s)",
            "std (s)",
            "CI95 ± (s)",
            "share",
        ],
        body,
        caption="Latency per component and rate: mean of the trial means, min/max/std across "
        "trials (the seed's Table 6), 95% CI of the mean.",
        row_classes=classes,
    )
    comps = list(dict.fromkeys(r["component"] for r in rows))
    by = {(r["point_index"], r["component"]): r for r in rows}
    wide = _table(
        ["offered rate", *comps],
        [
            [rate_label(p)]
            + [
                Num(e(fmt_pm(by[(p.get("index"), c)]["avg_s"], by[(p.get("index"), c)]["std_s"])))
                if (p.get("index"), c) in by
                else None
                for c in comps
            ]
            for p in points(metrics)
        ],
        caption="Mean latency per component (s), mean ± std across trials.",
    )
    return f'<h3 id="table-latency">Latency</h3>{wide}{table6}'


def _throughput_html(metrics: Mapping[str, Any]) -> str:
    rows = throughput_rows(metrics)
    if not rows:
        return ""
    body = [
        [
            rate_label({"offered_rate_per_s": r["rate_per_s"]}) if r["tr"] == "TR1" else "",
            f"{r['tr']} {r['stage']}",
            r["label"],
            Num(e(fmt_pm(r["mean_per_s"], r["std_per_s"]))),
            r["ci95_per_s"],
            Num(e(fmt_pm(r["ratio_mean"], r["ratio_std"]))),
            _badge(False, no="bottleneck") if r["bottleneck"] else "",
        ]
        for r in rows
    ]
    classes = ["group-start" if r["tr"] == "TR1" else "" for r in rows]
    return '<h3 id="table-throughput">Throughput against offered rate</h3>' + _table(
        ["offered", "stage", "label", "jobs/s (mean ± std)", "CI95 ±", "actual/expected", ""],
        body,
        caption="Average throughput per stage (EDGI definition), repetition statistics across "
        "trials.",
        row_classes=classes,
    )


def _failures_html(metrics: Mapping[str, Any]) -> str:
    rows = failure_rows(metrics)
    if not rows:
        return ""
    return '<h3 id="table-failures">Failures against offered rate</h3>' + _table(
        ["offered", "kind", "per trial (mean ± std)", "min", "max", "total", "share of planned"],
        [
            [
                rate_label({"offered_rate_per_s": r["rate_per_s"]}),
                r["kind"],
                Num(e(fmt_count_pm(r["mean"], r["std"]))),
                r["min"],
                r["max"],
                r["total"],
                Num(
                    e(
                        fmt_pct(
                            None if r["share_of_planned"] is None else 100.0 * r["share_of_planned"]
                        )
                    )
                ),
            ]
            for r in rows
        ],
    )


def _users_html(metrics: Mapping[str, Any]) -> str:
    rows = user_rows(metrics)
    if not rows:
        return ""
    return '<h3 id="table-users">Per user</h3>' + _table(
        [
            "trial",
            "point",
            "user",
            "jobs",
            "completed",
            "failed",
            "failures",
            "mean (s)",
            "p50 (s)",
            "p90 (s)",
            "max (s)",
        ],
        [
            [
                r["trial_id"],
                r["point"],
                r["user"],
                r["jobs"],
                r["completed"],
                r["failed"],
                r["failures"],
                *(Num(e(fmt_s(r[f"overall_{k}_s"]))) for k in ("mean", "p50", "p90", "max")),
            ]
            for r in rows
        ],
    )


def _thresholds_html(metrics: Mapping[str, Any]) -> str:
    rows = threshold_rows(metrics)
    if not rows:
        return '<h3 id="table-thresholds">Thresholds</h3><p>The spec set no thresholds.</p>'
    return '<h3 id="table-thresholds">Thresholds</h3>' + _table(
        ["result", "metric", "limit", "actual", "where"],
        [
            [
                _badge(r["passed"]),
                r["metric"],
                f"{r['op']} {fmt_val(r['value'])}",
                "not measured" if r["actual"] is None else r["actual"],
                r["where"],
            ]
            for r in rows
        ],
    )


def _validity_html(metrics: Mapping[str, Any]) -> str:
    rows = validity_rows(metrics)
    if not rows:
        return ""
    body = [
        [
            r["trial_id"],
            rate_label({"offered_rate_per_s": r["rate_per_s"]}),
            _badge(r["valid"], "valid", "INVALID"),
            r["reasons"] or "–",
            r["status"],
            f"{fmt_val(r['completed'])} / {fmt_val(r['planned'])}",
            Num(e(fmt_pct(None if r["late_share"] is None else 100.0 * r["late_share"]))),
            Num(e(fmt_pct(None if r["dropped_share"] is None else 100.0 * r["dropped_share"]))),
            r["client_cpu_max"],
            f"{fmt_val(r['background_queue_start'])} → {fmt_val(r['background_queue_end'])}",
            r["coarse_precision"] or "–",
            r["bottleneck"] or "–",
        ]
        for r in rows
    ]
    return '<h3 id="table-validity">Validity per trial</h3>' + _table(
        [
            "trial",
            "offered",
            "verdict",
            "reasons",
            "status",
            "completed / planned",
            "late",
            "dropped",
            "client CPU max %",
            "background queue",
            "coarse timestamps",
            "bottleneck",
        ],
        body,
        row_classes=["invalid" if not r["valid"] else "" for r in rows],
    )


def _details_tables_html(metrics: Mapping[str, Any]) -> str:
    parts = []
    outliers = outlier_rows(metrics)
    if outliers:
        parts.append(
            '<h3 id="table-outliers">Outliers</h3>'
            + _table(
                ["offered", "trial", "metric", "value", "kept", "reason"],
                [
                    [
                        rate_label({"offered_rate_per_s": r["rate_per_s"]}),
                        r["trial_id"],
                        r["metric"],
                        r["value"],
                        _badge(r["kept"], "kept", "dropped"),
                        r["reason"],
                    ]
                    for r in outliers
                ],
            )
        )
    queues = queue_rows(metrics)
    if queues:
        parts.append(
            "<details><summary>Jobs waiting per segment, per trial</summary>"
            + _table(
                ["trial", "segment", "max", "final", "growth during submission (jobs/s)"],
                [
                    [r["trial_id"], r["segment"], r["max"], r["final"], r["growth_per_s"]]
                    for r in queues
                ],
            )
            + "</details>"
        )
    return "".join(parts)


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:1em 2em;color:#222;line-height:1.4}
h1{margin-bottom:.2em}.meta{color:#666;margin-top:0}
section{margin:1.5em 0}
.headline{border-left:6px solid #0072B2;background:#f3f7fb;padding:.6em 1.2em}
.headline.warn{border-left-color:#D55E00;background:#fdf4ee}
.headline .bottleneck{font-size:1.25em}.headline .knee{font-size:1.1em}
.bad{color:#b00020}.ok{color:#1b7f3b}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
thead th{background:#f0f0f0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.group td{background:#eef3f8}tr.total td{font-weight:bold}
tr.group-start td{border-top:2px solid #999}
tr.invalid td{background:#fde8e8}
caption{caption-side:top;text-align:left;color:#555;padding:.2em 0}
.badge{display:inline-block;padding:0 .5em;border-radius:3px;font-size:.85em;font-weight:bold}
.badge.ok,.badge.pass{background:#d8f0df;color:#1b7f3b}
.badge.bad,.badge.fail{background:#fbd9d9;color:#b00020}
.badge.warn{background:#fdebd0;color:#9a5b00}.badge.info{background:#e3ecf6;color:#24507a}
figure.chart{margin:1.5em 0}.plot{min-height:420px}
figcaption,.note{color:#555;font-size:.9em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:bold}
dd{margin:0}
"""

GLUE_JS = """
(function(){
  var els=document.querySelectorAll('script[type="application/json"][data-plot]');
  for(var i=0;i<els.length;i++){
    var el=els[i],target=document.getElementById(el.getAttribute('data-plot'));
    try{
      var fig=JSON.parse(el.textContent);
      Plotly.newPlot(target,fig.data,fig.layout,{responsive:true,displaylogo:false});
    }catch(err){target.textContent='This chart could not be drawn: '+err;}
  }
})();
"""


def render_html(
    metrics: Mapping[str, Any],
    series: Mapping[str, Mapping[str, Any]],
    spec_summary: Mapping[str, Any] | None = None,
    *,
    generated: datetime | None = None,
) -> str:
    """The complete report page as a string."""
    check_metrics(metrics)
    hl = headline(metrics)
    summ = evaluation_summary(metrics, spec_summary)
    charts = all_charts(metrics, series)
    ds = downsampled_trials(series)
    notes = []
    if ds:
        notes.append(
            f"Time series of {len(ds)} trial(s) were down-sampled to at most 500 points per "
            f"line for the charts: {', '.join(ds)}. Tables use the full data."
        )
    if not series:
        notes.append("No per-trial time series were passed; time-series charts are left out.")
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    meta = (
        f"gridbench {__version__} · {metrics.get('schema')} · load model "
        f"{metrics.get('load_model') or 'n/a'} · {len(points(metrics))} point(s) · "
        f"generated {when}"
    )
    tables = (
        '<section id="tables"><h2>Tables</h2>'
        f'<p class="note">{e(CSV_NOTE)}</p>'
        + _sustain_html(metrics)
        + _batch_html(metrics)
        + _probe_html(metrics)
        + _growth_html(metrics)
        + _latency_html(metrics)
        + _throughput_html(metrics)
        + _failures_html(metrics)
        + _users_html(metrics)
        + _thresholds_html(metrics)
        + _validity_html(metrics)
        + _details_tables_html(metrics)
        + "</section>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(hl.experiment)} — gridbench report</title>"
        f"<style>{STYLE}</style></head><body>"
        f'<header><h1>{e(hl.experiment)}</h1><p class="meta">{e(meta)}</p></header>'
        f"{_headline_html(hl)}"
        f"{_closed_results_html(metrics)}"
        f"{_summary_html(summ)}"
        f"{_charts_html(charts, notes)}"
        f"{tables}"
        f'<footer class="note">Made by gridbench {e(__version__)}. This file is self-contained '
        "and makes no network requests.</footer>"
        f"<script>{offline_plotlyjs()}</script>"
        f"<script>{GLUE_JS}</script>"
        "</body></html>\n"
    )


def write_html_report(
    run_dir: Path,
    metrics: dict[str, Any],
    series: dict[str, dict[str, Any]],
    spec_summary: dict[str, Any] | None,
) -> Path:
    """Write RUN/report.html and return its path."""
    check_metrics(metrics, where=str(run_dir / "metrics.json"))
    page = render_html(metrics, series, spec_summary)
    out = run_dir / "report.html"
    try:
        write_text_atomic(out, page)
    except OSError as exc:
        raise ResultsError(
            f"cannot write the HTML report: {exc.strerror or exc}",
            where=str(out),
            fix="check that the results directory exists and is writable",
        ) from exc
    return out


__all__ = ["json_for_script", "offline_plotlyjs", "render_html", "write_html_report"]
