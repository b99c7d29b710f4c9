"""The dashboard end to end in real headless Chromium (Playwright), against a live
``gridbench serve`` and the embedded reference grid.

Creates an experiment from a preset, starts it and watches live progress, aborts a second
one and checks its clean-up on disk, reads the results' charts (DOM and plotly data, not
pixels) and compares the two. Screenshots go to docs/screenshots/. Every page must run
without a console error, which includes any Content-Security-Policy violation.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gridbench.jobflow.api import JobFlowRun
from gridbench.store.layout import RunDir
from web_server import CHROMIUM, Server, chromium, fast_spec, serve, start_run

pytestmark = pytest.mark.e2e
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update"]  # fmt: skip
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
STATE: dict[str, str] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("webui")
    with serve(base / "results", base / "serve.log") as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(ARGS) as b:
        yield b


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=server.url)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on(
        "response",
        lambda r: (
            errors.append(f"HTTP {r.status} {r.request.method} {r.url}")
            if r.status >= 400
            else None
        ),
    )
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()
    assert not errors, f"console errors: {errors}\nserver log:\n{server.tail()}"


def shot(pg: Any, name: str, **kw: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"), **kw)


def synced(pg: Any) -> None:
    pg.wait_for_function("() => window.gbSync && window.gbSync.pending === 0")


def set_field(pg: Any, path: str, value: str) -> None:
    pg.fill(f'[data-path="{path}"]', value)
    pg.wait_for_timeout(300)  # the form's debounce
    synced(pg)


def trial_counter(pg: Any, key: str) -> int:
    return int(pg.inner_text(f"#trial-table .t-{key}").strip() or 0)


def run_id(pg: Any) -> str:
    m = re.search(r"/experiments/([^/?#]+)$", pg.url)
    assert m, pg.url
    return m.group(1)


def test_create_from_preset_start_and_watch_live(page: Any, server: Server) -> None:
    pg = page
    pg.goto("/new")
    synced(pg)
    pg.select_option("#preset", "reference:sequential")
    pg.click("#use-preset")
    pg.wait_for_function(
        "() => document.getElementById('yaml').value.includes('preset: sequential')"
    )
    synced(pg)
    assert pg.input_value('[data-path="backend.type"]') == "reference"
    for path, value in (
        ("name", "browser-live"),
        ("load.rate", "1/s"),
        ("sweep.rate", "1/s, 3/s"),
        ("trial.duration", "5s"),
        ("job.runtime", "0.5s"),
        ("timeouts.status_interval", "0.2s"),
        ("timeouts.drain", "20s"),
    ):
        set_field(pg, path, value)
    yaml = pg.input_value("#yaml")
    assert "name: browser-live" in yaml and "duration: 5s" in yaml and "- 3/s" in yaml
    assert "preset: sequential" in yaml  # the preset survived the form edits
    # YAML -> form: edit the YAML, the form follows. (late_threshold: at 1/s for 5 s one
    # submission 100 ms late on a loaded CI machine is 20% late, and the trial invalid)
    edited, n = re.subn(r"^( +)pool: 16$", r"\1pool: 12\n\1late_threshold: 1s", yaml, flags=re.M)
    assert n == 1, yaml
    pg.fill("#yaml", edited)
    pg.wait_for_function("() => document.querySelector('[data-path=\"load.pool\"]').value === '12'")
    shot(pg, "new-experiment", full_page=True)
    pg.click("#btn-plan")
    pg.wait_for_selector("#plan-summary")
    summary = pg.inner_text("#plan-summary")
    assert "2 point(s)" in summary and "total jobs: 20" in summary  # (1/s + 3/s) × 5 s
    pg.click("#btn-start")
    pg.wait_for_url(re.compile(r"/experiments/[^/]+$"))
    STATE["live"] = rid = run_id(pg)
    pg.wait_for_function("() => window.gbLive && window.gbLive.events > 0")
    pg.wait_for_function(
        "() => Number(document.querySelector('#trial-table .t-submitted').textContent) >= 2"
    )
    first = trial_counter(pg, "submitted")
    pg.wait_for_function(
        f"() => Number(document.querySelector('#trial-table .t-submitted').textContent) > {first}"
    )
    assert trial_counter(pg, "submitted") > first  # pushed updates, no reload
    pg.wait_for_function("() => window.gbLive.samples >= 3")
    rate = pg.evaluate("document.getElementById('lc-rate').data[0].y.length")
    assert rate >= 3
    shot(pg, "live-status")
    # the run ends, the page reloads itself with the results
    pg.wait_for_selector("#charts", timeout=90_000)
    pg.wait_for_selector("body[data-charts=drawn]")
    plots: list[dict[str, Any]] = pg.evaluate(
        """Array.from(document.querySelectorAll('#charts .plot')).map(el => ({
             id: el.id, traces: el.data ? el.data.length : 0,
             points: el.data ? el.data.reduce((n, t) => n + ((t.x || t.values || []).length), 0) : 0
           }))"""
    )
    assert len(plots) >= 5, plots
    assert all(p["traces"] > 0 and p["points"] > 0 for p in plots), plots
    # the component bars have values: the collectors brought the grid's own stamps
    bars = pg.evaluate(
        """document.getElementById('plot-latency-breakdown').data
             .filter(t => t.type === 'bar').map(t => t.y.filter(v => v !== null).length)"""
    )
    assert bars and all(n == 2 for n in bars), bars
    ids = {p["id"] for p in plots}
    assert {"plot-latency-breakdown", "plot-throughput"} <= ids or len(ids) >= 5, ids
    assert pg.inner_text("#status") == "complete"
    assert "pass" in pg.inner_text(".exp-head")
    assert pg.locator("#table-latency").count() == 1
    assert pg.locator(".downloads a", has_text="latency.csv").count() == 1
    assert "Down-sampled" in pg.inner_text("#downsampling") or "No down-sampling" in pg.inner_text(
        "#downsampling"
    )
    shot(pg, "results")
    pg.evaluate("document.getElementById('charts').scrollIntoView()")
    shot(pg, "results-charts")
    exp = json.loads((server.root / rid / "experiment.json").read_text())
    assert exp["status"] == "complete" and exp["verdict"].startswith("pass")


def test_abort_a_second_run_and_verify_cleanup(page: Any, server: Server) -> None:
    from gridbench.jobflow.experiment.cleanup import find_outstanding

    pg = page
    # a second run of the first one's spec name (batched this time) runs at the same time
    with httpx.Client(base_url=server.url, timeout=60) as c:
        spec = fast_spec("browser-live", rate="1/s", duration="5s") + "sweep: {rate: [1/s, 3/s]}\n"
        STATE["again"] = start_run(c, spec)
    pg.goto("/new")
    synced(pg)
    pg.fill("#yaml", fast_spec("browser-abort", rate="4/s", duration="60s"))
    pg.wait_for_timeout(400)
    synced(pg)
    assert pg.input_value('[data-path="name"]') == "browser-abort"
    pg.click("#btn-start")
    pg.wait_for_url(re.compile(r"/experiments/[^/]+$"))
    STATE["abort"] = rid = run_id(pg)
    pg.wait_for_function(
        "() => Number(document.querySelector('#trial-table .t-acknowledged').textContent) >= 6"
    )
    shot(pg, "abort-before")
    pg.click("#abort-btn")
    # (a selector wait survives the page's reload when the run ends; a function wait would not)
    pg.wait_for_selector("#status.s-aborted", timeout=90_000)
    run = RunDir(server.root / rid)
    assert run.read_experiment()["status"] == "aborted"
    assert find_outstanding(run) == {}, "jobs left outstanding after the abort"
    trial = json.loads((JobFlowRun.of(run).trial_dir("p00-t00") / "trial.json").read_text())
    assert trial["status"] == "aborted" and trial["events"] > 0
    submitted = trial["planned_jobs"]
    assert submitted == 240  # planned: the abort stopped it long before
    shot(pg, "aborted")
    assert server.root.joinpath(STATE["again"], "experiment.json").is_file()


def test_compare_two_experiments(page: Any, server: Server) -> None:
    assert "live" in STATE and "again" in STATE, "the earlier browser tests did not run"
    pg = page
    again = RunDir(server.root / STATE["again"])
    pg.goto(f"/experiments/{STATE['again']}")
    pg.wait_for_selector("#status.s-complete", timeout=90_000)
    pg.wait_for_selector("#charts")
    assert again.read_experiment()["verdict"].startswith("pass")  # "(invalid trials)" if loaded
    pg.goto("/compare")
    pg.check(f'input[name="ids"][value="{STATE["live"]}"]')
    pg.check(f'input[name="ids"][value="{STATE["again"]}"]')
    pg.click("#compare-btn")
    # the full table is folded (a closed <details>): attached, not visible, until opened
    pg.wait_for_selector("#compare-table", state="attached")
    assert not pg.is_visible("#compare-table")
    pg.wait_for_selector("body[data-charts=drawn]")
    compare_leads_with_findings(pg)
    shot(pg, "compare")
    pg.click("#compare-all summary")
    pg.wait_for_selector("#compare-table")
    rows = pg.locator("#compare-table tbody tr")
    assert rows.count() > 5
    assert STATE["live"] in pg.inner_text("#comparison p")  # the older run is the baseline
    values = pg.locator("#compare-table tbody tr").first.locator("td.n").all_inner_texts()
    assert len(values) == 2 and all(re.match(r"\d", v.strip()) for v in values), values
    # every metric's chart (the default draws only those that differ, maybe none here)
    pg.goto(pg.url + "&charts=all")
    pg.wait_for_selector("body[data-charts=drawn]")
    print(f"compare page with every chart: {pg.evaluate('document.body.scrollHeight')} px")
    traces = pg.evaluate(
        "Array.from(document.querySelectorAll('#comparison .plot')).map(e => e.data.length)"
    )
    assert traces and all(n == 2 for n in traces), traces
    ys = pg.evaluate("document.querySelector('#comparison .plot').data.map(t => t.y.length)")
    assert ys == [2, 2]  # two rates each, overlaid
    assert re.match(r"\d+", pg.inner_text("#sig-count"))
    pg.goto(f"/history?experiment={STATE['again']}&metric=latency.overall.p99")
    pg.wait_for_selector("body[data-charts=drawn]")
    n = pg.evaluate("document.getElementById('plot-history').data[0].y.length")
    assert n == 2  # both runs named browser-live
    shot(pg, "history")


#: The compare page of two job-flow runs was about 30,000 px tall (every metric's row, then
#: 54 charts of 380 px): findings, a folded table and the charts of the metrics that differ
#: stay far below. 8000 px leaves room for about a dozen differing metrics' charts.
COMPARE_MAX_HEIGHT = 8000


def compare_leads_with_findings(pg: Any) -> None:
    """The findings are on the first screen, the page far shorter than the old one, and
    charts only for the metrics with a significant difference."""
    box = pg.locator("#findings").bounding_box()
    assert box and box["y"] < 900, box  # visible in the 1280x900 viewport without scrolling
    assert pg.is_visible("#findings")
    height = pg.evaluate("document.body.scrollHeight")
    print(f"compare page: {height} px tall")  # pytest -s shows it
    assert height < COMPARE_MAX_HEIGHT, height
    findings = pg.locator("#findings li.finding").count()
    sig = int(pg.inner_text("#sig-count"))
    assert findings == sig, (findings, sig)
    charts = pg.locator("#comparison figure.chart").count()
    assert charts <= findings
    if not charts or pg.locator("#charts-left-out").count():
        assert "charts=all" in (pg.get_attribute("#charts-left-out a", "href") or "")


def test_list_search_and_keyboard(page: Any, server: Server) -> None:
    pg = page
    pg.goto("/")
    assert pg.locator("#experiments tbody tr[data-id]").count() >= 2
    pg.fill("#q", "abort")
    visible = pg.locator("#experiments tbody tr[data-id]:visible")
    assert visible.count() == 1 and "browser-abort" in visible.inner_text()
    pg.press("#q", "Enter")  # the server-side search, as without JavaScript
    pg.wait_for_url(re.compile(r"\?q=abort"))
    assert pg.locator("#experiments tbody tr[data-id]").count() == 1
    pg.goto("/")
    pg.keyboard.press("Tab")
    assert pg.evaluate("document.activeElement.className") == "skip"
    shot(pg, "experiments")


def test_check_connectivity(page: Any, server: Server) -> None:
    pg = page
    pg.goto("/new?preset=reference:batched")
    synced(pg)
    pg.click("#btn-check")
    pg.wait_for_selector("#check table", timeout=60_000)
    results = pg.locator("#check tbody tr td:nth-child(2)").all_inner_texts()
    assert results and all(r.strip() == "ok" for r in results), results
    shot(pg, "check-connectivity")


def test_screenshots_written() -> None:
    for name in ("new-experiment", "live-status", "results", "aborted", "compare", "experiments"):
        p = SHOTS / f"{name}.png"
        assert p.is_file() and p.stat().st_size > 10_000, p
    assert shutil.which("chromium") or CHROMIUM.exists()
