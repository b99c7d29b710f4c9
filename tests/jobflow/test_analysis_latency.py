"""Latency formulas (METHODS 1.2) on 10 jobs with hand-chosen stamps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.latency import latency_durations, latency_stats
from gridbench.jobflow.analysis.reduce import timeline_of
from gridbench.jobflow.analysis.timelines import job_times, timeline_stages
from gridbench.jobflow.analysis.trial import analyze_trial
from gridbench.jobflow.events.chain import Segment

CHAIN = fx.simple_chain(
    "submit",
    "mid",
    "client_done",
    segments=[Segment("s1", "submit", "mid"), Segment("s2", "mid", "client_done")],
)
D1 = np.arange(1.0, 11.0)  # s1 durations 1..10 s


def _times(with_intended: bool = True) -> dict[str, np.ndarray]:
    i = np.arange(10.0)
    t = {"intended": i, "submit": i + 0.1}
    t["submit_ack"] = t["submit"] + 0.05
    t["mid"] = t["submit"] + D1
    t["client_done"] = t["mid"] + 2.0
    if not with_intended:
        del t["intended"]
    return t


def _stats(t: dict[str, np.ndarray], failures: dict[int, str] | None = None) -> dict:
    tl = timeline_of(fx.times_frame(t, failures=failures), timeline_stages(CHAIN.names()))
    return latency_stats(latency_durations(job_times(tl, fx.T0), CHAIN))


def test_segment_stats_hand_values() -> None:
    s = _stats(_times())
    s1 = s["s1"]
    assert s1["n"] == 10
    assert s1["mean"] == pytest.approx(5.5)
    assert s1["min"] == pytest.approx(1.0) and s1["max"] == pytest.approx(10.0)
    assert s1["std"] == pytest.approx(math.sqrt(82.5 / 9))
    assert s1["p50"] == pytest.approx(5.5)
    assert s["s2"]["mean"] == pytest.approx(2.0) and s["s2"]["std"] == pytest.approx(0.0, abs=1e-9)


def test_overall_from_intended_other_and_client_latencies() -> None:
    s = _stats(_times())
    # overall = client_done - intended = 0.1 + d1 + 2
    assert s["overall"]["mean"] == pytest.approx(7.6)
    assert s["overall"]["min"] == pytest.approx(3.1) and s["overall"]["max"] == pytest.approx(12.1)
    # other = overall - (s1 + s2) = the 0.1 s the submitter started late
    assert s["other"]["mean"] == pytest.approx(0.1) and s["other"]["n"] == 10
    assert s["running_time"]["mean"] == pytest.approx(7.5)  # the seed's T8 - T1
    assert s["submit_lag"]["mean"] == pytest.approx(0.1)
    assert s["submit_call"]["mean"] == pytest.approx(0.05)


def test_overall_falls_back_to_first_stage_without_intended() -> None:
    s = _stats(_times(with_intended=False))
    assert s["overall"]["mean"] == pytest.approx(7.5)
    assert s["other"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert s["submit_lag"]["n"] == 0 and s["submit_lag"]["mean"] is None


def test_failed_jobs_leave_overall_but_count_in_segments() -> None:
    t = _times()
    for k in t:
        t[k] = np.append(t[k], t[k][-1] + 1)
    t["mid"][-1] = t["submit"][-1] + 100.0
    t["client_done"][-1] = t["mid"][-1] + 2.0
    s = _stats(t, failures={10: "job_failed"})
    assert s["s1"]["n"] == 11 and s["s1"]["max"] == pytest.approx(100.0)
    assert s["overall"]["n"] == 10 and s["overall"]["max"] == pytest.approx(12.1)


def test_other_is_overall_minus_components_per_job_on_edgi_chain() -> None:
    t = fx.simulate_edgi(0.5, 50, seed=2)
    res = analyze_trial(fx.info(rate=0.5, planned=50), fx.times_frame(t))
    lat = res.metrics["latency"]
    comp = sum(lat[k]["mean"] for k in ("ce_prep", "bridge_prep", "dg", "ce_finish"))
    # means are linear, so mean(other) = mean(overall) - sum of component means
    assert lat["other"]["mean"] == pytest.approx(lat["overall"]["mean"] - comp, abs=1e-6)
    expect = np.mean(
        (t["client_done"] - t["intended"])
        - (t["ce_submit"] - t["ce_entry"])
        - (t["bridge_submit"] - t["bridge_entry"])
        - (t["bridge_done"] - t["bridge_submit"])
        - (t["ce_done"] - t["bridge_done"])
    )
    assert lat["other"]["mean"] == pytest.approx(expect, abs=1e-6)
    assert set(lat) >= {
        "ce_prep",
        "bridge_prep",
        "dg",
        "ce_finish",
        "overall",
        "other",
        "submit_lag",
        "submit_call",
    }
