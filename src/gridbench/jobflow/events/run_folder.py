"""A job-flow run's folder: the generic run folder (``gridbench.store.layout.RunDir``)
plus what only job flow's runs have: ``trials/<trial id>/`` and the catalogue fields
``backend``, ``load_model``, ``trials_planned`` and ``trials_done`` in experiment.json.

The store knows no family; job flow makes, reads and checks its trial folders here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

# job flow's catalogue fields of experiment.json and their check (light, for the list)
from gridbench.jobflow.record import INT_FIELDS as INT_FIELDS
from gridbench.jobflow.record import TEXT_FIELDS as TEXT_FIELDS
from gridbench.jobflow.record import check_jobflow_experiment as check_jobflow_experiment
from gridbench.store.layout import RunDir

#: The folder under a job-flow run that holds one folder per trial.
TRIALS_DIR = "trials"


@dataclass(frozen=True)
class JobFlowRun(RunDir):
    """A job-flow run folder: a :class:`RunDir` with its trial folders."""

    @classmethod
    def create(cls, root: Path, name: str) -> JobFlowRun:
        """A new run folder under ``root`` with its (empty) ``trials/`` folder."""
        run = RunDir.create(root, name)
        (run.path / TRIALS_DIR).mkdir()
        return cls(run.path)

    @classmethod
    def of(cls, run: RunDir) -> JobFlowRun:
        """The job-flow view of a run folder opened generically."""
        return run if isinstance(run, JobFlowRun) else cls(run.path)

    @property
    def trials_path(self) -> Path:
        return self.path / TRIALS_DIR

    def trial_dir(self, trial_id: str) -> Path:
        return self.trials_path / trial_id

    def trial_ids(self) -> list[str]:
        d = self.trials_path
        if d.is_symlink() or not d.is_dir():
            return []
        # a linked trial folder would be read from outside the run
        return sorted(p.name for p in d.iterdir() if p.is_dir() and not p.is_symlink())

    def read_experiment(self) -> dict[str, Any]:
        """experiment.json, checked: the generic catalogue fields, then job flow's."""
        data = super().read_experiment()
        check_jobflow_experiment(data, self.experiment_file)
        return data
