"""In headless Chromium, on the session's real runs of job flow, storage and messaging:
a state or verdict badge's colour matches its words in the dashboard, old words included
(issue 21.6), and the HTML reports' visual faults stay fixed (issue 21.8): no raw JSON
object in a table cell, real line breaks in the configuration YAML, no axis or chart
title over a legend, and an io latency series of more than one point."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from family_runs import copy_run, gb
from web_server import Server, chromium, serve

pytestmark = pytest.mark.e2e
#: dashboard.css's badge backgrounds, by tone (gridbench.states)
GREEN, AMBER, RED = "rgb(216, 240, 223)", "rgb(253, 235, 208)", "rgb(251, 217, 217)"


def _rename(run: Path, status: str | None = None) -> None:
    """A copied run is a run of its own: its id is its folder's name."""
    exp = json.loads((run / "experiment.json").read_text())
    exp["id"] = run.name
    if status is not None:
        exp["status"] = status
    (run / "experiment.json").write_text(json.dumps(exp), encoding="utf-8")


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, jobflow_run: Path, io_run: Path, net_run: Path
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("badges") / "results"
    runs = {
        "jobflow": copy_run(jobflow_run, root),
        "io": copy_run(io_run, root),
        "net": copy_run(net_run, root),
        "failing": copy_run(jobflow_run, root, "20300101T000000Z-failing"),
        "old": copy_run(net_run, root, "20300101T000001Z-old-word"),
    }
    _rename(runs["failing"])
    _rename(runs["old"], status="done")  # the word messaging runs recorded before
    spec = runs["failing"] / "spec.yaml"  # a threshold no trial can meet: a real "fail"
    spec.write_text(
        spec.read_text() + "thresholds: [{metric: latency.overall.p99, op: '<', value: 0.001}]\n"
    )
    p = gb(root, "analyze", str(runs["failing"]))
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    return runs


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()
    assert not errors, errors


def _tone_of(words: str, kind: str) -> str:
    """The colour the words call for (what the test expects, written out)."""
    if kind == "status":
        return {"complete": GREEN, "failed": RED, "crashed": RED, "aborted": AMBER}[words]
    if words == "pass":
        return GREEN
    return AMBER if words.startswith("pass (") else RED


def test_badge_colours_match_their_words(page: Any, store: dict[str, Path], tmp_path: Path) -> None:
    verdicts = {
        k: json.loads((r / "experiment.json").read_text())["verdict"] for k, r in store.items()
    }
    # the real runs give each tone: a plain pass, a qualified pass and a fail
    assert verdicts["jobflow"] == "pass" and verdicts["failing"] == "fail", verdicts
    assert verdicts["io"].startswith("pass ("), verdicts  # a 1 MiB file: flagged figures
    root = store["jobflow"].parent
    with serve(root, tmp_path / "serve.log") as srv:
        page.goto(srv.url + "/")
        rows = page.eval_on_selector_all(
            "tr:has(span.status)",
            """rows => rows.map(r => {
                 const s = r.querySelector('span.status'), v = r.querySelector('span.verdict');
                 const bg = e => e ? getComputedStyle(e).backgroundColor : null;
                 return {text: r.innerText, status: s.innerText, status_bg: bg(s),
                         verdict: v ? v.innerText : null, verdict_bg: bg(v)};
               })""",
        )
        _experiment_page(page, srv, store["io"].name)
    assert len(rows) == len(store), rows
    seen = set()
    for r in rows:
        assert r["status"] == "complete", r  # "done" of the old run is read as today's word
        assert r["status_bg"] == _tone_of(r["status"], "status"), r
        assert r["verdict"] is not None and r["verdict_bg"] == _tone_of(r["verdict"], "verdict"), r
        seen.add(r["verdict_bg"])
    assert seen == {GREEN, AMBER, RED}
    listed = json.loads(gb(root, "list", "--json").stdout)
    assert {r["status"] for r in listed} == {"complete"}


def _experiment_page(page: Any, srv: Server, rid: str) -> None:
    page.goto(f"{srv.url}/experiments/{rid}")
    v = page.query_selector("#verdict")
    assert v is not None and v.inner_text().startswith("pass ("), page.content()[:2000]
    assert v.evaluate("e => getComputedStyle(e).backgroundColor") == AMBER
    s = page.query_selector("#status")
    assert s.inner_text() == "complete"
    assert s.evaluate("e => getComputedStyle(e).backgroundColor") == GREEN


def _open_report(page: Any, run: Path) -> None:
    page.goto((run / "report.html").as_uri())
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plot')].every(p => p.querySelector('svg'))"
    )


OVERLAPS = """() => {
  const box = e => e.getBoundingClientRect();
  const hit = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right
                        && a.top < b.bottom && b.top < a.bottom;
  const out = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const legend = plot.querySelector('g.legend');
    if (!legend) continue;
    for (const t of plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .gtitle'))
      if (hit(box(legend), box(t))) out.push(plot.id + ': ' + t.textContent);
  }
  return out;
}"""


def test_reports_have_no_title_over_a_legend(
    page: Any, jobflow_run: Path, io_run: Path, net_run: Path
) -> None:
    legends = 0
    for run in (jobflow_run, io_run, net_run):
        _open_report(page, run)
        legends += page.evaluate("() => document.querySelectorAll('g.legend').length")
        assert page.evaluate(OVERLAPS) == [], run.name
    assert legends >= 5  # the check looked at real legends


def test_job_flow_report_cells_and_configuration_read_as_text(page: Any, jobflow_run: Path) -> None:
    _open_report(page, jobflow_run)
    cells = page.eval_on_selector_all("td", "cs => cs.map(c => c.innerText.trim())")
    assert not [c for c in cells if c.startswith("{")], [c for c in cells if "{" in c][:5]
    assert "rate=2/s" in cells and "rate=5/s" in cells  # the swept point, as written
    spec = page.inner_text("pre.spec")
    assert "\\n" not in spec and len(spec.splitlines()) > 8, spec
    assert "sweep:" in spec.splitlines()


def test_io_latency_over_time_has_more_than_one_point(page: Any, io_run: Path) -> None:
    _open_report(page, io_run)
    xs = page.evaluate("() => document.getElementById('plot-overtime').data.map(t => t.x)")
    assert xs and all(len(set(x)) > 1 for x in xs), xs  # not every point at x = 0
    assert all(0 <= v < 5 for x in xs for v in x), xs  # seconds into a sub-second test
