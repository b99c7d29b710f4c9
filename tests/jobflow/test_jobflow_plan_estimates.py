"""Job flow's duration estimates follow the spec and the backend's declared bounds: the
probe's bursts drain at the backend's throughput, the retry model's attempts come from its
admission bound. No timing is asserted."""

from __future__ import annotations

import pytest

from gridbench.jobflow.backends.registry import capabilities_of
from gridbench.jobflow.loads.retry import expected_attempts
from gridbench.jobflow.spec import load_spec_text, make_plan

REF = "name: x\nbackend: {type: reference, options: {preset: batched%s}}\n"


def seconds_per_trial(text: str, backend: str = "") -> float:
    spec, data = load_spec_text(REF % backend + text)
    return make_plan(spec, data).points[0].seconds_per_trial


def test_the_reference_grid_declares_its_bounds() -> None:
    caps = capabilities_of("reference", {"grid": {"ce": {"queue_limit": 8}}})
    assert caps.admission_limit == 8 and caps.throughput_per_s == pytest.approx(80.0)
    assert capabilities_of("reference", {"url": "http://h:1"}).admission_limit is None
    assert capabilities_of("noop", {}).throughput_per_s is None


def test_a_probe_s_burst_backlog_grows_with_its_requests() -> None:
    probe = "load: {model: probe, count: 3, gap: 1s, burst: {requests: %d, threads: [1, 2]}}\n"
    small, big = seconds_per_trial(probe % 100), seconds_per_trial(probe % 200)
    none = seconds_per_trial("load: {model: probe, count: 3, gap: 1s}\n")
    assert big - none == pytest.approx(2 * (small - none)) and small > none


def test_retry_attempts_follow_the_admission_bound() -> None:
    assert expected_attempts(5, 10, 8) == 1
    assert expected_attempts(35, 10, 8) == 5
    assert expected_attempts(35, 2, 8) == 3  # at most R + 1
    assert expected_attempts(35, 10, None) == 1
    retry = "load: {model: retry, jobs: %d, retries: 10}\njob: {runtime: 1s}\n"
    bound = ", grid: {ce: {queue_limit: 8}}"
    one = seconds_per_trial(retry % 8, bound)
    assert seconds_per_trial(retry % 16, bound) == pytest.approx(2 * one, rel=0.05)
    assert seconds_per_trial(retry % 16) < seconds_per_trial(retry % 16, bound)
