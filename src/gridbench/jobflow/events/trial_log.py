"""A trial's event log in either format: the CSV of older runs (``events.csv``) or the
columnar Arrow stream (``events.arrows``, :mod:`gridbench.jobflow.events.columnar`, read by
:mod:`gridbench.jobflow.events.columnar_read`).

The file present is the format marker: a trial that has an ``events.csv`` keeps appending
CSV (so cleanup and collect extend an old run in its own format); a new trial is written
in the format its spec asks for. Readers take either and give the same frame.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from gridbench.errors import ResultsError
from gridbench.jobflow.events.buffer import EventWriter as EventWriter
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog
from gridbench.jobflow.events.columnar_read import ColumnarScan, read_columnar
from gridbench.jobflow.events.job_numbers import with_job_numbers
from gridbench.jobflow.events.log import (
    EVENTS_FILE,
    EventLog,
    csv_error,
    empty_events,
    read_events,
)
from gridbench.jobflow.events.model import EVENT_SCHEMA
from gridbench.store.safe_open import opened_store_file

ARROW_FILE = "events" + ARROW_SUFFIX
EventFormat = Literal["csv", "arrow"]
FORMATS: tuple[EventFormat, ...] = ("csv", "arrow")


def is_columnar(path: Path) -> bool:
    return path.name.endswith(ARROW_SUFFIX)


def trial_log_path(trial_dir: Path) -> Path | None:
    """The trial's event log, or ``None`` when it recorded nothing yet. A trial has one
    log, in one format: both is damage (a file copied in), never one of them silently
    read, nor added to, over the other."""
    found = [trial_dir / n for n in (EVENTS_FILE, ARROW_FILE) if os.path.lexists(trial_dir / n)]
    if len(found) > 1:
        raise ResultsError(
            f"the trial has two event logs, {EVENTS_FILE} and {ARROW_FILE}",
            where=str(trial_dir),
            fix="a trial writes one format: move aside the one the run did not write "
            "(trial.json's events count names how many the log holds)",
        )
    return found[0] if found else None


def open_log(path: str | os.PathLike[str], *, batch_size: int = 256) -> EventWriter:
    """A writer appending to the log at ``path``, in the format its name says."""
    p = Path(path)
    if is_columnar(p):
        return ArrowEventLog(p, batch_size=batch_size)
    return EventLog(p, batch_size=batch_size)


def open_trial_log(trial_dir: Path, fmt: EventFormat = "arrow") -> EventWriter:
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


class LogScan:
    """A trial's log read a chunk of ~1 M events at a time (:data:`EVENT_SCHEMA`), valid
    inside :func:`scan_trial_log`'s ``with``; a CSV that does not parse is one error
    naming the file."""

    def __init__(self, path: Path, csv: str | io.BytesIO | None, columnar: ColumnarScan | None):
        self.path = path
        self._csv = csv
        self._columnar = columnar
        #: the files read (a columnar log's segments)
        self.paths = columnar.segments if columnar is not None else [path]

    @property
    def torn(self) -> int:
        """Torn batches skipped (known once the whole log was read)."""
        return self._columnar.torn if self._columnar is not None else 0

    def chunks(
        self,
        columns: Sequence[str] | None = None,
        *,
        categorical: bool = False,
        job_prefix: str | None = None,
    ) -> Iterator[pl.DataFrame]:
        """The events in log order, a chunk at a time (``columns``: only those;
        ``categorical``: ``stage``, ``source`` and ``agent`` as polars categoricals, which
        compare and group far faster than strings; ``job_prefix``: ``job`` given as the
        job's number, :mod:`gridbench.jobflow.events.job_numbers`)."""
        cols = list(columns) if columns is not None else None
        if self._columnar is not None:
            yield from self._columnar.frames(cols, categorical=categorical, job_prefix=job_prefix)
            return
        if job_prefix is not None:
            for chunk in self.chunks(columns, categorical=categorical):
                yield with_job_numbers(chunk, job_prefix) if "job" in chunk.columns else chunk
            return
        if self._csv is None:
            return
        if isinstance(self._csv, io.BytesIO):
            self._csv.seek(0)
        schema = CATEGORICAL_SCHEMA if categorical else EVENT_SCHEMA
        scan = pl.scan_csv(self._csv, schema=schema, has_header=True)
        batches = (scan.select(cols) if cols is not None else scan).collect_batches(
            chunk_size=CSV_CHUNK
        )
        try:
            yield from batches
        except pl.exceptions.PolarsError as exc:
            raise csv_error(exc, self.path) from None


#: rows per chunk of a CSV log
CSV_CHUNK = 1_000_000
#: :data:`EVENT_SCHEMA` with the few-valued columns as categoricals
CATEGORICAL_SCHEMA = pl.Schema(
    {
        c: pl.Categorical() if c in ("stage", "source", "agent") else t
        for c, t in EVENT_SCHEMA.items()
    }
)


@contextlib.contextmanager
def scan_trial_log(trial_dir: Path) -> Iterator[LogScan | None]:
    """The trial's log as a :class:`LogScan` (``None`` when it recorded nothing yet); the
    file is opened without following a link and stays open for the ``with``."""
    path = trial_log_path(trial_dir)
    if path is None:
        yield None
    elif is_columnar(path):
        yield LogScan(path, None, ColumnarScan(path))
    else:
        with opened_store_file(path) as (source, size):
            yield LogScan(path, _csv_source(source, size), None)


def _csv_source(source: str, size: int) -> str | io.BytesIO | None:
    """What polars reads of a CSV log: the file, or its bytes up to a torn last line
    (the writer died mid-line); ``None`` when empty."""
    if size == 0:
        return None
    with open(source, "rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return source
        fh.seek(0)
        raw = fh.read()
    return io.BytesIO(raw[: raw.rfind(b"\n") + 1])
