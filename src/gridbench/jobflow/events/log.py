"""The append-only per-trial event log.

Format: UTF-8 CSV with a header row (columns :data:`EVENT_COLUMNS`), ``attrs`` holding a
JSON object or nothing. Events are buffered and written in small batches; every batch is
flushed to the kernel, so a ``kill -9`` loses at most the events of the batch being built.
A torn last line (the process died mid-write) is ignored on reading.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import ResultsError, resource_error
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA, Event
from gridbench.store.records import drop_torn_tail
from gridbench.store.safe_open import opened_store_file

EVENTS_FILE = "events.csv"
_dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode


@dataclass(frozen=True, slots=True)
class Origin:
    """Who stamped an event and how: its source, the stamp's precision, the agent and that
    agent's clock offset. A recorder keeps one, so an event costs no new object."""

    source: str = "client"
    precision_ns: int = 1_000
    agent: str = "local"
    clock_offset_ns: int = 0


#: The controller's own client stamps (microsecond clock, no offset).
CLIENT = Origin()


class EventLog:
    """Buffered, append-only writer of events for one trial."""

    def __init__(self, path: str | os.PathLike[str], *, batch_size: int = 256) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        drop_torn_tail(self.path)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115
        self._writer = csv.writer(self._fh, lineterminator="\n")
        if new:
            self._writer.writerow(EVENT_COLUMNS)
            self._fh.flush()
        self._buf: list[tuple[Any, ...]] = []
        self._batch = batch_size
        self.count = 0

    def append(
        self,
        job: str,
        stage: str,
        t_ns: int,
        origin: Origin = CLIENT,
        *,
        attrs: dict[str, Any] | str | None = None,
    ) -> None:
        """Record one event (flushed with its batch); ``attrs`` may be pre-encoded JSON."""
        self._buf.append(
            (
                job,
                stage,
                t_ns,
                origin.source,
                origin.precision_ns,
                origin.agent,
                origin.clock_offset_ns,
                attrs if isinstance(attrs, str) else (_dumps(attrs) if attrs else ""),
            )
        )
        self.count += 1
        if len(self._buf) >= self._batch:
            self.flush()

    def add(self, event: Event) -> None:
        """Record an :class:`Event`."""
        origin = Origin(event.source, event.precision_ns, event.agent, event.clock_offset_ns)
        self.append(event.job, event.stage, event.t_ns, origin, attrs=event.attrs)

    def extend(self, events: Iterable[Event]) -> None:
        for e in events:
            self.add(e)

    def flush(self) -> None:
        """Write the pending batch and hand it to the kernel. A full disk is one error
        naming this file and the space left (a torn last line is skipped on reading)."""
        try:
            if self._buf:
                self._writer.writerows(self._buf)
                self._buf.clear()
            self._fh.flush()
        except OSError as exc:
            self._buf.clear()  # never retried: the log stays what reached the file
            err = resource_error(exc, self.path)
            if err is None:
                raise
            raise err from None

    def close(self) -> None:
        if not self._fh.closed:
            try:
                self.flush()
            finally:
                with contextlib.suppress(OSError):  # the buffer is gone: nothing to lose
                    self._fh.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_SCHEMA)


def read_events(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] | None = None,
    store: bool = True,
) -> pl.DataFrame:
    """Read one event log into a DataFrame with :data:`EVENT_SCHEMA`.

    Tolerates a torn final line and a missing file body (header only). ``columns`` reads
    only those (memory: the job and stage strings dominate a large log). A log in the
    results store (``store``) is opened without following a link (the store is foreign
    input); a user's own file given to ``ingest`` may be a link.
    """
    p = Path(path)
    try:
        if store:
            with opened_store_file(p) as (source, size):
                return _read_csv(source, size, p, columns)
        return _read_csv(str(p), p.stat().st_size, p, columns)
    except FileNotFoundError:
        raise ResultsError(
            "event log not found", where=str(p), fix="check the results directory path"
        ) from None


def _read_csv(source: str, size: int, p: Path, columns: Sequence[str] | None) -> pl.DataFrame:
    if size == 0:
        return empty_events().select(columns) if columns is not None else empty_events()
    with open(source, "rb") as fh:
        fh.seek(max(0, size - 1))
        complete = fh.read(1) == b"\n"
    data: Any = source
    if not complete:
        with open(source, "rb") as fh:
            raw = fh.read()
        data = io.BytesIO(raw[: raw.rfind(b"\n") + 1])
    try:
        return pl.read_csv(
            data,
            schema=EVENT_SCHEMA,
            has_header=True,
            columns=list(columns) if columns is not None else None,
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        raise ResultsError(
            f"event log is not valid CSV: {str(exc).splitlines()[0]}",
            where=str(p),
            fix="the file may be corrupted; re-run the trial or repair the named line",
        ) from exc


def concat_events(frames: Iterable[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else empty_events()
