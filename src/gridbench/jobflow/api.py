"""Job flow's public face: the one module of :mod:`gridbench.jobflow` that other packages
import (``gridbench.model`` does, under an import-linter ``forbidden`` contract; families
and core import no job flow at all). Everything else in job flow may move between its
subpackages; what is named here stays.

What a job-flow run is made of, for a reader or writer outside job flow:

- a run's folder (:class:`JobFlowRun`: ``trials/``, one folder per trial) and its trials
  (:func:`trial_dirs`, :func:`read_trial_info`, :func:`read_trial_events`);
- the event model (the columns and schema of a trial's log, the failure kinds) and the
  stage chain (:class:`Stage`, :class:`StageChain`; the EDGI chain, the reference grid's
  staging links) the events are stamped along;
- the columnar event log a trial's events are written to (:class:`ArrowEventLog`, in
  ``trials/<id>/`` + :data:`ARROW_FILE`);
- rates as a spec writes them (:func:`parse_rate`) and the run's analysis
  (:func:`analyze_run`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.jobflow.analysis.load import read_trial_events, read_trial_info, trial_dirs
from gridbench.jobflow.backends.reference_staging import with_staging
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.ingest_run import edgi_chain
from gridbench.jobflow.events.model import (
    EVENT_COLUMNS,
    EVENT_SCHEMA,
    FAIL_JOB,
    FAIL_LOST,
    FAIL_SUBMIT_REJECTED,
    STAGE_FAILED,
    SUBMIT_FAILURES,
)
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.jobflow.events.trial_log import ARROW_FILE
from gridbench.jobflow.specbase.units import parse_rate

__all__ = [
    "ARROW_FILE",
    "EVENT_COLUMNS",
    "EVENT_SCHEMA",
    "FAIL_JOB",
    "FAIL_LOST",
    "FAIL_SUBMIT_REJECTED",
    "STAGE_FAILED",
    "SUBMIT_FAILURES",
    "ArrowEventLog",
    "JobFlowRun",
    "Stage",
    "StageChain",
    "analyze_run",
    "edgi_chain",
    "parse_rate",
    "read_trial_events",
    "read_trial_info",
    "trial_dirs",
    "with_staging",
]


def analyze_run(run_dir: str | Path, *, write: bool = False) -> dict[str, Any]:
    """A job-flow run's metrics (metrics.json's object; written when ``write``). The
    analysis is imported on first use: a command line that only registers commands does
    not load it."""
    from gridbench.jobflow.analysis.experiment import analyze_run as analyze

    return analyze(run_dir, write=write)
