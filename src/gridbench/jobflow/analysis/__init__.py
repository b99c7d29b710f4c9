"""Analysis: pure functions from events to metrics (schema ``gridbench.metrics/1``).

Entry points: :func:`analyze_run` (a results directory in, the metrics dict out, optionally
written as metrics.json and trials/*/series.json), :func:`analyze_trial` (one trial's
events in memory) and :func:`assemble` (trial results -> metrics). Only ``load`` does I/O.
"""

from gridbench.jobflow.analysis.config import AnalysisConfig
from gridbench.jobflow.analysis.experiment import SCHEMA, analyze_run, assemble, write_metrics
from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.analysis.trial import TrialResult, analyze_trial

__all__ = [
    "SCHEMA",
    "AnalysisConfig",
    "TrialInfo",
    "TrialResult",
    "analyze_run",
    "analyze_trial",
    "assemble",
    "write_metrics",
]
