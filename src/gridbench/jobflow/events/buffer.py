"""What both event-log writers share: the pending events as rows, and when they are written.

A writer keeps the events not yet written as one list of :data:`Row` tuples; a recorder
appends to it with :attr:`EventWriter.put` (the list's own ``append``: no Python call per
event). The owner of the log writes them with :meth:`EventWriter.flush`, the trial every
0.1 s, a chunk at a time so the submitters run in between; every chunk is handed to the
kernel as it is written, so a ``kill -9`` loses at most the events of one flush interval.
Each format turns a chunk of rows into its bytes at once (:meth:`EventWriter._write_rows`).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from gridbench.errors import resource_error
from gridbench.jobflow.events.model import Event


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

#: One pending event: (job, stage, t_ns, precision_ns, origin key, attrs). The key names
#: the source, agent and clock offset in the writer's :attr:`EventWriter.origins`
#: (:meth:`EventWriter.origin_key`); ``attrs`` is the JSON object already encoded, or ""
#: for none. Strings and ints only: the garbage collector stops tracking such a tuple at
#: its first pass, so a trial's pending rows do not lengthen its later passes.
Row = tuple[str, str, int, int, int, str]

_dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode


def encode_attrs(attrs: dict[str, Any] | str | None) -> str:
    """An event's ``attrs`` as a row holds them: JSON text, or "" for none."""
    if isinstance(attrs, str):
        return attrs
    return _dumps(attrs) if attrs else ""


class EventWriter(abc.ABC):
    """Buffered, append-only writer of one trial's events; a format subclasses it with
    :meth:`_write_rows` (and :meth:`_close_file`)."""

    #: events :meth:`flush_soon` writes between two turns of the event loop (~0.3 ms)
    chunk = 1024

    def __init__(self, path: Path, file: Path, *, batch_size: int) -> None:
        self.path = path  # the log, as readers name it
        self._file = file  # the file this writer appends to (a columnar log's segment)
        self._rows: list[Row] = []
        #: record one row; the recorders' hot path, so the list's own append
        self.put: Callable[[Row], None] = self._rows.append
        self._batch = batch_size
        self._written = 0
        #: the origins rows name, by key
        self.origins: list[Origin] = []
        self._keys: dict[tuple[str, str, int], int] = {}

    @property
    def count(self) -> int:
        """Events recorded by this writer (written or pending) and counted in by
        :meth:`add_count`."""
        return self._written + len(self._rows)

    def add_count(self, n: int) -> None:
        """Count ``n`` events another writer appended to the same file (merged lines)."""
        self._written += n

    def append(
        self,
        job: str,
        stage: str,
        t_ns: int,
        origin: Origin = CLIENT,
        *,
        attrs: dict[str, Any] | str | None = None,
    ) -> None:
        """Record one event; ``attrs`` may be pre-encoded JSON. Written with its batch
        (``batch_size`` events) or at the next :meth:`flush`."""
        key = self._key(origin.source, origin.agent, origin.clock_offset_ns)
        self._append((job, stage, t_ns, origin.precision_ns, key, encode_attrs(attrs)))

    def add(self, event: Event) -> None:
        """Record an :class:`Event`."""
        e = event
        key = self._key(e.source, e.agent, e.clock_offset_ns)
        self._append((e.job, e.stage, e.t_ns, e.precision_ns, key, encode_attrs(e.attrs)))

    def origin_key(self, origin: Origin) -> int:
        """The key rows carry for ``origin`` (its source, agent and clock offset)."""
        return self._key(origin.source, origin.agent, origin.clock_offset_ns)

    def _key(self, source: str, agent: str, clock_offset_ns: int) -> int:
        fields = (source, agent, clock_offset_ns)
        key = self._keys.get(fields)
        if key is None:
            key = self._keys[fields] = len(self.origins)
            self.origins.append(Origin(source, 0, agent, clock_offset_ns))
        return key

    def _append(self, row: Row) -> None:
        self.put(row)
        if len(self._rows) >= self._batch:
            self.flush()

    def extend(self, events: Iterable[Event]) -> None:
        for e in events:
            self.add(e)

    def flush(self, limit: int | None = None) -> bool:
        """Write the pending events (the oldest ``limit`` of them, if given) and hand them
        to the kernel; True when some are still pending. A full disk is one error naming
        the file; what failed is not retried (the log stays what reached the file, and a
        torn tail is skipped on reading)."""
        rows = self._rows
        if limit is None or len(rows) <= limit:
            chunk = rows[:]
            rows.clear()
        else:
            chunk = rows[:limit]
            del rows[:limit]
        with self._guard():
            self._write_rows(chunk)
        self._written += len(chunk)  # counted once in the file: trial.json's count is a floor
        return bool(rows)

    async def flush_soon(self) -> None:
        """:meth:`flush` :attr:`chunk` events at a time, letting the loop's other tasks
        (the submitters) run in between: a busy trial's 0.1 s of events is a few ms of
        work, which must not hold up the schedule in one piece."""
        while self.flush(self.chunk):
            await asyncio.sleep(0)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """A write's ``OSError`` as one :class:`ResourceError` naming the file."""
        try:
            yield
        except OSError as exc:
            err = resource_error(exc, self._file)
            if err is None:
                raise
            raise err from None

    @abc.abstractmethod
    def _write_rows(self, rows: list[Row]) -> None:
        """Append ``rows`` (maybe none) to the file and flush it to the kernel."""

    @abc.abstractmethod
    def _close_file(self) -> None:
        """Close the file (after the last flush), quietly: nothing is pending any more."""

    @property
    @abc.abstractmethod
    def closed(self) -> bool: ...

    def close(self) -> None:
        if not self.closed:
            try:
                self.flush()
            finally:
                self._close_file()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def opened_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, its directory created."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p
