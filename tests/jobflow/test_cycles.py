"""Scheduling cycles in every job-flow analysis (issue 40; the seed's Maui dispatching
every 3.5 min, 64 jobs a cycle): detected from the start stamps, with the period, the
jobs per pass and the share of the latency spent waiting for the next pass, in the
headline when it dominates. Pure cases first, then the reference grid with a dispatch
period and a live Slurm whose main scheduler runs only every 3 s (``defer``)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import BIN
from gridbench.jobflow.analysis.cycles import DOMINANT, run_cycles, stage_cycles
from gridbench.jobflow.report.headline import headline
from slurm_cluster import SlurmCluster, running_cluster

SCHED_S = 3


def _passes(period: float, per: int, n_passes: int) -> tuple[Any, Any]:
    """Jobs ready evenly between passes, each started at the first pass after it."""
    rng = np.random.default_rng(5)
    ready = np.sort(rng.uniform(0.0, period * n_passes, per * n_passes))
    start = np.ceil(ready / period) * period
    return ready, start


def test_passes_every_3_5_s_of_64_jobs_are_read_from_the_starts() -> None:
    ready, start = _passes(3.5, 64, 12)
    latency = start - ready + 60.0  # a minute's run after the start
    c = stage_cycles(ready, start, start + 60.0, latency)
    assert c is not None
    assert c["period_s"] == pytest.approx(3.5, abs=0.01)
    assert c["jobs_per_pass"] == pytest.approx(ready.size / np.unique(start).size, abs=0.01)
    wait = start - ready
    assert c["pass_wait_mean_s"] == pytest.approx(wait.mean(), abs=1e-3)
    assert c["wait_share"] == pytest.approx(wait.sum() / latency.sum(), abs=1e-3)
    # the same starts a second later each: no passes any more
    spread = start + np.arange(start.size) * 1e-3 * 37 % 3.1
    assert stage_cycles(ready, spread, spread + 60.0, latency) is None


def test_evenly_spaced_starts_at_once_are_no_cycle() -> None:
    ready = np.arange(200) * 0.5  # one job every 0.5 s, started at once
    assert stage_cycles(ready, ready + 0.01, ready + 1.0, np.full(200, 1.0)) is None
    rng = np.random.default_rng(1)
    poisson = np.cumsum(rng.exponential(0.5, 200))
    assert stage_cycles(poisson, poisson + 0.01, poisson + 1.0, np.full(200, 1.0)) is None


def _metrics(share: float) -> dict[str, Any]:
    trial = {"period_s": 3.5, "jobs_per_pass": 64.0, "max_jobs_per_pass": 70}
    trial |= {"pass_wait_mean_s": 1.7, "wait_share": share, "stage": "s", "after": "r"}
    points = [{"trials": [{"cycles": trial}, {"cycles": None}]}]
    return {"load_model": "open", "cycles": run_cycles(points)}


def test_the_headline_says_it_when_it_dominates() -> None:
    big, small = _metrics(DOMINANT + 0.1), _metrics(DOMINANT - 0.1)
    assert big["cycles"]["trials"] == 1 and big["cycles"]["of_trials"] == 2
    said = [f.text for f in headline(big).findings]
    lead = "Scheduling cycles: s starts jobs in passes every 3.5 s (64 jobs"
    assert any(t.startswith(lead) for t in said), said
    assert not any("Scheduling cycles" in t for t in (f.text for f in headline(small).findings))
    assert run_cycles([{"trials": [{"cycles": None}]}]) is None


def _run(spec: str, root: Path) -> tuple[dict[str, Any], str]:
    (root / "spec.yaml").write_text(spec)
    env = dict(os.environ, GRIDBENCH_RESULTS=str(root / "results"), COLUMNS="200")
    p = subprocess.run(
        [str(BIN), "run", str(root / "spec.yaml")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    (run,) = list((root / "results").iterdir())
    return json.loads((run / "metrics.json").read_text()), p.stdout


def test_the_reference_grid_with_a_dispatch_period(tmp_path: Path) -> None:
    grid = "{preset: batched, grid: {bridge: {dispatch_s: 2}}}"
    m, out = _run(
        f"name: cycles\nbackend: {{type: reference, options: {grid}}}\njob: {{runtime: 1s}}\n"
        "load: {model: open, rate: 2/s}\ntrial: {duration: 10s}\n"
        "timeouts: {status_interval: 0.1s, settle: 30s}\n"
        "collectors: [{type: edgi, reports: auto, poll: 1s}]\n",
        tmp_path,
    )
    c = m["cycles"]
    assert c is not None and c["stage"] == "bridge_submit", c
    assert c["period_s"] == pytest.approx(2.0, abs=0.05)
    assert 3.0 <= c["jobs_per_pass"] <= 5.0  # 2 jobs/s for 2 s a pass
    # a job waits a pass's half on average: about 1 s of its 2.5-3 s
    assert 0.7 <= c["pass_wait_mean_s"] <= 1.3 and c["wait_share"] >= DOMINANT, c
    assert "Scheduling cycles: bridge_submit starts jobs in passes every 2 s" in out


def test_no_cycle_without_a_dispatch_period(jobflow_run: Path) -> None:
    m = json.loads((jobflow_run / "metrics.json").read_text())
    assert m["cycles"] is None
    assert all(t.get("cycles") is None for p in m["points"] for t in p["trials"])


@pytest.fixture(scope="module")
def slurm_cycles() -> Iterator[SlurmCluster]:
    """A Slurm whose main scheduler starts jobs only at its passes every 3 s."""
    # sched_min_interval (µs) too: with defer alone a finishing job still sets off a pass,
    # so 1 s jobs were started on a 1 s grid
    params = f"defer,sched_interval={SCHED_S},sched_min_interval={SCHED_S * 1_000_000}"
    with running_cluster("gb-slurm-cycles-", scheduler_parameters=params) as cluster:
        yield cluster


def test_slurm_with_a_long_scheduler_interval(slurm_cycles: SlurmCluster, tmp_path: Path) -> None:
    m, out = _run(
        f"name: slurm-cycles\nbackend: {{type: slurm, options: {{conf: {slurm_cycles.conf}}}}}\n"
        'job: {command: [sleep, "1"], runtime: 1s}\nload: {model: open, rate: 2/s}\n'
        "trial: {duration: 10s}\ntimeouts: {status_interval: 0.2s, drain: 40s}\n",
        tmp_path,
    )
    c = m["cycles"]
    assert c is not None and c["stage"] == "slurm_start", c
    assert c["period_s"] == pytest.approx(SCHED_S, rel=0.1)
    assert c["jobs_per_pass"] >= 3.0  # 2 jobs/s, a pass every 3 s
    assert c["wait_share"] >= DOMINANT and c["dominant"], c
    assert "Scheduling cycles: slurm_start starts jobs in passes every" in out
