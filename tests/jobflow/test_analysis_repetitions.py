"""Repetitions (METHODS 1.10): summaries over valid trials, outliers with reasons."""

from __future__ import annotations

from typing import Any

import pytest

from gridbench.jobflow.analysis.repetitions import find_outliers, point_summary


def _trial(
    tid: str,
    steady: float,
    *,
    valid: bool = True,
    bg: int | None = 0,
    lat: float = 10.0,
    fails: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "trial_id": tid,
        "valid": valid,
        "throughput": {
            "done": {
                "steady": steady,
                "average": steady * 0.9,
                "expected_ratio": steady,
                "edgi_ratio": steady * 0.9,
            }
        },
        "latency": {"overall": {"mean": lat, "p99": lat * 2}},
        "failures": fails or {},
        "queues": {"q": {"max": 3, "final": 0, "growth_per_s": 0.0}},
        "validity": {"reasons": [] if valid else ["41% of the planned submissions started late"]},
        "background_queue": {"start": bg, "end": bg},
    }


def test_summary_statistics_by_hand() -> None:
    trials = [_trial(f"t{i}", v) for i, v in enumerate([1.0, 2.0, 3.0, 4.0])]
    s = point_summary(trials, "done")
    r = s["throughput"]["done"]
    assert r["n"] == 4 and r["mean"] == pytest.approx(2.5)
    assert r["std"] == pytest.approx((5 / 3) ** 0.5)
    assert r["ci95"] == pytest.approx(3.1824463053 * (5 / 3) ** 0.5 / 2)
    assert s["throughput_edgi"]["done"]["mean"] == pytest.approx(2.25)
    assert s["latency"]["overall"]["mean"] == pytest.approx(10.0)
    assert s["queues"]["q"]["max"]["mean"] == 3


def test_invalid_trials_are_excluded_and_listed() -> None:
    trials = [_trial("a", 1.0), _trial("b", 0.9), _trial("bad", 100.0, valid=False)]
    s = point_summary(trials, "done")
    assert s["throughput"]["done"]["n"] == 2
    assert s["throughput"]["done"]["mean"] == pytest.approx(0.95)
    assert s["valid_trials"] == 2 and s["invalid_trials"] == 1 and s["used_trials"] == 2
    assert s["excluded"] == [
        {"trial_id": "bad", "reason": "invalid: 41% of the planned submissions started late"}
    ]


def test_outlier_flagged_and_kept_without_interference() -> None:
    trials = [_trial(f"t{i}", v) for i, v in enumerate([1.0, 1.01, 0.99, 1.0, 0.5])]
    out = find_outliers(trials, ["throughput.done.steady"])
    assert len(out) == 1
    o = out[0]
    assert o["trial_id"] == "t4" and o["value"] == 0.5 and o["kept"] is True
    assert "robust SDs from the median 1" in o["reason"] and "kept" in o["reason"]
    s = point_summary(trials, "done")
    assert s["throughput"]["done"]["n"] == 5  # kept outliers stay in


def test_outlier_explained_by_background_load_is_dropped() -> None:
    trials = [_trial(f"t{i}", v) for i, v in enumerate([1.0, 1.01, 0.99, 1.0])]
    trials.append(_trial("busy", 0.5, bg=40))
    s = point_summary(trials, "done")
    busy = [o for o in s["outliers"] if o["trial_id"] == "busy"]
    assert busy and not busy[0]["kept"]
    assert "40 other jobs queued" in busy[0]["reason"] and "dropped" in busy[0]["reason"]
    assert s["throughput"]["done"]["n"] == 4
    assert s["throughput"]["done"]["mean"] == pytest.approx(1.0)
    assert {"trial_id": "busy", "reason": "outlier explained by outside interference"} in (
        s["excluded"]
    )


def test_no_outliers_among_near_identical_or_few_trials() -> None:
    same = [_trial(f"t{i}", 1.0 + i * 1e-4) for i in range(5)]
    assert find_outliers(same, ["throughput.done.steady"]) == []
    two = [_trial("a", 1.0), _trial("b", 5.0)]
    assert find_outliers(two, ["throughput.done.steady"]) == []


def test_failures_summary_counts_missing_kinds_as_zero() -> None:
    trials = [_trial("a", 1.0, fails={"submit_timeout": 4}), _trial("b", 1.0)]
    s = point_summary(trials, "done")
    assert s["failures"]["submit_timeout"]["mean"] == pytest.approx(2.0)
    assert s["failures"]["submit_timeout"]["n"] == 2
