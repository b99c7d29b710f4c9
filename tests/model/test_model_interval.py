"""A prediction's confidence interval (issue 40): model check gives each latency row the
predicted mean's 95% interval over its repetitions and whether it covers the measured
figure, or says why not (pure: metrics documents made here)."""

from __future__ import annotations

from typing import Any

import pytest

from gridbench.model.check import compare


def _metrics(latencies: list[float]) -> dict[str, Any]:
    trials = [{"latency": {"overall": {"mean": x}}, "throughput": {}} for x in latencies]
    return {
        "knee": {"highest_sustained_rate_per_s": 2.0, "capacity_per_s": None},
        "bottleneck": {},
        "points": [{"offered_rate_per_s": 1.0, "trials": trials}],
    }


def _row(measured: list[float], predicted: list[float]) -> Any:
    (row,) = [r for r in compare(_metrics(measured), _metrics(predicted)).rows if r.point == "1/s"
              and r.figure.startswith("latency")]  # fmt: skip
    return row


def test_an_interval_that_covers_the_measurement() -> None:
    r = _row([1.50], [1.45, 1.55, 1.50])
    # t(0.975, 2) = 4.303; sd 0.05 over 3: ±0.1242
    assert r.ci95 == pytest.approx(4.3027 * 0.05 / 3**0.5, rel=1e-3)
    assert r.covered is True and r.why == ""


def test_one_measured_trial_outside_the_interval_says_why() -> None:
    r = _row([2.0], [1.45, 1.55, 1.50])
    assert r.covered is False
    assert "0.5 s below the measurement, beyond its" in r.why
    assert "the measured point is one trial" in r.why


def test_several_measured_trials_say_whether_both_intervals_cover_it() -> None:
    wide = _row([1.2, 2.2, 1.7], [1.45, 1.55, 1.50])
    assert wide.covered is False and "the two intervals together do cover it" in wide.why
    tight = _row([2.0, 2.01, 1.99], [1.45, 1.55, 1.50])
    assert tight.covered is False and "a bias of the model" in tight.why


def test_one_repetition_has_no_interval() -> None:
    r = _row([1.5], [1.5])
    assert r.ci95 is None and r.covered is None and "--reps 2" in r.why
