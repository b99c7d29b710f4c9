"""Open-loop schedules: counts, spacing, Poisson statistics, ramps and agent splits."""

from __future__ import annotations

import numpy as np
import pytest

from gridbench.jobflow.loads.open import OpenLoad, intended_offsets
from gridbench.jobflow.run.open_loop import split_for_agents
from gridbench.jobflow.specbase.model import TrialSpec


def test_uniform_rate() -> None:
    off = intended_offsets(OpenLoad(rate="4/s"), TrialSpec(duration=10))
    assert len(off) == 40
    assert np.all(np.diff(off) == 250_000_000)


def test_job_count_instead_of_duration() -> None:
    off = intended_offsets(OpenLoad(rate="10/s"), TrialSpec(jobs=7))
    assert len(off) == 7 and off[-1] == 600_000_000


def test_poisson_mean_gap() -> None:
    off = intended_offsets(OpenLoad(rate="100/s", arrival="poisson"), TrialSpec(jobs=20000), seed=3)
    gaps = np.diff(off) / 1e9
    assert gaps.mean() == pytest.approx(0.01, rel=0.03)
    assert gaps.std() == pytest.approx(0.01, rel=0.05)  # exponential: sd == mean


def test_steps_and_ramp() -> None:
    load = OpenLoad(schedule=[{"rate": "1/s", "duration": 10}, {"rate": "3/s", "duration": 10}])
    off = intended_offsets(load, TrialSpec())
    assert len(off) == 40
    assert (off < 10 * 10**9).sum() == 10
    ramp = intended_offsets(
        OpenLoad(ramp={"from": "0/s", "to": "10/s", "duration": 10}), TrialSpec()
    )
    assert len(ramp) == 50
    # half the jobs of a linear ramp from 0 arrive after 1/sqrt(2) of the duration
    assert np.searchsorted(ramp, int(10e9 / np.sqrt(2))) == pytest.approx(25, abs=1)


def test_split_across_agents_keeps_every_job_once() -> None:
    off = intended_offsets(OpenLoad(rate="10/s"), TrialSpec(duration=3))
    parts = split_for_agents(off, 4)
    assert sum(len(p) for p in parts) == len(off)
    assert sorted(np.concatenate(parts).tolist()) == off.tolist()


def test_poisson_window_count_is_random_with_the_right_mean() -> None:
    counts = [
        len(intended_offsets(OpenLoad(rate="10/s", arrival="poisson"), TrialSpec(duration=10), s))
        for s in range(300)
    ]
    assert np.mean(counts) == pytest.approx(100, abs=2.5)
    assert np.var(counts) == pytest.approx(100, rel=0.35)  # Poisson: variance == mean
