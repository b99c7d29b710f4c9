"""The HTML report: charts carry the fixture's numbers, hostile text stays text, no CDN."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import report_fixtures as fx
from gridbench.jobflow.report import build_report
from gridbench.report import write_reports
from gridbench.report.html import json_for_script, offline_plotlyjs, render_page


def render_html(metrics: dict[str, Any], series: dict[str, Any]) -> str:
    return render_page(build_report(metrics, series))


CHART_IDS = {
    "latency-breakdown",
    "latency-share",
    "throughput",
    "expected-ratio",
    "throughput-time",
    "queues",
    "failures",
    "latency-hist",
}
FIG_RE = re.compile(
    r'<script type="application/json" id="fig-([a-z0-9-]+)" data-plot="plot-\1">(.*?)</script>',
    re.S,
)


def figures(page: str) -> dict[str, dict[str, Any]]:
    return {m.group(1): json.loads(m.group(2)) for m in FIG_RE.finditer(page)}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], dict[str, Any]]:
    run = tmp_path_factory.mktemp("run")
    metrics, series = fx.write_fixture(run)
    path = write_reports(run, fx.build(metrics, series))["html"]
    assert path == run / "report.html"
    return path.read_text(encoding="utf-8"), metrics, series


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> str:
    run = tmp_path_factory.mktemp("hostile")
    metrics, series = fx.write_fixture(run, hostile=True)
    return write_reports(run, fx.build(metrics, series, hostile=True))["html"].read_text()


def _bars(fig: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in fig["data"] if t["type"] == "bar"]


def _visible(fig: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in fig["data"] if t.get("visible") is True]


def test_every_chart_has_its_div_and_data(report: tuple[str, Any, Any]) -> None:
    page, _, _ = report
    figs = figures(page)
    assert set(figs) == CHART_IDS
    for cid in CHART_IDS:
        assert f'<div id="plot-{cid}" class="plot"></div>' in page
        assert figs[cid]["data"], cid


def test_stacked_latency_bars_sum_to_overall_means(report: tuple[str, Any, Any]) -> None:
    page, metrics, _ = report
    fig = figures(page)["latency-breakdown"]
    bars = _bars(fig)
    assert [b["name"] for b in bars] == ["ce_prep", "bridge_prep", "dg", "ce_finish", "other"]
    assert fig["layout"]["barmode"] == "relative"
    (overall,) = [t for t in fig["data"] if t["type"] == "scatter"]
    sums = [sum(b["y"][i] for b in bars) for i in range(5)]
    assert sums == pytest.approx(overall["y"])
    assert sums == pytest.approx([sum(fx.SEED_TABLE6[r].values()) for r in fx.RATES_PER_MIN])
    ce_finish = next(b for b in bars if b["name"] == "ce_finish")
    assert ce_finish["y"] == pytest.approx([39.22, 262.90, 1796.15, 2861.87, 4696.42])
    want_std = [p["summary"]["latency"]["overall"]["std"] for p in metrics["points"]]
    assert overall["error_y"]["array"] == pytest.approx(want_std)


def test_share_bars_sum_to_100(report: tuple[str, Any, Any]) -> None:
    page, _, _ = report
    bars = _bars(figures(page)["latency-share"])
    for i in range(5):
        assert sum(b["y"][i] for b in bars) == pytest.approx(100.0)
    dg = next(b for b in bars if b["name"] == "dg")
    assert dg["y"][0] == pytest.approx(100 * 60.63 / 112.37)


def test_throughput_chart_has_error_bars_and_expected_line(report: tuple[str, Any, Any]) -> None:
    page, metrics, _ = report
    fig = figures(page)["throughput"]
    expected = fig["data"][0]
    assert expected["name"] == "expected (= offered)"
    assert expected["x"] == expected["y"]
    ce_done = next(t for t in fig["data"] if t["name"] == "TR7 ce_done")
    reps = [p["summary"]["throughput"]["ce_done"] for p in metrics["points"]]
    assert ce_done["x"] == pytest.approx([r / 60 for r in fx.RATES_PER_MIN])
    assert ce_done["y"] == [r["mean"] for r in reps]
    assert ce_done["error_y"]["array"] == [r["std"] for r in reps]
    assert len(fig["data"]) == 1 + len(fx.STAGES)


def test_expected_ratio_bars_per_stage_and_rate(report: tuple[str, Any, Any]) -> None:
    page, metrics, _ = report
    fig = figures(page)["expected-ratio"]
    bars = _bars(fig)
    assert len(bars) == 5
    assert bars[0]["x"][0] == "TR1 submit" and bars[0]["x"][6] == "TR7 ce_done"
    at60 = next(b for b in bars if b["name"] == "1/s (60/min)")
    want = metrics["points"][2]["summary"]["expected_ratio"]["ce_done"]["mean"]
    assert at60["y"][6] == want == pytest.approx(0.70 * 1.01)
    assert any(s.get("y0") == 1.0 for s in fig["layout"]["shapes"])


def test_failures_chart_by_kind(report: tuple[str, Any, Any]) -> None:
    page, _, _ = report
    fig = figures(page)["failures"]
    by_name = {b["name"]: b for b in _bars(fig)}
    assert set(by_name) == {"dropped", "submit_timeout", "job_failed", "lost"}
    assert by_name["submit_timeout"]["y"] == pytest.approx([0, 2, 5, 16, 31])
    assert by_name["dropped"]["y"] == pytest.approx([0, 0, 0, 0, 5])
    line = next(t for t in fig["data"] if t["type"] == "scatter")
    assert line["name"] == "client_done throughput"
    assert line["yaxis"] == "y2"


def test_time_series_show_representative_trial_of_top_rate(report: tuple[str, Any, Any]) -> None:
    page, _, series = report
    fig = figures(page)["throughput-time"]
    menu = fig["layout"]["updatemenus"][0]
    labels = [b["label"] for b in menu["buttons"]]
    assert len(labels) == 15
    assert labels[0] == "0.333/s (20/min) — p00-t01 (representative)"
    assert labels[menu["active"]] == "1.67/s (100/min) — p04-t01 (representative)"
    vis = _visible(fig)
    # 8 punctual + 8 windowed lines + offered + submitted
    assert len(vis) == 18
    want = series["p04-t01"]["punctual"]["ce_done"]
    got = next(t for t in vis if t["name"] == "ce_done")
    assert got["x"] == want["t"] and got["y"] == want["v"]
    offered = next(t for t in vis if t["name"] == "offered")
    assert offered["y"] == series["p04-t01"]["offered"]["v"]
    # Each button shows exactly its own trial's traces.
    for b in menu["buttons"]:
        assert sum(b["args"][0]["visible"]) == 18
    # The punctual panel is capped near the offered rate, not at its first spiky points.
    top = max(max(v["v"]) for k, v in series["p04-t01"]["windowed"].items() if k != "window_s")
    assert fig["layout"]["yaxis"]["range"] == pytest.approx([0.0, 1.25 * max(100 / 60, top)])
    assert menu["buttons"][0]["args"][1]["yaxis.range"][1] < fig["layout"]["yaxis"]["range"][1]


def test_queue_and_histogram_charts_carry_series(report: tuple[str, Any, Any]) -> None:
    page, _, series = report
    figs = figures(page)
    q = {t["name"]: t for t in _visible(figs["queues"])}
    assert q["ce_finish"]["y"] == series["p04-t01"]["queues"]["ce_finish"]["v"]
    assert max(q["ce_finish"]["y"]) > max(q["dg"]["y"])
    h = {t["name"]: t for t in _visible(figs["latency-hist"])}
    assert set(h) == {"ce_prep", "bridge_prep", "dg", "ce_finish", "overall"}
    hist = series["p04-t01"]["latency_hist"]["dg"]
    assert h["dg"]["y"] == hist["counts"]
    assert h["dg"]["x"][0] == pytest.approx((hist["edges"][0] + hist["edges"][1]) / 2)


def test_headline_tables_and_ieee829_sections(report: tuple[str, Any, Any]) -> None:
    page, _, _ = report
    headline = page[page.index('<section id="headline"') : page.index('<section id="evaluation"')]
    assert "bottleneck: ce_done (CE finishing) from 1/s (60/min)" in headline
    assert "sustains up to 0.667/s (40/min); breaks at 1/s (60/min) in ce_done" in headline
    assert "95% CI 0.66–0.74/s" in headline
    for h in ("What was tested", "How it was configured", "What passed or failed",
              "What is left open"):  # fmt: skip
        assert f"<h3>{h}</h3>" in page
    left_open = page[page.index('<ul class="open">') :].split("</ul>", 1)[0]
    assert "trial p02-t01 (1/s (60/min)) is invalid" in left_open
    assert "ARC and UNICORE endpoints" in left_open
    assert "failures.submit_timeout.share could not be evaluated" in left_open
    spec = page.split('<pre class="spec">')[1].split("</pre>")[0]  # the spec as YAML
    assert "endpoint: &#x27;https://ce.example.org:8443/cream&#x27;" in spec
    assert "repetitions: 3" in spec
    assert '<span class="badge fail">FAIL</span> latency.overall.mean &lt; 600' in page
    # Table 6 cells, seed-formatted.
    assert '<td class="n">1796.15</td>' in page and '<td class="n">4696.42</td>' in page
    assert 'class="invalid"><td>p02-t01</td>' in page
    assert "down-sampled" in page and "p04-t00" in page


def test_plotly_inlined_once_and_no_cdn(report: tuple[str, Any, Any]) -> None:
    page, _, _ = report
    assert "cdn.plot.ly" not in page
    assert "cdn.jsdelivr" not in page
    bundle = offline_plotlyjs()
    assert page.count(bundle) == 1
    # Outside the bundle (whose map attribution strings are never rendered here), no
    # element may point at the network.
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page.replace(bundle, ""))
    assert page.count("<script") == len(CHART_IDS) + 2
    assert page.count("Plotly.newPlot") == 1  # the glue; the bundle defines it, once
    assert len(re.findall(r"plotly\.js v\d", page)) == 1
    assert 'content="default-src &#x27;none&#x27;; script-src' in page


def test_hostile_text_only_escaped(hostile: str) -> None:
    page = hostile
    for raw in ("<script>alert", "<img", "<b onmouseover", "</script><script>alert"):
        assert raw not in page, raw
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # name, title, h1
    assert "&lt;img src=x onerror=alert(&#x27;reason&#x27;)&gt;" in page
    assert "spec.yaml:31 &lt;/script&gt;&lt;script&gt;" in page

    class Scan(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: set[str] = set()
            self.scripts: list[dict[str, str | None]] = []
            self.handlers: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.add(tag)
            self.handlers += [k for k, _ in attrs if k.startswith("on")]
            if tag == "script":
                self.scripts.append(dict(attrs))

    scan = Scan()
    scan.feed(page)
    assert scan.handlers == []
    assert "img" not in scan.tags and "b" not in scan.tags and "i" not in scan.tags
    assert len(scan.scripts) == len(CHART_IDS) + 2
    assert all(s == {} or s.get("type") == "application/json" for s in scan.scripts)
    figs = figures(page)  # every data block still parses: nothing broke out
    assert set(figs) == CHART_IDS
    names = [b["name"] for b in _bars(figs["failures"])]
    assert "&lt;/script&gt;&lt;script&gt;alert('breakout')&lt;/script&gt;" in names


def test_json_for_script_escapes_closing_tags() -> None:
    text = json_for_script(json.dumps({"a": "</script><!-- & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_without_series_or_spec(tmp_path: Path) -> None:
    metrics = fx.make_metrics()
    page = render_html(metrics, {})
    figs = figures(page)
    assert set(figs) == CHART_IDS - {"throughput-time", "queues", "latency-hist"}
    assert "No per-trial time series were passed" in page
    assert "No spec was recorded with this run." in page


def test_no_failures_no_thresholds(tmp_path: Path) -> None:
    metrics = fx.make_metrics()
    metrics["thresholds"] = []
    for p in metrics["points"]:
        p["summary"]["failures"] = {}
        for t in p["trials"]:
            t["failures"] = {}
    page = render_html(metrics, {})
    assert "failures" not in figures(page)
    assert "The spec set no thresholds." in page


def test_renders_in_headless_chromium(report: tuple[str, Any, Any], tmp_path: Path) -> None:
    page, _, _ = report
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--virtual-time-budget=15000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=180, check=True,
    ).stdout  # fmt: skip
    assert "This chart could not be drawn: " not in dom.replace("could not be drawn: '+err", "")
    for cid in CHART_IDS:
        start = dom.index(f'id="plot-{cid}"')
        assert "main-svg" in dom[start : start + 5000], cid


def test_bottleneck_sentence_stated_once() -> None:
    """The analysis ends its bottleneck sentence with the evidence: the headline states the
    sentence once and the evidence once, and the outcome does not repeat either."""
    metrics = fx.make_metrics()
    evidence = metrics["bottleneck"]["evidence"]
    sentence = "Bottleneck: ce_done (segment ce_finish), first seen at 1/s (60/min)."
    metrics["bottleneck"]["statement"] = f"{sentence} {evidence}"
    report = build_report(metrics, {})
    texts = [f.text for f in report.headline.findings] + [
        f.evidence for f in report.headline.findings
    ]
    assert sum(t.count(sentence) for t in texts) == 1
    assert sum(t.count(evidence) for t in texts) == 1
    page = render_page(report)
    headline = page[page.index('<section id="headline"') : page.index('<section id="evaluation"')]
    assert headline.count(sentence) == 1 and headline.count(evidence) == 1
    assert page.count(sentence) == 1  # not again in "What passed or failed"
    outcome = page[page.index('<ul class="outcome">') :].split("</ul>", 1)[0]
    assert evidence not in outcome and "sustains up to" not in outcome
