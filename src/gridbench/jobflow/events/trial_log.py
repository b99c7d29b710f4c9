"""A trial's event log in either format: the CSV of older runs (``events.csv``) or the
columnar Arrow stream (``events.arrows``, :mod:`gridbench.jobflow.events.columnar`).

The file present is the format marker: a trial that has an ``events.csv`` keeps appending
CSV (so cleanup and collect extend an old run in its own format); a new trial is written
in the format its spec asks for. Readers take either and give the same frame.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from gridbench.jobflow.events.buffer import EventWriter as EventWriter
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog, read_columnar
from gridbench.jobflow.events.log import EVENTS_FILE, EventLog, empty_events, read_events

ARROW_FILE = "events" + ARROW_SUFFIX
EventFormat = Literal["csv", "arrow"]
FORMATS: tuple[EventFormat, ...] = ("csv", "arrow")


def is_columnar(path: Path) -> bool:
    return path.name.endswith(ARROW_SUFFIX)


def trial_log_path(trial_dir: Path) -> Path | None:
    """The trial's event log, or ``None`` when it recorded nothing yet."""
    for name in (EVENTS_FILE, ARROW_FILE):
        if (trial_dir / name).exists():
            return trial_dir / name
    return None


def open_log(path: str | os.PathLike[str], *, batch_size: int = 256) -> EventWriter:
    """A writer appending to the log at ``path``, in the format its name says."""
    p = Path(path)
    if is_columnar(p):
        return ArrowEventLog(p, batch_size=batch_size)
    return EventLog(p, batch_size=batch_size)


def open_trial_log(trial_dir: Path, fmt: EventFormat = "csv") -> EventWriter:
    """A writer for the trial's log: its existing format, else ``fmt``."""
    existing = trial_log_path(trial_dir)
    if existing is not None:
        return open_log(existing)
    return open_log(trial_dir / (ARROW_FILE if fmt == "arrow" else EVENTS_FILE))


def read_event_log(
    path: str | os.PathLike[str], *, columns: Sequence[str] | None = None, store: bool = True
) -> pl.DataFrame:
    """One event log of either format (torn tails skipped) as :data:`EVENT_SCHEMA`."""
    p = Path(path)
    if is_columnar(p):
        return read_columnar(p, columns=columns, store=store).events
    return read_events(p, columns=columns, store=store)


def read_trial_log(trial_dir: Path, *, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """The trial's events (empty when none were recorded)."""
    return read_trial_log_counted(trial_dir, columns=columns)[0]


def read_trial_log_counted(
    trial_dir: Path, *, columns: Sequence[str] | None = None
) -> tuple[pl.DataFrame, int]:
    """The trial's events and the torn batches skipped (a CSV log's torn line is not
    counted: it is cut by the next writer and carries no batch)."""
    path = trial_log_path(trial_dir)
    if path is None:
        return (empty_events().select(columns) if columns is not None else empty_events()), 0
    if is_columnar(path):
        read = read_columnar(path, columns=columns)
        return read.events, read.torn
    return read_events(path, columns=columns), 0
