"""A misspelled threshold metric is caught before anything runs, with a "did you mean"
(issue 21, item 3): against the metrics schema and the backend's stage chain."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.spec.threshold_paths import threshold_problem
from gridbench.schema import OpenModel, path_problem

ROOT = Path(__file__).resolve().parents[2]
CHAIN = create_backend("local", {}).stage_chain()


@pytest.mark.parametrize(
    ("metric", "instead"),
    [
        ("latency.overal.p99", "latency.overall.p99"),
        ("latency.overall.p99x", "latency.overall.p99"),
        ("latencyy.overall.p99", "latency.overall.p99"),
        ("throughput.local_strat.steady", "throughput.local_start.steady"),
        ("summary.latency.overal.ci95", "summary.latency.overall.ci95"),
        ("knee.capacty_per_s", "knee.capacity_per_s"),
        ("failure_rate.x", None),
    ],
)
def test_a_misspelling_is_named_with_what_was_meant(metric: str, instead: str | None) -> None:
    problem = threshold_problem(metric, CHAIN)
    assert problem is not None
    assert problem[1] == instead


@pytest.mark.parametrize(
    "metric",
    [
        "latency.overall.p99",
        "latency.queue_wait.mean",
        "throughput.overall.average",
        "throughput.client_done.steady",
        "jobs.completed",
        "failure_rate",
        "failures.rate",
        "failures.timeout",
        "validity.late_share",
        "queues.queue_wait.growth_per_s",
        "summary.throughput.client_done.mean",
        "summary.valid_trials",
        "experiment.validity.valid",
        "knee.capacity_per_s",
        "bottleneck.stage",
        "latency.a_collectors_stage.mean",  # not a near miss of anything known: allowed
    ],
)
def test_real_paths_pass(metric: str) -> None:
    assert threshold_problem(metric, CHAIN) is None


def test_the_generic_walker_knows_lists_and_single_values() -> None:
    class Inner(OpenModel):
        x: float | None = None

    class Doc(OpenModel):
        items: list[Inner] = []  # noqa: RUF012 (pydantic copies defaults)
        free: dict[str, Inner] = {}  # noqa: RUF012

    assert path_problem(Doc, "items.0.x") is None
    assert path_problem(Doc, "items.first.x") == (
        "'items' is a list: 'first' is not an index",
        None,
    )
    assert path_problem(Doc, "free.anything.x") is None
    assert path_problem(Doc, "items.0.x.y") == (
        "'items.0.x' is a single value: 'y' cannot follow it",
        None,
    )


def test_validate_refuses_a_misspelled_threshold(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "local-sleep-ramp.yaml").read_text()
    spec = tmp_path / "typo.yaml"
    spec.write_text(text.replace("latency.overall.p99", "latency.overal.p99"))
    p = subprocess.run(
        [str(BIN), "validate", str(spec)], env=cli_env(tmp_path), capture_output=True, text=True
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "thresholds.0.metric" in p.stderr
    assert "did you mean 'latency.overall.p99'?" in p.stderr
