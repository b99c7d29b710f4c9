"""The compare page leads with its findings (issue 21, item 7): the significant
differences first (regressions, then improvements, largest first), the full table folded,
charts only for the metrics that differ (every chart with ?charts=all), and no relative
change for a near-zero baseline (gridbench.compare.change, shared with the terminal)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gridbench.compare.change import (
    NEAR_ZERO_NOTE,
    change_text,
    metric_scale,
    near_zero,
    relative_change,
)
from gridbench.web import compare_view
from gridbench.web.app import WebConfig, create_app
from gridbench.web.routes import compare as compare_route

BASE, TEST = "20260101T000000Z-base", "20260102T000000Z-test"


def test_relative_change_of_a_normal_baseline() -> None:
    assert relative_change(2.0, 3.0, 10.0) == pytest.approx(0.5)
    assert change_text(2.0, 3.0, 10.0) == "+50.0 %"
    assert change_text(4.0, 3.0, 4.0) == "-25.0 %"


def test_relative_change_withheld_for_a_near_zero_baseline() -> None:
    # 0.01 s against a metric that reaches 0.26 s: "+2500 %" would say nothing
    assert near_zero(0.01, metric_scale([0.01, 0.26, 0.2]))
    assert relative_change(0.01, 0.26, 0.26) is None
    text = change_text(0.01, 0.26, 0.26)
    assert "%" not in text and text.startswith("+0.25") and NEAR_ZERO_NOTE in text
    # a metric that is zero everywhere but here: the absolute epsilon applies
    assert relative_change(0.0, 1e-3, 0.0) is None
    assert change_text(0.0, 0.0, 0.0) == "+0 (abs, baseline near zero)"
    assert change_text(None, 1.0, 1.0) == "–" and relative_change(1.0, None, 1.0) is None
    # just above the threshold the percentage is back
    assert relative_change(0.06, 0.12, 1.0) == pytest.approx(1.0)


def test_metric_scale_ignores_missing_values() -> None:
    assert metric_scale([None, -3.0, 2.0]) == 3.0
    assert metric_scale([None]) == 0.0


def _metric(name: str, values: tuple[float, float], verdict: str = "unchanged") -> dict[str, Any]:
    b, t = values
    return {
        "values": [
            {"experiment": BASE, "value": b, "ci95": None},
            {"experiment": TEST, "value": t, "ci95": None},
        ],
        "diffs": [
            {
                "experiment": TEST,
                "significant": verdict != "unchanged",
                "verdict": verdict,
                "difference": t - b,
                "relative": None if b == 0 else t / b - 1,
                "p_adjusted": 0.001 if verdict != "unchanged" else 0.5,
            }
        ],
        "significant": verdict != "unchanged",
    }


def synthetic() -> dict[str, Any]:
    """Two rates, six metrics: two regressions (one small, one near-zero baseline), one
    improvement, the rest unchanged."""
    names = ["wait.p99", "rate", "fail", "a", "b", "c"]
    points = [
        {
            "key": "r=1",
            "metrics": {
                "wait.p99": _metric("wait.p99", (1.0, 1.2), "regressed"),
                "rate": _metric("rate", (10.0, 12.0), "improved"),
                "fail": _metric("fail", (0.01, 0.26), "regressed"),
                **{n: _metric(n, (5.0, 5.0)) for n in ("a", "b", "c")},
            },
        },
        {
            "key": "r=2",
            "metrics": {
                "wait.p99": _metric("wait.p99", (2.0, 2.1)),
                "rate": _metric("rate", (20.0, 20.0)),
                "fail": _metric("fail", (0.2, 0.21)),
                **{n: _metric(n, (5.0, 5.0)) for n in ("a", "b", "c")},
            },
        },
    ]
    series = {
        n: {e: {"x": [1, 2], "y": [1.0, 2.0], "ci95": [None, None]} for e in (BASE, TEST)}
        for n in names
    }
    return {
        "experiments": [{"id": BASE, "name": "base"}, {"id": TEST, "name": "test"}],
        "baseline": BASE,
        "metrics": [
            {"metric": n, "label": n, "unit": "s", "better": "lower", "test": "mw"} for n in names
        ],
        "series": series,
        "points": points,
        "significant_count": 3,
        "settings": {"alpha": 0.05, "correction": "BH", "min_effect": 0.05, "max_samples": None},
        "notes": [],
        "downsampled": False,
    }


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    def fake(root: Path, ids: list[str], *, all_charts: bool = False) -> dict[str, Any]:
        assert ids == [BASE, TEST]
        return compare_view._compare_ctx(synthetic(), pending=False, all_charts=all_charts)

    monkeypatch.setattr(compare_route, "compare_context", fake)
    (tmp_path / "results").mkdir()
    return TestClient(create_app(WebConfig(tmp_path / "results")), base_url="http://127.0.0.1")


def test_findings_first_worst_first_and_the_table_folded(client: TestClient) -> None:
    html = client.get("/compare", params={"ids": [BASE, TEST]}).text
    findings = html.index('id="findings"')
    assert findings < html.index('id="compare-table"') < html.index('id="chart-cmp-0"')
    items = re.findall(r'<li class="finding (\w+)">(.*?)</li>', html, re.S)
    assert [v for v, _ in items] == ["regressed", "regressed", "improved"]
    # the near-zero baseline's regression is the larger against its metric's scale
    assert "fail at r=1" in items[0][1] and "wait.p99 at r=1" in items[1][1]
    assert "1 → 1.2 (+20.0 %)" in items[1][1]
    assert "0.01 → 0.26" in items[0][1] and "%" not in items[0][1]
    assert NEAR_ZERO_NOTE in items[0][1]
    # every row, in a <details> closed by default
    folded = re.search(r"<details id=\"compare-all\">(.*?)</details>", html, re.S)
    assert folded and 'id="compare-table"' in folded.group(1)
    assert folded.group(1).count("<tr class=") == 12 and "12 rows" in folded.group(1)


def test_charts_only_for_the_metrics_that_differ(client: TestClient) -> None:
    html = client.get("/compare", params={"ids": [BASE, TEST]}).text
    charted = re.findall(r'<script type="application/json" id="fig-cmp-\d+"', html)
    assert len(charted) == 3  # wait.p99, rate, fail
    left = re.search(r'id="charts-left-out">(.*?)</p>', html, re.S)
    assert left and left.group(1).startswith("3 chart(s)") and "charts=all" in left.group(1)
    every = client.get("/compare", params={"ids": [BASE, TEST], "charts": "all"}).text
    assert len(re.findall(r'id="fig-cmp-\d+"', every)) == 6
    assert "only the metrics that differ" in every


def test_near_zero_baseline_in_the_full_table(client: TestClient) -> None:
    html = client.get("/compare", params={"ids": [BASE, TEST]}).text
    assert "+2500.0 %" not in html and "+2400.0 %" not in html
    assert "+5.0 %" in html  # 0.2 -> 0.21 at r=2: a baseline far from zero keeps its %


def test_the_terminal_table_uses_the_same_rule() -> None:
    from gridbench.compare.command import _change
    from gridbench.compare.model import Diff, Value

    def diff(b: float, t: float) -> Diff:
        return Diff(TEST, BASE, "welch", 1.0, 0.5, 0.5, False, t - b, t / b, "unchanged")

    def val(v: float) -> Value:
        return Value(BASE, v, None, v, v, 3)

    assert "+50.0%" in _change(diff(2.0, 3.0), val(2.0), val(3.0), 3.0)
    near = _change(diff(0.01, 0.26), val(0.01), val(0.26), 0.26)
    assert "%" not in near and "+0.25" in near and NEAR_ZERO_NOTE in near
