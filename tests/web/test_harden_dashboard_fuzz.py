"""Fuzz the dashboard over a hostile store (issue 15): the same planted experiment.json,
metrics.json and plan.json contents and links as the CLI fuzz, in one of two runs. Every
page (list, the run's page, every download, compare, compare.json, history, /metrics)
answers with a page or a clear 4xx, never a 500 or a traceback, and nothing outside the
store changes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridbench.cli import main
from gridbench.web.app import WebConfig, create_app
from gridbench.web.routes.experiments import DOWNLOADS
from test_harden_store_fuzz import SENTINEL, TARGETS, plant, planted, snapshot
from test_net_analysis import make_run, ping, sockperf


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two analysed net runs: one to plant in, one that must keep working beside it."""
    root = tmp_path_factory.mktemp("dashfuzz") / "results"
    for rtts in ([0.1, 0.2], [0.3, 0.4]):
        run = make_run(root, [ping("tcp", "host", 64, 0, rtts), sockperf("host", 64, 0.05)])
        assert main(["analyze", str(run.path)]) == 0
    return root


def pages(bad: str, good: str) -> list[str]:
    return [
        "/",
        f"/experiments/{bad}",
        f"/experiments/{good}",
        *(f"/experiments/{bad}/download/{name}" for name in DOWNLOADS),
        f"/compare?ids={bad}&ids={good}",
        f"/compare.json?ids={bad}&ids={good}",
        f"/history?experiment={bad}&metric=pingpong.tcp.host.64.rtt_ms",
        f"/history?experiment={good}&metric=pingpong.tcp.host.64.rtt_ms",
        "/metrics",
    ]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(target=st.sampled_from(TARGETS), what=planted)
def test_every_page_survives_a_hostile_run(store: Path, target: str, what: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        shutil.copytree(store, root, symlinks=True)
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "sentinel.json").write_text(SENTINEL)
        before = snapshot(outside)
        bad, good = sorted(p.name for p in root.iterdir())
        plant(root / bad, target, what, outside)
        client = TestClient(create_app(WebConfig(root)), base_url="http://127.0.0.1")
        for url in pages(bad, good):
            r = client.get(url)
            assert r.status_code < 500, (url, r.status_code, r.text[-2000:])
            assert "Traceback" not in r.text, (url, r.text[-2000:])
            if url == f"/experiments/{good}":
                assert r.status_code == 200  # the rest of the store keeps working
        assert snapshot(outside) == before
