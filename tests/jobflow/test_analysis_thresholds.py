"""Thresholds: pass, fail, worst trial, point selection, unknown paths never crash."""

from __future__ import annotations

from typing import Any

import pytest

from gridbench.jobflow.analysis.thresholds import evaluate_threshold, evaluate_thresholds
from gridbench.thresholds import ThresholdSpec


def _trial(tid: str, p99: float, valid: bool = True) -> dict[str, Any]:
    return {
        "trial_id": tid,
        "valid": valid,
        "latency": {"overall": {"p99": p99}},
        "validity": {"client_bound": False},
    }


METRICS: dict[str, Any] = {
    "points": [
        {
            "index": 0,
            "point": {"rate": 1.0},
            "trials": [
                _trial("p00-t00", 20.0),
                _trial("p00-t01", 35.0),
                _trial("p00-t02", 1000.0, valid=False),
            ],
            "summary": {"throughput": {"done": {"mean": 0.9}}},
        },
        {
            "index": 1,
            "point": {"rate": 2.0},
            "trials": [_trial("p01-t00", 10.0), _trial("p01-t01", 12.0)],
            "summary": {"throughput": {"done": {"mean": 1.7}}},
        },
    ],
    "knee": {"capacity_per_s": 0.83, "first_failing_rate_per_s": None},
    "validity": {"valid": True},
}


def ev(**t: Any) -> dict[str, Any]:
    return evaluate_threshold(METRICS, t)


def test_trial_path_fails_on_the_worst_valid_trial() -> None:
    r = ev(metric="latency.overall.p99", op="<", value=30)
    assert r["passed"] is False and r["actual"] == 35.0
    assert r["where"] == "point 0 (rate=1.0), trial p00-t01"
    assert r["reason"] == "35 is not < 30"


def test_point_selection() -> None:
    one = ev(metric="latency.overall.p99", op="<", value=30, point=1)
    assert one["passed"] and one["actual"] == 12.0  # the worst trial of point 1
    anyp = ev(metric="latency.overall.p99", op="<", value=30, point="any")
    assert anyp["passed"] and anyp["actual"] == 12.0
    assert ev(metric="latency.overall.p99", op="<=", value=35)["passed"]  # invalid 1000 ignored
    missing = ev(metric="latency.overall.p99", op="<", value=30, point=7)
    assert not missing["passed"] and "no point with index 7" in missing["reason"]


def test_summary_and_experiment_paths() -> None:
    assert ev(metric="summary.throughput.done.mean", op=">=", value=0.8)["passed"]
    low = ev(metric="summary.throughput.done.mean", op=">=", value=1.0)
    assert (
        not low["passed"]
        and low["actual"] == 0.9
        and low["where"] == ("point 0 (rate=1.0), summary")
    )
    assert ev(metric="knee.capacity_per_s", op=">", value=0.8)["passed"]
    assert ev(metric="experiment.validity.valid", op="==", value=1)["passed"]
    assert ev(metric="validity.client_bound", op="==", value=0)["passed"]  # booleans as 0/1


def test_unknown_paths_ops_and_null_values_fail_with_reasons() -> None:
    r = ev(metric="latency.overal.p99", op="<", value=30)
    assert r["passed"] is False and r["actual"] is None
    assert "unknown metric path 'latency.overal.p99'" in r["reason"]
    assert "no 'overal' under latency" in r["reason"]
    assert "unknown metric path" in ev(metric="knee.nope", op="<", value=1)["reason"]
    assert "unknown operator" in ev(metric="knee.capacity_per_s", op="~", value=1)["reason"]
    null = ev(metric="knee.first_failing_rate_per_s", op=">", value=1)
    assert not null["passed"] and "no numeric value" in null["reason"]
    assert "not a number" in ev(metric="knee.capacity_per_s", op="<", value="x")["reason"]
    assert "names no metric" in evaluate_threshold(METRICS, {})["reason"]


def test_spec_models_and_lists() -> None:
    specs = [
        ThresholdSpec(metric="latency.overall.p99", op="<", value=40),
        ThresholdSpec(metric="knee.capacity_per_s", op=">=", value=1, point="all"),
    ]
    out = evaluate_thresholds(METRICS, specs)
    assert [r["passed"] for r in out] == [True, False]
    assert out[0]["value"] == 40 and out[1]["actual"] == pytest.approx(0.83)


def test_point_without_valid_trials() -> None:
    m = {"points": [{"index": 0, "trials": [_trial("a", 1.0, valid=False)], "summary": {}}]}
    r = evaluate_threshold(m, {"metric": "latency.overall.p99", "op": "<", "value": 5})
    assert not r["passed"] and r["reason"] == "the point has no valid trial"


def test_failure_counts_and_rate() -> None:
    t = _trial("a", 1.0)
    t.update(failures={"submit_timeout": 3}, failure_rate=0.03)
    m = {"points": [{"index": 0, "trials": [t], "summary": {}}]}

    def one(metric: str, op: str, value: float) -> dict[str, Any]:
        return evaluate_threshold(m, {"metric": metric, "op": op, "value": value})

    assert one("failures.submit_timeout", "==", 3)["passed"]
    lost = one("failures.lost", "==", 0)  # a kind that did not occur counts 0
    assert lost["passed"] and lost["actual"] == 0
    assert one("failures.rate", "<=", 0.05)["passed"]
    assert one("failure_rate", "<=", 0.05)["actual"] == pytest.approx(0.03)
    assert not one("failures.rate", "<", 0.01)["passed"]
