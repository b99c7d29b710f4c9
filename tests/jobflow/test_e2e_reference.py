"""End to end: the demo ramp against a live reference grid, bottleneck found from data alone.

The same grid and ramp, two status-update policies: sequential (CREAM's UpdateManager) must
make the CE's finishing stage the named bottleneck with a growing queue; batched must show
no bottleneck within the ramp. Nothing in the analysis knows which policy ran.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env

pytestmark = pytest.mark.e2e
UPSTREAM = ("submit", "ce_entry", "ce_submit", "bridge_entry", "bridge_submit", "bridge_done")


def run_demo(policy: str, results: Path) -> dict[str, Any]:
    p = subprocess.run(
        [str(BIN), "demo", "--policy", policy, "--set", "trials=1"],
        env=cli_env(results), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode in (0, 1), p.stderr  # 1: a demo threshold may fail under overload
    run = next(results.iterdir())
    assert (run / "report.html").stat().st_size > 100_000
    metrics: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    assert "Bottleneck" in p.stdout or "bottleneck" in p.stdout.lower()
    return metrics


def trial(metrics: dict[str, Any], rate: float) -> dict[str, Any]:
    point = next(p for p in metrics["points"] if p["offered_rate_per_s"] == rate)
    t: dict[str, Any] = point["trials"][0]
    return t


def test_sequential_polling_makes_ce_finishing_the_bottleneck(tmp_path: Path) -> None:
    m = run_demo("sequential", tmp_path / "results")
    assert m["bottleneck"]["stage"] == "ce_done"
    assert m["bottleneck"]["segment"] == "ce_finish"
    assert m["bottleneck"]["from_rate_per_s"] in (3.0, 4.0)
    assert m["knee"]["limited_by"] == "ce_done"
    assert 2.0 <= m["knee"]["highest_sustained_rate_per_s"] < m["knee"]["first_failing_rate_per_s"]
    low, high = trial(m, 1.0), trial(m, 5.0)
    assert all(t["validity"]["valid"] for p in m["points"] for t in p["trials"])
    # the CE's list grows linearly while submission runs, only when overloaded
    assert high["queues"]["ce_finish"]["growth_per_s"] > 1.0
    assert abs(low["queues"]["ce_finish"]["growth_per_s"]) < 0.2
    assert high["throughput"]["ce_done"]["expected_ratio"] < 0.75
    for stage in UPSTREAM:  # everything before the finishing stage keeps up
        assert high["throughput"][stage]["expected_ratio"] > 0.9, stage
    # finishing latency rises with the rate, as CREAM's did (262.9 s -> 1796.1 s)
    assert high["latency"]["ce_finish"]["mean"] > 3 * low["latency"]["ce_finish"]["mean"]


def test_batched_polling_shows_no_bottleneck(tmp_path: Path) -> None:
    m = run_demo("batched", tmp_path / "results")
    assert m["bottleneck"]["stage"] is None
    assert "No bottleneck up to the highest rate tried" in m["bottleneck"]["statement"]
    assert m["knee"]["highest_sustained_rate_per_s"] == 5.0
    assert m["knee"]["first_failing_rate_per_s"] is None
    for p in m["points"]:
        assert p["bottleneck"] is None
        assert p["trials"][0]["throughput"]["ce_done"]["expected_ratio"] > 0.9
