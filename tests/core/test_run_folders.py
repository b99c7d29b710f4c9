"""The store knows no family: a run folder is generic, and what only job flow's runs have
(``trials/``, the ``backend``, ``load_model`` and ``trials_*`` fields of experiment.json)
is job flow's (``gridbench.jobflow.events.run_folder``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gridbench.store
from gridbench.errors import ResultsError
from gridbench.family import family
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.store.layout import RunDir
from gridbench.study.load import load_study_spec_text
from gridbench.study.runs import create_study_run

STUDY = """\
name: folders-study
purpose: Which tool is easier?
tools:
  - {id: alpha, title: Alpha, tasks: [{id: t1, title: T1, instructions: Do it.}]}
  - {id: beta, title: Beta, tasks: [{id: t1, title: T1, instructions: Do it.}]}
participants: [P01, P02]
comparisons: [{a: alpha, b: beta}]
"""


def test_no_store_module_names_a_family_field() -> None:
    store = Path(gridbench.store.__file__).parent
    for path in sorted(store.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"\b(trials?_\w+|trials|backend|load_model)\b", text)
        assert not found, f"{path.name} names {sorted(set(found))}"


def test_a_generic_run_folder_has_no_trials(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "plain")
    assert run.path.is_dir() and list(run.path.iterdir()) == []


def test_a_job_flow_run_folder_has_its_trials(tmp_path: Path) -> None:
    run = JobFlowRun.create(tmp_path, "jf")
    assert (run.path / "trials").is_dir()
    assert run.trial_ids() == []
    (run.trial_dir("p00-t00")).mkdir()
    (run.path / "trials" / "stray.txt").write_text("x")
    (run.path / "trials" / "linked").symlink_to(tmp_path)  # never read from outside
    assert run.trial_ids() == ["p00-t00"]
    assert JobFlowRun.of(RunDir(run.path)).trial_ids() == ["p00-t00"]


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("backend", 5, "'backend' is not a string"),
        ("load_model", ["open"], "'load_model' is not a string"),
        ("trials_planned", "4", "'trials_planned' is not an integer"),
        ("trials_done", True, "'trials_done' is not an integer"),
    ],
)
def test_job_flow_checks_its_own_fields(
    tmp_path: Path, field: str, value: object, reason: str
) -> None:
    run = JobFlowRun.create(tmp_path, "jf")
    run.experiment_file.write_text(json.dumps({"name": "jf", "kind": "jobflow", field: value}))
    # the store reads any family's fields without judging them ...
    assert RunDir(run.path).read_experiment()[field] == value
    # ... job flow does, reading its run and listing it
    with pytest.raises(ResultsError, match=reason):
        run.read_experiment()
    entry = RunDir(run.path).read_experiment() | {"path": str(run.path)}
    with pytest.raises(ResultsError, match=reason):
        family("jobflow").catalogue(entry)


def test_job_flow_runs_have_trials_other_families_do_not(
    jobflow_run: Path, io_run: Path, net_run: Path, tmp_path: Path
) -> None:
    assert JobFlowRun(jobflow_run).trial_ids() == ["p00-t00", "p01-t00"]
    assert not (io_run / "trials").exists()
    assert not (net_run / "trials").exists()
    spec, data = load_study_spec_text(STUDY, "spec")
    for out in (None, tmp_path / "imported"):
        study = create_study_run(tmp_path / "results", spec, data, delivery="import", out=out)
        assert (study.path / "experiment.json").is_file()
        assert not (study.path / "trials").exists()
