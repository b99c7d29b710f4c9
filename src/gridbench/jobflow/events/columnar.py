"""The columnar event log's format and its writer: an Arrow IPC *stream* appended batch by
batch.

Each writer appends record batches to one segment file (``events.arrows``; a writer that
finds it non-empty starts the next segment, ``events.1.arrows``, because a stream cannot
be reopened). Every batch is flushed to the kernel as it is written, so a ``kill -9``
loses at most the events not yet written (the trial's last 0.1 s,
:mod:`gridbench.jobflow.events.buffer`); a batch torn by the crash is skipped on reading and
counted (:mod:`gridbench.jobflow.events.columnar_read`). Types are fixed: ``stage``,
``source`` and ``agent`` are dictionary-encoded, times and precisions int64 ns. The schema
carries the format marker ``gridbench: events/1``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from gridbench.jobflow.events.buffer import EventWriter, Origin, Row, opened_dir
from gridbench.jobflow.events.dictionaries import GrowingDictionaries, strings_array
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA
from gridbench.store.safe_open import open_append

ARROW_SUFFIX = ".arrows"
FORMAT_KEY, FORMAT = b"gridbench", b"events/1"
_DICT = pa.dictionary(pa.int32(), pa.string())
ARROW_SCHEMA = pa.schema(
    [
        ("job", pa.string()),
        ("stage", _DICT),
        ("t_ns", pa.int64()),
        ("source", _DICT),
        ("precision_ns", pa.int64()),
        ("agent", _DICT),
        ("clock_offset_ns", pa.int64()),
        ("attrs", pa.string()),
    ],
    metadata={FORMAT_KEY: FORMAT},
)


def segments(path: Path) -> list[Path]:
    """The segment files of the log at ``path`` in writing order: ``path`` itself, then
    ``<stem>.1.arrows``, ``<stem>.2.arrows``… (stops at the first missing one)."""
    stem = path.name[: -len(ARROW_SUFFIX)]
    found = [path] if path.exists() else []
    k = 1
    while (nxt := path.with_name(f"{stem}.{k}{ARROW_SUFFIX}")).exists():
        found.append(nxt)
        k += 1
    return found


def _next_segment(path: Path) -> Path:
    """The segment a new writer appends to: the first absent or empty one."""
    stem = path.name[: -len(ARROW_SUFFIX)]
    k, seg = 0, path
    while seg.exists() and seg.stat().st_size > 0:
        k += 1
        seg = path.with_name(f"{stem}.{k}{ARROW_SUFFIX}")
    return seg


class ArrowEventLog(EventWriter):
    """Buffered, append-only writer of one trial's events as Arrow record batches."""

    chunk = 4096  # a batch has a fixed cost (~50 us): fewer, larger ones (~1 ms each)

    def __init__(self, path: str | os.PathLike[str], *, batch_size: int = 4096) -> None:
        p = opened_dir(path)
        self.segment = _next_segment(p)
        super().__init__(p, self.segment, batch_size=batch_size)
        self._fh = open_append(self.segment)  # never through a planted link
        self._dictionaries = GrowingDictionaries(ARROW_SCHEMA)
        # a grown dictionary is written whole (a replacement), not as a delta: polars'
        # own IPC reader refuses deltas, and values are new only in a trial's first batches
        self._writer = pa.ipc.new_stream(self._fh, ARROW_SCHEMA)
        # the schema and an empty batch now: the first batch's set-up is paid here, before
        # the trial submits, rather than in its first flush
        with self._guard():
            self._write(_to_batch(_ONE_ROW).slice(0, 0))

    def write_frame(self, frame: pl.DataFrame) -> None:
        """Append a frame of events (:data:`EVENT_SCHEMA` columns) as one batch."""
        self.flush()
        if frame.height:
            with self._guard():
                self._write(_to_batch(frame))
            self.add_count(frame.height)

    def _write_rows(self, rows: list[Row]) -> None:
        if rows:  # coded against the growing dictionaries as it is built: no re-coding
            self._writer.write_batch(_rows_batch(rows, self.origins, self._dictionaries))
            self._fh.flush()

    def _write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(self._dictionaries.encode(batch))
        self._fh.flush()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def _close_file(self) -> None:
        with contextlib.suppress(OSError, pa.ArrowException):
            self._writer.close()  # the end-of-stream marker
            self._fh.close()


def _to_batch(frame: pl.DataFrame) -> pa.RecordBatch:
    """One record batch of :data:`ARROW_SCHEMA` from a non-empty frame of events."""
    arrow = frame.select(EVENT_COLUMNS).to_arrow(compat_level=pl.CompatLevel.oldest())
    return arrow.cast(ARROW_SCHEMA).combine_chunks().to_batches()[0]


# Arrays built from their buffers, a column at a time (~0.15 us an event for a whole
# chunk); unlike pa.array(list) they never import pandas (~0.5 s, and its objects then
# lengthen every garbage collection of the dispatcher's process).


def _rows_batch(
    rows: list[Row], origins: list[Origin], dictionaries: GrowingDictionaries
) -> pa.RecordBatch:
    """One record batch of :data:`ARROW_SCHEMA` from rows (at least one), its dictionary
    columns coded against ``dictionaries`` (grown by any new value)."""
    jobs, stages, times, precisions, keys, attrs = zip(*rows, strict=True)
    n = len(jobs)
    codes = np.fromiter(keys, np.int32, n)
    offsets = np.array([o.clock_offset_ns for o in origins], dtype=np.int64)[codes]
    d, used = dictionaries, set(keys)
    arrays = [
        strings_array(jobs),
        d.coded(_STAGE, stages),
        _ints(times),
        _per_origin(d, _SOURCE, [o.source for o in origins], used, codes),
        _ints(precisions),
        _per_origin(d, _AGENT, [o.agent for o in origins], used, codes),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
        strings_array(attrs, empty_is_null=True),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


_STAGE, _SOURCE, _AGENT = (ARROW_SCHEMA.get_field_index(c) for c in ("stage", "source", "agent"))


def _per_origin(
    d: GrowingDictionaries,
    column: int,
    values: list[str],
    used: set[int],
    codes: npt.NDArray[np.int32],
) -> pa.Array:
    """A dictionary column of one value per origin (``values``), ``codes`` naming each
    row's origin; the dictionary grows by the values of the ``used`` origins only, in
    origin order, as re-coding a batch of its own did."""
    wanted = {values[k] for k in used}
    d.grow(column, [v for v in dict.fromkeys(values) if v in wanted])
    return d.from_codes(column, d.codes_of(column, values)[codes])


def _ints(values: Sequence[int]) -> pa.Array:
    data = np.fromiter(values, np.int64, len(values))
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(data)])


_ONE_ROW = pl.DataFrame(
    {c: [v] for c, v in zip(EVENT_COLUMNS, ("j", "s", 0, "c", 1, "a", 0, None), strict=True)},
    schema=EVENT_SCHEMA,
)
