"""``gridbench export RUN --format csv|parquet``: each trial's event log, in either format.

A run's log may be CSV (``events.csv``) or columnar (``events.arrows``); export writes
``OUT/<trial>.events.csv`` or ``.parquet`` from either, one trial in memory at a time,
each file written to a temporary name and renamed, so a file present is complete (through
the store's writer: a link planted in the run is refused, never written through).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gridbench.errors import ResultsError
from gridbench.jobflow.events.trial_log import read_trial_log, trial_log_path
from gridbench.store.layout import atomic_output

ExportFormat = Literal["csv", "parquet"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("csv", "parquet")


@dataclass(frozen=True, slots=True)
class Exported:
    """One trial's export: where its events went, or ``path`` None when the trial folder
    has no event log (a trial a crashed run never started, or a log lost): said, not
    silently left out."""

    trial: str
    path: Path | None
    events: int


def export_events(run_dir: Path, fmt: ExportFormat, out: Path | None = None) -> list[Exported]:
    """Write every trial's events of ``run_dir`` to ``out`` (default ``RUN/export``)."""
    trials = run_dir / "trials"
    every = sorted(d for d in trials.iterdir() if d.is_dir()) if trials.is_dir() else []
    dirs = [d for d in every if trial_log_path(d) is not None]
    if not dirs:
        raise ResultsError(
            "no trial of this run has an event log",
            where=str(run_dir),
            fix="give the path or id of a job-flow run that recorded events",
        )
    dest = out or run_dir / "export"
    dest.mkdir(parents=True, exist_ok=True)
    done = []
    for d in every:
        if d not in dirs:
            done.append(Exported(d.name, None, 0))
            continue
        events = read_trial_log(d)
        path = dest / f"{d.name}.events.{fmt}"
        with atomic_output(path) as tmp:  # never through a link planted in the run
            if fmt == "csv":
                events.write_csv(tmp)
            else:
                events.write_parquet(tmp, compression="zstd")
        done.append(Exported(d.name, path, events.height))
    return done
