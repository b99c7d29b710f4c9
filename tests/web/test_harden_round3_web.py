"""Hardening, round 3 (issue 41): limits taken atomically, names from outside checked
before they reach the file system. Each test failed on the code before the fix:

- four starts at once all passed ``--max-running 1`` (a run counted only once its folder
  existed);
- runs of one name in one second raised FileExistsError (``exists()`` then ``mkdir()``),
  which ``/start`` answered with a 500;
- a participant link naming a run of over 255 bytes answered 500 with a traceback, to
  anyone (the page needs no login).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gridbench.store.layout import RunDir
from gridbench.web.app import WebConfig, create_app
from gridbench.web.manager import QueueFull
from gridbench.web.spec_runs import SpecRuns


class SlowRunner:
    """A family's runner whose folder comes a moment after it starts (as a real one's,
    which validates and prepares first)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run: RunDir | None = None

    def execute(self) -> None:
        time.sleep(0.3)
        self.run = RunDir.create(self.root, "same")
        time.sleep(1.0)


def test_max_running_holds_for_starts_at_once(tmp_path: Path) -> None:
    root = tmp_path / "results"

    async def main() -> list[object]:
        runs = SpecRuns(root, max_running=1)
        got = await asyncio.gather(
            *(runs.start(SlowRunner(root)) for _ in range(4)), return_exceptions=True
        )
        for t in list(runs.tasks.values()):
            await t
        return got

    got = asyncio.run(main())
    assert sum(isinstance(g, RunDir) for g in got) == 1, got
    refused = [g for g in got if isinstance(g, QueueFull)]
    assert len(refused) == 3, got
    assert "at most 1 at once" in refused[0].message and refused[0].where == "Start"
    assert "--max-running" not in str(refused[0])  # the dashboard's words, not the CLI's


@pytest.mark.parametrize("attempt", range(3))
def test_runs_of_one_name_in_one_second_each_get_a_folder(tmp_path: Path, attempt: int) -> None:
    root = tmp_path / "results"
    n = 24
    barrier = threading.Barrier(n)
    made: list[Path] = []
    errors: list[BaseException] = []

    def one() -> None:
        barrier.wait()
        try:
            made.append(RunDir.create(root, "same").path)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(made)) == n


@pytest.mark.parametrize(
    "rid",
    ["a" * 256, "é" * 200, "20200101T000000Z-" + "x" * 4000, "a%00b", "%ED%A0%80", "%2e%2e"],
    ids=["256-bytes", "400-bytes-utf8", "4000-bytes", "nul", "surrogate", "dotdot"],
)
def test_a_forged_participant_link_is_404_whatever_its_name(tmp_path: Path, rid: str) -> None:
    root = tmp_path / "results"
    root.mkdir()  # (an absent root answers "not found" before the name is looked at)
    app = create_app(WebConfig(root))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        for path in (f"/p/{rid}/secret", f"/studies/{rid}", f"/experiments/{rid}"):
            r = c.get(path, follow_redirects=False)
            assert r.status_code in (303, 401, 404), (path, r.status_code, r.text[:300])
            assert "Traceback" not in r.text


# -- the dashboard's own items, in a real browser -----------------------------------------------
@pytest.mark.e2e
def test_start_is_in_the_nav_and_compare_offers_only_what_it_compares(tmp_path: Path) -> None:
    """Old code: /start was in no navigation bar, its errors gave command-line fixes, and the
    compare picker offered every run, the unanalysed and the unreadable ones included,
    which the comparison then refused."""
    from playwright.sync_api import sync_playwright

    from test_harden_round3_summaries import net_run, pinged
    from test_net_analysis import sockperf
    from web_server import serve

    root = tmp_path / "results"
    a = net_run(root, "twice", [*pinged(0.6), sockperf("host", 64, 0.5)])
    b = net_run(root, "twice", [*pinged(0.7), sockperf("host", 64, 0.5)])
    raw = net_run(root, "never-analysed", [*pinged(0.6), sockperf("host", 64, 0.5)])
    broken = root / "20200101T000000Z-broken"
    broken.mkdir()
    (broken / "experiment.json").write_text("{not json")
    from gridbench.pipeline import analyze_and_report

    for run in (a, b):
        analyze_and_report(run.path)
    full, empty = tmp_path / "full", tmp_path / "empty"  # a target that is not empty
    full.mkdir()
    empty.mkdir()
    (full / "keep.txt").write_text("mine")
    io_spec = (
        f"name: io-start\ntargets:\n  - {{name: a, path: {full}}}\n"
        f"  - {{name: b, path: {empty}}}\n"
        "baseline: a\nrepetitions: 1\niozone: {file_size: 1M, record_size: 128k}\n"
    )
    with serve(root, tmp_path / "serve.log") as s, sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        pg = browser.new_page(base_url=s.url)
        pg.goto("/")
        pg.get_by_role("navigation", name="main").get_by_role("link", name="Start a run").click()
        pg.wait_for_url("**/start")
        assert pg.locator("h1").inner_text().startswith("Start a run")
        pg.locator("#kind").select_option("io")
        pg.locator("#yaml").fill(io_spec)
        pg.get_by_role("button", name="Start").click()
        said = pg.locator("#spec-error").inner_text()
        assert "empty" in said and "--" not in said, said  # no command-line fix
        pg.goto("/compare")
        offered = pg.locator("#compare-form input[name=ids]").evaluate_all(
            "els => els.map(e => e.value)"
        )
        assert sorted(offered) == sorted([a.id, b.id]), offered
        assert raw.id not in offered and broken.name not in offered
        for rid in (a.id, b.id):
            pg.locator(f"input[value='{rid}']").check()
        pg.locator("#compare-btn").click()
        pg.wait_for_selector("#comparison")
        assert pg.locator("#compare-error").count() == 0
        browser.close()
