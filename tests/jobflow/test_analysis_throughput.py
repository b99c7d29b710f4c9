"""Throughput formulas (METHODS 1.3): punctual, EDGI average, steady, windowed, warm-up."""

from __future__ import annotations

import numpy as np
import pytest

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.config import AnalysisConfig
from gridbench.jobflow.analysis.throughput import (
    default_window,
    edgi_average,
    punctual,
    steady_rate,
    windowed_rate,
)
from gridbench.jobflow.analysis.trial import analyze_trial
from gridbench.jobflow.analysis.warmup import steady_state_fraction, trimmed_count

CHAIN = fx.simple_chain("submit", "done")


def test_punctual_hand_values() -> None:
    t = np.array([2.0, 3.0, 4.0, 5.0])
    assert punctual(t, 0.0).tolist() == pytest.approx([1 / 2, 2 / 3, 3 / 4, 4 / 5])
    # measured from the upstream minimum, not from zero
    assert punctual(t, 1.0).tolist() == pytest.approx([1 / 1, 2 / 2, 3 / 3, 4 / 4])
    assert np.isnan(punctual(np.array([1.0, 2.0]), 1.0)[0])  # t_n == t0: undefined


def test_edgi_average_trims_floor_015_n() -> None:
    assert trimmed_count(10, 0.15) == 1
    assert trimmed_count(20, 0.15) == 3  # 0.15*20 is 3 in exact arithmetic
    assert trimmed_count(7, 0.15) == 1
    p = np.array([n / (n + 1) for n in range(1, 11)])
    # N=10: mean of P_2..P_10
    assert edgi_average(p, 0.15) == pytest.approx(np.mean([n / (n + 1) for n in range(2, 11)]))
    p20 = np.arange(1.0, 21.0)
    assert edgi_average(p20, 0.15) == pytest.approx(np.mean(np.arange(4.0, 21.0)))  # P_4..P_20
    assert edgi_average(p20, 0.0) == pytest.approx(10.5)


def test_trial_average_throughput_per_stage_and_overall() -> None:
    i = np.arange(10.0)
    t = {"intended": i, "submit": i.copy(), "done": i + 2.0}
    m = analyze_trial(fx.info(CHAIN, rate=1.0, planned=10), fx.times_frame(t)).metrics
    tp = m["throughput"]
    # done: t_n = n + 1, t0 = min(submit) = 0  ->  P_n = n / (n + 1)
    hand = np.mean([2 / 3, 3 / 4, 4 / 5, 5 / 6, 6 / 7, 7 / 8, 8 / 9, 9 / 10, 10 / 11])
    assert tp["done"]["average"] == pytest.approx(hand)
    assert tp["overall"]["average"] == pytest.approx(hand)  # last stage from min(first stage)
    assert tp["done"]["edgi_ratio"] == pytest.approx(hand)  # offered 1/s
    assert tp["done"]["count"] == 10
    # submit from min(intended) = 0: t_n = n - 1, so P_1 is undefined and P_n = n / (n - 1)
    assert tp["submit"]["average"] == pytest.approx(np.mean([n / (n - 1) for n in range(2, 11)]))


def _steady(done: np.ndarray, n: int, rate: float) -> dict:
    intended = np.arange(n) / rate
    t = {"intended": intended, "submit": intended + 0.001, "done": done}
    m = analyze_trial(fx.info(CHAIN, rate=rate, planned=n), fx.times_frame(t)).metrics
    return m["throughput"]["done"]


def test_steady_is_offered_for_a_stage_that_only_delays() -> None:
    n, rate = 400, 2.0
    rng = np.random.default_rng(1)
    done = np.arange(n) / rate + 30.0 + rng.uniform(0, 5, n)
    tp = _steady(done, n, rate)
    assert tp["steady"] == pytest.approx(rate, rel=0.02)
    assert tp["expected_ratio"] == pytest.approx(1.0, abs=0.02)
    assert tp["edgi_ratio"] < 0.9  # the seed's average is dragged down by the 30 s latency


def test_steady_is_capacity_for_a_bottleneck() -> None:
    n, rate = 400, 2.0
    done = fx.fifo(np.arange(n) / rate + 1.0, 1 / 1.5)  # serves 1.5 jobs/s
    tp = _steady(done, n, rate)
    assert tp["steady"] == pytest.approx(1.5, rel=0.02)
    assert tp["expected_ratio"] == pytest.approx(0.75, abs=0.02)


def test_steady_rate_slope_and_short_windows() -> None:
    t = np.arange(0.0, 100.0, 0.25)  # 4/s
    assert steady_rate(t, 10.0, 90.0) == pytest.approx(4.0)
    assert steady_rate(t, 10.0, 10.3) is None  # fewer than 3 passages
    assert steady_rate(t, 5.0, 5.0) is None


def test_windowed_rate_hand_values() -> None:
    t = np.array([0.5, 1.5, 1.7, 3.2])
    got = windowed_rate(t, np.array([1.0, 2.0, 3.0, 4.0]), 1.0)
    assert got.tolist() == [1.0, 2.0, 0.0, 1.0]  # passages in (tau - 1, tau]
    assert default_window(10.0) == 1.0 and default_window(300.0) == 10.0


def test_steady_state_warmup_rule() -> None:
    slow = np.arange(0.0, 20.0, 1.0)  # 20 completions at 1/s while warming up
    fast = 20.0 + np.arange(0.0, 100.0, 0.2)  # then 5/s
    done = np.concatenate([slow, fast])
    f = steady_state_fraction(done, 5.0)
    assert f == pytest.approx(20 / done.size)
    i = np.arange(done.size, dtype=float)
    t = {"intended": i * 0.2, "submit": i * 0.2, "done": done}
    cfg = AnalysisConfig(warmup_method="steady_state", window_s=5.0)
    m = analyze_trial(fx.info(CHAIN, rate=5.0, planned=done.size), fx.times_frame(t), cfg=cfg)
    w = m.metrics["warmup"]
    assert w["method"] == "steady_state"
    assert w["fraction"] == pytest.approx(20 / done.size)
    assert w["trimmed_jobs"] == 20
    assert m.metrics["window_s"] == 5.0
