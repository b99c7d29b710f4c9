"""The rich terminal summary names the bottleneck and the knee and shows Table 6."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

import report_fixtures as fx
from gridbench.errors import ResultsError
from gridbench.jobflow.report import build_report
from gridbench.report import render_report


def _render(metrics: dict[str, Any], width: int = 140) -> str:
    console = Console(record=True, width=width, color_system=None)
    render_report(build_report(metrics, {}), console, verbose=True)
    return console.export_text()


def test_headline_names_bottleneck_and_knee() -> None:
    text = _render(fx.make_metrics())
    head = text.split("Latency per component")[0]
    assert "bottleneck: ce_done (CE finishing) from 1/s (60/min)" in head
    assert "sustains up to 0.667/s (40/min); breaks at 1/s (60/min) in ce_done" in head
    assert "Highest sustained rate: 0.667/s (40/min); capacity 0.7/s (42/min), 95% CI " in head
    assert "0.66–0.74/s" in head
    assert "1 invalid trial(s): p02-t01" in head
    assert "thresholds: 1 passed, 2 failed" in head


def test_table6_values_per_rate() -> None:
    text = _render(fx.make_metrics())
    lines = text.splitlines()
    row = next(ln for ln in lines if "1/s (60/min)" in ln and "ce_prep" in ln)
    assert row.split()[-6:] == ["1.05", "1.00", "1.10", "0.0742", "0.67", "0.1%"]
    finish = [ln.split() for ln in lines if ln.strip().startswith("ce_finish")]
    assert [f[1] for f in finish] == ["39.22", "262.90", "1796.15", "2861.87", "4696.42"]
    overall = [ln.split() for ln in lines if ln.strip().startswith("overall")]
    assert overall[0][1:5] == ["112.37", "106.75", "117.99", "5.62"]


def test_throughput_thresholds_and_validity_sections() -> None:
    text = _render(fx.make_metrics())
    tp = text.split("Throughput (jobs/s")[1]
    ce_done = next(ln for ln in tp.splitlines() if "TR7 ce_done" in ln)
    assert "0.700 ± 0.020" in ce_done
    assert "FAIL     latency.overall.mean" in text
    assert "PASS     throughput.client_done.expected_ratio" in text
    assert "not measured" in text
    assert "✗ p02-t01 invalid: background queue grew from 3 to 412 jobs" in text
    assert "timestamps too coarse to resolve ce_prep: p00-t00, p00-t01, p00-t02" in text
    fails = text.split("Failures per trial")[1]
    row100 = next(ln for ln in fails.splitlines() if "(100/min)" in ln)
    assert "31 ± 1 (93)" in row100


def test_rich_markup_in_data_is_printed_literally() -> None:
    m = fx.make_metrics()
    m["experiment"] = "[bold red]boom[/]"
    m["points"][2]["trials"][1]["validity"]["reasons"] = ["[link=http://x]click[/link]"]
    text = _render(m)
    assert "[bold red]boom[/]" in text
    assert "[link=http://x]click[/link]" in text


def test_no_bottleneck_no_thresholds() -> None:
    m = fx.make_metrics()
    m["bottleneck"] = {"stage": None, "segment": None, "from_rate_per_s": None,
                       "evidence": "", "statement": ""}  # fmt: skip
    m["knee"] = {"highest_sustained_rate_per_s": 100 / 60, "first_failing_rate_per_s": None,
                 "capacity_per_s": None, "capacity_ci95": None, "limited_by": None,
                 "statement": ""}  # fmt: skip
    m["thresholds"] = []
    text = _render(m)
    assert "no bottleneck: every stage kept up with the offered rate" in text
    assert "sustains every tested rate up to 1.67/s (100/min)" in text
    assert "capacity not determined" in text
    assert "no thresholds set" in text
    assert "Thresholds" not in text.split("no thresholds set")[1]


def test_wrong_schema_raises_results_error() -> None:
    with pytest.raises(ResultsError):
        _render({"schema": "other", "points": []})
