"""The self-contained HTML report of any family's :class:`~gridbench.sections.Report`: one
file, readable offline, safe with hostile text. The dashboard shows the same fragments
(:func:`headline_html`, :func:`summary_html`, :func:`section_html` ...).

plotly.js is inlined once from the installed ``plotly`` package (no CDN). Every string
of a report is escaped with :func:`html.escape`; figures are
embedded as JSON in ``<script type="application/json">`` blocks with '<', '>' and '&'
written as \\u escapes, so no data can close the script element. A Content-Security-Policy
forbids every network fetch.
"""

from __future__ import annotations

import functools
import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.offline

from gridbench import __version__
from gridbench.report.csv_export import writing
from gridbench.sections import (
    Chart,
    EvaluationSummary,
    Headline,
    Report,
    Section,
    Statements,
    Table,
    ranked,
)
from gridbench.states import FINDING_TONES
from gridbench.store.layout import write_text_atomic

#: URL prefixes inside the plotly.js bundle that only map/geo traces (never used here)
#: would fetch; rewritten so the offline file names no CDN at all.
DORMANT_CDN_PREFIXES = ("https://cdn.plot.ly/", "https://cdn.jsdelivr.net/")

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)


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


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:1em 2em;color:#222;line-height:1.4}
h1{margin-bottom:.2em}.meta{color:#666;margin-top:0}
section{margin:1.5em 0}
.headline{border-left:6px solid #0072B2;background:#f3f7fb;padding:.6em 1.2em}
.headline.warn{border-left-color:#D55E00;background:#fdf4ee}
.headline .lead{font-size:1.25em}
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
tr.group td{font-weight:bold}tr.warn td{background:#fdf4ee}
pre.spec{background:#f6f6f6;padding:.6em;overflow:auto}
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


#: Table badge classes by status (the page's CSS names).
BADGE = FINDING_TONES
#: Row classes by row status.
ROW_STATUS = {"fail": "invalid", "warn": "warn"}
MARKS = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "info": "INFO"}
#: Finding and statement text classes by status.
TEXT_CLASS = {"pass": "ok", "fail": "bad", "warn": "bad", "info": ""}


def e(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape(str(value), quote=True)


def _cls(name: str) -> str:
    return f' class="{e(name)}"' if name else ""


# --- sections ----------------------------------------------------------------------------


def table_html(t: Table) -> str:
    """A table under its heading (``id="table-<id>"``), its note as the caption; a table
    without rows shows its note instead."""
    heading = f'<h3 id="table-{e(t.id)}">{e(t.title)}</h3>'
    if not t.rows:
        return heading + (f"<p>{e(t.note)}</p>" if t.note else "")
    out = ["<table>"]
    if t.note:
        out.append(f"<caption>{e(t.note)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{e(c.title)}</th>" for c in t.columns))
    out.append("</tr></thead><tbody>")
    for i in range(len(t.rows)):
        classes = [
            ROW_STATUS.get(t.row_status[i] or "", "") if t.row_status else "",
            (t.row_style[i] or "") if t.row_style else "",
        ]
        cells = []
        for j, c in enumerate(t.columns):
            text = e(t.cell_text(i, j))
            status = t.cell_status[i][j] if t.cell_status else None
            if status is not None and text:
                text = f'<span class="badge {BADGE[status]}">{text}</span>'
            cells.append(f"<td{_cls('n' if c.numeric else '')}>{text}</td>")
        out.append(f"<tr{_cls(' '.join(x for x in classes if x))}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    if t.collapsed:
        return f"<details><summary>{heading}</summary>{''.join(out)}</details>"
    return heading + "".join(out)


def figure_json(chart: Chart) -> str:
    """The chart's figure as JSON that is inert inside a <script> element."""
    return json_for_script(json.dumps(chart.figure, separators=(",", ":"), default=str))


def chart_html(c: Chart) -> str:
    """A figure: its div, caption and data block (drawn by the page's glue script)."""
    cid = e(c.id)
    return (
        f'<figure id="chart-{cid}" class="chart"><h3>{e(c.title)}</h3>'
        f'<div id="plot-{cid}" class="plot"></div>'
        f"<figcaption>{e(c.note)}</figcaption>"
        f'<script type="application/json" id="fig-{cid}" data-plot="plot-{cid}">'
        f"{figure_json(c)}</script></figure>"
    )


def statements_html(s: Statements) -> str:
    """Lead statements as the results box under the headline; others as notes."""
    items = "".join(f"<li{_cls(TEXT_CLASS[st])}>{e(text)}</li>" for st, text in s.lines)
    if s.lead:
        return (
            f'<section id="{e(s.id)}" class="headline"><h2>{e(s.title)}</h2>'
            f'<ul class="results">{items}</ul></section>'
        )
    if not s.title:
        return "".join(
            f'<p class="note{" " + TEXT_CLASS[st] if TEXT_CLASS[st] else ""}">{e(text)}</p>'
            for st, text in s.lines
        )
    return f'<h3 id="notes-{e(s.id)}">{e(s.title)}</h3><ul class="notes">{items}</ul>'


def section_html(section: Section) -> str:
    """Any section of a report."""
    if isinstance(section, Table):
        return table_html(section) if section.has_data() or not section.rows else ""
    if isinstance(section, Chart):
        return chart_html(section)
    return statements_html(section)


def headline_html(hl: Headline) -> str:
    """The headline box: every finding once, the first one leading, evidence under it."""
    items = []
    for i, f in enumerate(ranked(hl.findings)):  # failures and problems first (issue 41)
        text = f"<strong>{e(f.text)}</strong>" if i == 0 else e(f.text)
        classes = " ".join(x for x in ("lead" if i == 0 else "", TEXT_CLASS[f.status]) if x)
        items.append(f"<p{_cls(classes)}>{text}</p>")
        if f.evidence:
            items.append(f'<p class="evidence">Evidence: {e(f.evidence)}</p>')
    cls = "headline warn" if hl.verdict in ("fail", "warn") else "headline ok"
    return f'<section id="headline" class="{cls}">{"".join(items)}</section>'


def summary_html(s: EvaluationSummary) -> str:
    """The evaluation summary: what was tested, how it was configured (the spec as YAML
    and the declared plan), what passed or failed, what is left open or not tested."""
    tested = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in s.tested)
    if s.spec_yaml.strip():
        configured = f'<pre class="spec">{e(s.spec_yaml)}</pre>'
    else:
        configured = '<p class="note">No spec was recorded with this run.</p>'
    if s.plan is not None and s.plan.rows:
        configured += table_html(s.plan)
    outcome = "".join(
        f'<li><span class="badge {e(f.status)}">{e(MARKS[f.status])}</span> {e(f.text)}'
        + (f" ({e(f.evidence)})" if f.evidence else "")
        + "</li>"
        for f in s.outcome
    )
    left = "".join(f"<li>{e(x)}</li>" for x in s.left_open)
    left += "".join(f'<li class="not-tested">not tested: {e(x)}</li>' for x in s.not_tested)
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


# --- the page ----------------------------------------------------------------------------


def _full(s: Section) -> bool:
    return isinstance(s, Chart) or s.scope != "brief"


def lead_sections(report: Report) -> list[Statements]:
    """The statements shown right under the headline."""
    return [s for s in report.sections if isinstance(s, Statements) and s.lead]


def _groups(report: Report) -> tuple[list[Section], list[Section]]:
    """(the charts part, the tables part) of the full report's sections, in order; a
    statement goes with the section after it."""
    body = [s for s in report.sections if _full(s) and not (isinstance(s, Statements) and s.lead)]
    charts: list[Section] = []
    tables: list[Section] = []
    for i, s in enumerate(body):
        nxt = next((x for x in body[i:] if not isinstance(x, Statements)), None)
        (charts if isinstance(nxt, Chart) else tables).append(s)
    return charts, tables


def lead_html(report: Report) -> str:
    """The lead statements (e.g. the closed models' results)."""
    return "".join(statements_html(s) for s in lead_sections(report))


def charts_html(report: Report) -> str:
    """The charts section (``id="charts"``), or '' when the report has no chart."""
    part, _ = _groups(report)
    if not part:
        return ""
    return (
        '<section id="charts"><h2>Charts</h2>'
        + "".join(section_html(s) for s in part if isinstance(s, Statements))
        + '<noscript><p class="note">Charts need JavaScript; the tables below '
        "hold the same numbers.</p></noscript>"
        + "".join(section_html(s) for s in part if not isinstance(s, Statements))
        + "</section>"
    )


def tables_html(report: Report) -> str:
    """Every table (and note) of the full report, without a wrapper."""
    _, part = _groups(report)
    return "".join(section_html(s) for s in part)


def chart_ids(report: Report) -> list[str]:
    """The ids of the charts the full report draws."""
    return [c.id for c in report.charts()]


#: The CSV files next to the report, linked from the tables section.
CSV_NOTE = "Every table is also in tables/*.csv and, with the metrics, in report.json."


def render_page(report: Report, *, generated: datetime | None = None) -> str:
    """The complete, self-contained report page."""
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    meta = " · ".join(
        x for x in (f"gridbench {__version__}", report.meta, f"generated {when}") if x
    )
    tables = tables_html(report)
    if tables:
        note = f'<p class="note">{e(CSV_NOTE)}</p>' if report.exported() else ""
        tables = f'<section id="tables"><h2>Tables</h2>{note}{tables}</section>'
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(report.title)} — gridbench report</title>"
        f"<style>{STYLE}</style></head><body>"
        f'<header><h1>{e(report.title)}</h1><p class="meta">{e(meta)}</p></header>'
        f"{headline_html(report.headline)}"
        f"{lead_html(report)}"
        f"{summary_html(report.summary)}"
        f"{charts_html(report)}"
        f"{tables}"
        f'<footer class="note">Made by gridbench {e(__version__)}. This file is self-contained '
        "and makes no network requests.</footer>"
        f"<script>{offline_plotlyjs()}</script>"
        f"<script>{GLUE_JS}</script>"
        "</body></html>\n"
    )


def write_page(run_dir: Path, report: Report) -> Path:
    """Write RUN/report.html and return its path."""
    out = run_dir / "report.html"
    with writing("the HTML report", out, "check that the results directory exists and is writable"):
        write_text_atomic(out, render_page(report))
    return out


__all__ = [
    "CSP",
    "GLUE_JS",
    "STYLE",
    "chart_html",
    "chart_ids",
    "charts_html",
    "e",
    "headline_html",
    "json_for_script",
    "lead_html",
    "offline_plotlyjs",
    "render_page",
    "section_html",
    "summary_html",
    "table_html",
    "tables_html",
    "write_page",
]
