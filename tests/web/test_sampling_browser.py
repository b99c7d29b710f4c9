"""In headless Chromium: a job-flow, an io and a net run, each sampled (``sampling:``, this
controller), show on the dashboard's run page the sampling chart (the host's CPU busy %
over time, each phase shaded) and a "Hosts during ..." table per phase, as their HTML
reports do (docs/hosts.md, "Sampling")."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from web_server import Server, chromium, serve

pytestmark = pytest.mark.e2e
SAMPLING = "sampling: {hosts: [local], interval: 0.3s}\n"
SPECS = {
    "jobflow": (
        ["run"],
        "name: sampled-jobflow\nbackend: {type: local, options: {slots: 2}}\n"
        "job: {command: [/bin/sleep, '0.2']}\nload: {model: open, rate: 4/s}\ntrials: 2\n"
        "trial: {duration: 2s}\n",
    ),
    "io": (
        ["io", "run"],
        "name: sampled-io\ntargets: [{{name: a, path: {dir}}}]\nrepetitions: 1\ncache: none\n"
        "iozone: {{file_size: 4M, record_size: 64k, tests: [write, read]}}\n"
        "bonnie: {{enabled: false}}\n",
    ),
    "net": (
        ["net", "run"],
        "name: sampled-net\nenvironments: [process]\n"
        "pingpong: {transports: [tcp], sizes: {list: [1k]}, tests: 3, round_trips: 20}\n"
        "floor: {duration: 1s}\n",
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One sampled run of each family in one store: their ids."""
    base = tmp_path_factory.mktemp("sampled")
    root = base / "results"
    ids = {}
    for family, (verb, text) in SPECS.items():
        spec = base / f"{family}.yaml"
        target = base / "io-target"
        target.mkdir(exist_ok=True)
        body = text.format(dir=target) if family == "io" else text
        spec.write_text(body + SAMPLING)
        r = subprocess.run([str(BIN), *verb, str(spec), "--yes"] if family == "jobflow" else
                           [str(BIN), *verb, str(spec)], env=cli_env(root), capture_output=True,
                           text=True, timeout=300, check=False)  # fmt: skip
        assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
        run = max(root.glob(f"*-sampled-{family}"))
        assert (run / "samples" / "local.jsonl").stat().st_size > 0
        ids[family] = json.loads((run / "experiment.json").read_text())["id"]
    return root, ids


@pytest.fixture(scope="module")
def server(
    runs: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with serve(runs[0], tmp_path_factory.mktemp("log") / "serve.log") as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.mark.parametrize("family", list(SPECS))
def test_the_run_page_shows_the_hosts_sampled(
    family: str, runs: tuple[Path, dict[str, str]], server: Server, browser: Any
) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(30_000)
    try:
        pg.goto(f"{server.url}/experiments/{runs[1][family]}")
        # the chart is drawn (Plotly's svg inside it), with one shaded band per phase
        pg.wait_for_selector("#plot-sampling-chart .main-svg")
        fig = json.loads(pg.inner_text("#fig-sampling-chart"))
        bands = fig["layout"]["shapes"]
        assert bands and all(s["type"] == "rect" for s in bands)
        # a "Hosts during <phase>" table per shaded phase, naming this controller
        tables = pg.inner_text("#tables")
        assert tables.count("Hosts during ") == len(bands), tables[:2000]
        assert "local" in tables
        if family == "jobflow":  # job flow's phases are its trials
            assert "Hosts during p00-t00" in tables and "Hosts during p00-t01" in tables
    finally:
        ctx.close()
    assert not errors, errors
