"""The NTP-style offset estimate: minimum-delay sample, exact offset and bound, drift."""

from __future__ import annotations

import asyncio
import time

import pytest

from gridbench.errors import GridbenchError
from gridbench.jobflow.run.clock_sync import agent_half, drift_ppm, estimate, measure


def _sample(t1: int, offset: int, out: int, back: int, held: int) -> tuple[int, int, int, int]:
    t2 = t1 + out + offset
    t3 = t2 + held
    t4 = t3 - offset + back
    return t1, t2, t3, t4


def test_symmetric_path_gives_the_exact_offset() -> None:
    est = estimate([_sample(10**18, 2_500_000_000, 400_000, 400_000, 50_000)])
    assert est.offset_ns == 2_500_000_000
    assert est.delay_ns == 800_000
    assert est.bound_ns == 400_000


def test_the_minimum_delay_sample_is_kept_and_the_truth_lies_within_its_bound() -> None:
    truth = -1_234_567
    samples = [
        _sample(10**18 + k * 10**7, truth, out, back, 20_000)
        for k, (out, back) in enumerate(
            [(9_000_000, 100_000), (300_000, 500_000), (2_000_000, 2_000_000)]
        )
    ]
    est = estimate(samples)
    assert est.delay_ns == 800_000
    assert abs(est.offset_ns - truth) <= est.bound_ns
    assert est.offset_ns == truth - 100_000  # the asymmetry's half, inside the bound


def test_no_samples_is_a_clear_error() -> None:
    with pytest.raises(GridbenchError, match="no clock probe"):
        estimate([])


def test_drift_between_two_estimates() -> None:
    a = estimate([_sample(10**18, 1_000_000, 1000, 1000, 0)])
    b = estimate([_sample(10**18 + 10**9, 1_050_000, 1000, 1000, 0)])
    drift = drift_ppm(a, b)
    assert drift is not None and drift == pytest.approx(50.0, abs=0.01)
    assert drift_ppm(a, a) is None


def test_measure_against_the_local_clock_finds_no_offset() -> None:
    async def exchange() -> tuple[int, int]:
        await asyncio.sleep(0)
        return agent_half()

    est = asyncio.run(measure(exchange, probes=8))
    assert est.probes == 8
    assert abs(est.offset_ns) <= est.bound_ns + 1
    assert abs(est.at_ns - time.time_ns()) < 60 * 10**9


def test_a_probe_that_saw_a_clock_step_is_ignored() -> None:
    good = _sample(10**18, 7_000, 500_000, 500_000, 10_000)
    # the controller's clock stepped back during the probe: t4 < t1, so δ < 0 would win
    t = 10**18 + 10**8
    stepped = (t, t + 7_100, t + 7_200, t - 1_000)
    # the agent's clock stepped back between its two stamps: t3 < t2
    agent_step = (t, t + 5_000_000, t - 5_000_000, t + 20)
    est = estimate([stepped, agent_step, good])
    assert est.offset_ns == 7_000
    assert est.delay_ns == 1_000_000
    assert est.probes == 3


def test_only_inconsistent_probes_is_a_clear_error() -> None:
    t = 10**18
    with pytest.raises(GridbenchError, match="none of the 1 clock probes is consistent"):
        estimate([(t, t + 10, t + 5, t + 20)])
