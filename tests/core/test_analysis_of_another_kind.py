"""Every family's analysis refuses a run of another family with one error naming the
run's experiment.json and its kind (``RunDir.read_experiment_of``), before it reads any
record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import ResultsError
from gridbench.io.metrics import build_metrics as io_metrics
from gridbench.messaging.analysis import build_metrics as net_metrics
from gridbench.store.layout import RunDir
from gridbench.study.analysis import analyze_and_write as study_metrics


@pytest.mark.parametrize(
    ("analyse", "family"),
    [(io_metrics, "storage (io)"), (net_metrics, "messaging (net)"), (study_metrics, "study")],
)
def test_a_run_of_another_family_is_refused(
    tmp_path: Path, analyse: Callable[[RunDir], Any], family: str
) -> None:
    run = RunDir.create(tmp_path, "other")
    run.update_experiment(kind="jobflow", name="other", status="done")
    with pytest.raises(ResultsError) as exc:
        analyse(run)
    assert exc.value.message == f"not a {family} results directory (kind 'jobflow')"
    assert exc.value.where == str(run.experiment_file)
    assert exc.value.fix is not None and "gridbench analyze RUN" in exc.value.fix
    assert not run.metrics_file.exists()


def test_a_run_of_its_own_family_is_read(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "mine")
    run.update_experiment(kind="io", name="mine", status="complete")
    exp = run.read_experiment_of("io", "storage (io)")
    assert (exp["kind"], exp["name"], exp["status"]) == ("io", "mine", "complete")
