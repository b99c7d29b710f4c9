"""The self-contained HTML report of an io run, with the job-flow report's safety: plotly.js
inlined (no CDN), every string escaped, figures as inert JSON, a CSP forbidding fetches."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from gridbench import __version__
from gridbench.io import tables as tb
from gridbench.io.matrix import LABEL
from gridbench.report.charts import TEMPLATE, Chart, colours, ptext
from gridbench.report.html import CSP, GLUE_JS, STYLE, e, json_for_script, offline_plotlyjs
from gridbench.store.layout import write_text_atomic

#: Cells that are figures (right-aligned): numbers, ±, %, '-' for missing.
_NUMERIC = re.compile(r"^[-+]?[\d.,]*( ±[\d.,]+)?( \[CI ±[\d.,]+\])?%?(\n.*)?$|^-$", re.S)


def _table_html(title: str, table: tb.Table, note: str = "") -> str:
    header, rows = table
    if not rows:
        return ""
    out = [f"<h3>{e(title)}</h3>"]
    if note:
        out.append(f'<p class="note">{e(note)}</p>')
    out.append(
        "<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr></thead><tbody>"
    )
    for r in rows:
        cls = ' class="speedup"' if r and r[0] == "speedup" else ""
        cells = "".join(
            f'<td class="{"n" if i and _NUMERIC.match(c) else ""}">'
            f"{e(c).replace(chr(10), '<br>')}</td>"
            for i, c in enumerate(r)
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _bars(metrics: Mapping[str, Any]) -> Chart | None:
    mat = metrics.get("matrix", [])
    if not mat:
        return None
    targets = list(dict.fromkeys(m["target"] for m in mat))
    col = colours(targets)
    fig = go.Figure()
    for t in targets:
        ms = [m for m in mat if m["target"] == t]
        fig.add_bar(
            name=ptext(t),
            x=[ptext(LABEL.get(m["test"], m["test"])) for m in ms],
            y=[m["kbps"]["mean"] for m in ms],
            error_y={"type": "data", "array": [m["kbps"]["std"] or 0 for m in ms]},
            marker_color=col[t],
        )
    fig.update_layout(template=TEMPLATE, barmode="group", yaxis_title="kB/s", height=420)
    return Chart(
        "bars",
        "Throughput per test",
        "Mean kB/s per test and target; error bars: ±1 sd across repetitions.",
        fig,
    )


def _latency(metrics: Mapping[str, Any]) -> Chart | None:
    cdfs = metrics.get("latency_cdf", [])
    if not cdfs:
        return None
    targets = list(dict.fromkeys(c["target"] for c in cdfs))
    col = colours(targets)
    fig = go.Figure()
    for c in cdfs:
        fig.add_scatter(
            x=c["ms"],
            y=c["cdf"],
            mode="lines",
            line={"color": col[c["target"]]},
            name=ptext(f"{c['target']} · {LABEL.get(c['test'], c['test'])}"),
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_type="log",
        xaxis_title="latency (ms, log)",
        yaxis_title="fraction of I/Os",
        height=460,
    )
    return Chart(
        "latency",
        "Latency distributions",
        "CDF of per-I/O latency from fio's JSON+ histograms, merged over repetitions.",
        fig,
    )


def _over_time(metrics: Mapping[str, Any]) -> Chart | None:
    series = [x for x in metrics.get("latency_series", []) if x.get("rep") == 0]
    if not series:
        return None
    col = colours(list(dict.fromkeys(x["target"] for x in series)))
    fig = go.Figure()
    for x in series:
        fig.add_scatter(
            x=x["second"],
            y=x["p99_ms_per_s"],
            mode="lines+markers",
            line={"color": col[x["target"]]},
            name=ptext(f"{x['target']} · {LABEL.get(x['test'], x['test'])} · {x['direction']}"),
        )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="second of the test",
        yaxis_title="p99 latency (ms)",
        height=420,
    )
    return Chart(
        "overtime",
        "Latency over time",
        "p99 latency per second from fio's per-I/O latency log (first repetition).",
        fig,
    )


def _scaling(metrics: Mapping[str, Any]) -> Chart | None:
    conc = metrics.get("concurrency", [])
    if not conc:
        return None
    fig = go.Figure()
    keys = list(dict.fromkeys((c["target"], c["test"], c["files"]) for c in conc))
    col = colours(list(dict.fromkeys(k[0] for k in keys)))
    for target, test, files in keys:
        cs = sorted(
            (c for c in conc if (c["target"], c["test"], c["files"]) == (target, test, files)),
            key=lambda c: c["clients"],
        )
        x = [c["clients"] for c in cs]
        for which, dash in (("last_done_kbps", "solid"), ("first_done_kbps", "dot")):
            fig.add_scatter(
                x=x,
                y=[c[which]["mean"] for c in cs],
                mode="lines+markers",
                line={"color": col[target], "dash": dash},
                name=ptext(
                    f"{target} · {test} · {files} files · "
                    + ("last done" if which == "last_done_kbps" else "first done (estimate)")
                ),
            )
    fig.update_layout(
        template=TEMPLATE, xaxis_title="clients", yaxis_title="aggregate kB/s", height=420
    )
    return Chart(
        "scaling",
        "Concurrency scaling",
        "Aggregate kB/s against clients: solid 'last done' (all bytes ÷ slowest client), "
        "dotted 'first done', an estimate: the sum of the clients' mean rates, assuming each "
        "client's rate was steady over its run.",
        fig,
    )


def _chart_html(c: Chart) -> str:
    cid = e(c.id)
    fig = json_for_script(pio.to_json(c.figure, validate=False, pretty=False))
    return (
        f'<figure id="chart-{cid}" class="chart"><h3>{e(c.title)}</h3>'
        f'<div id="plot-{cid}" class="plot"></div><figcaption>{e(c.caption)}</figcaption>'
        f'<script type="application/json" id="fig-{cid}" '
        f'data-plot="plot-{cid}">{fig}</script></figure>'
    )


def render_html(metrics: Mapping[str, Any], *, generated: datetime | None = None) -> str:
    """The complete page as a string."""
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    name = str(metrics.get("name", "io"))
    verdict_ok = (
        metrics.get("thresholds_ok", True)
        and metrics.get("consistency_ok", True)
        and metrics.get("status") == "completed"
    )
    ok_cls, ok_text = ("ok", "PASS") if verdict_ok else ("bad", "FAIL")
    badge = f'<span class="badge {ok_cls}">{ok_text}</span>'
    charts = [
        c
        for c in (_bars(metrics), _latency(metrics), _over_time(metrics), _scaling(metrics))
        if c is not None
    ]
    io = metrics.get("iozone", {})
    sections = [
        _table_html("Cache mode per target", tb.cache_table(metrics)),
        _table_html(
            "iozone matrix (kB/s mean ±sd [95% CI half-width]; latency p50 / p99 ms)",
            tb.matrix_table(metrics),
            f"{metrics.get('speedup_formula')}. File {io.get('file_size')} bytes, record "
            f"{io.get('record_size')} bytes; "
            "close() in timing: always (fio times it), flush (fsync) in timing: "
            f"{io.get('include_flush')}; "
            f"{metrics.get('repetitions')} repetitions.",
        ),
        _table_html(
            "Bonnie (kB/s, %CPU)",
            tb.bonnie_table(metrics),
            "+++++: bonnie++ could not time a phase under 500 ms.",
        ),
        _table_html("Concurrent clients", tb.concurrency_table(metrics)),
        _table_html("Consistency and functional checks", tb.consistency_table(metrics)),
        _table_html("HTTP transfers", tb.http_table(metrics)),
        _table_html("Thresholds", tb.threshold_table(metrics)),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        f"<title>{e(name)} — gridbench io report</title><style>{STYLE}"
        "tr.speedup td{font-weight:bold}</style></head><body>"
        f'<header><h1>{e(name)} {badge}</h1><p class="meta">gridbench {e(__version__)} · '
        f"{e(metrics.get('schema'))} · baseline {e(metrics.get('baseline'))} · generated "
        f"{e(when)}</p></header>"
        '<section id="tables"><h2>Tables</h2>' + "".join(sections) + "</section>"
        '<section id="charts"><h2>Charts</h2>'
        + "".join(_chart_html(c) for c in charts)
        + "</section>"
        f'<footer class="note">Made by gridbench {e(__version__)}. This file is '
        "self-contained and makes no network requests.</footer>"
        f"<script>{offline_plotlyjs()}</script><script>{GLUE_JS}</script></body></html>\n"
    )


def write_html(run_path: Path, metrics: Mapping[str, Any]) -> Path:
    out = run_path / "report.html"
    write_text_atomic(out, render_html(metrics))
    return out
