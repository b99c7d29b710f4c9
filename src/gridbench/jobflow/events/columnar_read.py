"""Reading the columnar event log (:mod:`gridbench.jobflow.events.columnar`) as foreign
input: each segment is opened without following a link and memory-mapped, its messages
checked before pyarrow decodes any (no compressed batch is inflated:
:mod:`gridbench.jobflow.events.ipc_guard`), read up to its first torn batch (counted), and
validated as a group of batches is turned into polars; a file that is not such a log is
one :class:`~gridbench.errors.ResultsError` naming it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa

from gridbench.errors import ResultsError
from gridbench.jobflow.events.columnar import ARROW_SCHEMA, FORMAT, FORMAT_KEY, segments
from gridbench.jobflow.events.dictionaries import combined_dictionary
from gridbench.jobflow.events.ipc_guard import check_dictionaries, check_stream
from gridbench.jobflow.events.job_numbers import JOB_NO, arrow_job_numbers
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA
from gridbench.store.safe_open import opened_store_file

# pyarrow's words for a message cut short (the writer died mid-batch), as against garbage
_TORN = re.compile(r"Expected to (be able to )?read|bytes available")
_CONTINUATION = b"\xff\xff\xff\xff"
# our schema message is under 1 KiB: a longer file whose schema is cut short is no torn log
_SCHEMA_MAX = 4096
_FIX = "not a gridbench event log, or damaged: re-run the trial, or move the file aside"


@dataclass(frozen=True, slots=True)
class ColumnarRead:
    """The events of a columnar log and the torn batches skipped (one per crashed writer)."""

    events: pl.DataFrame
    torn: int


def read_columnar(
    path: str | os.PathLike[str], *, columns: Sequence[str] | None = None, store: bool = True
) -> ColumnarRead:
    """Read every segment of the log at ``path``, each up to its first torn batch.

    Foreign input: each segment is opened without following a link (``store``) and
    memory-mapped, so a length field claiming more than the file holds is refused without
    allocating it; every batch is validated before use; a file that is not such a log is
    one :class:`ResultsError` naming it."""
    scan = ColumnarScan(path, store=store)
    # one chunk per group: the analysis' passes then run over ~1 M-event chunks rather
    # than 4,096-event ones
    frames = [f.rechunk() for f in scan.frames(list(columns) if columns is not None else None)]
    cols = list(columns) if columns is not None else list(EVENT_COLUMNS)
    if not frames:
        return ColumnarRead(pl.DataFrame(schema=EVENT_SCHEMA).select(cols), scan.torn)
    return ColumnarRead(pl.concat(frames, how="vertical", rechunk=False), scan.torn)


#: events turned into polars at a time: a chunk is counted in events, not batches, since
#: a live writer's batch holds what 0.1 s brought (~100 events a batch at 100 jobs/s, so
#: 256 batches would make a day's run 4,000 chunks, each with its own group-by and merge)
CONVERT_EVENTS = 1_000_000


class ColumnarScan:
    """The log at ``path`` read a group of batches at a time (:meth:`frames`): batches
    are read, checked and turned into polars a group at a time, so a reader holds one
    group, not the log; every pass validates the columns it reads. The first pass notes
    how many batches each segment holds up to its torn tail; a later pass reads exactly
    those (``torn``: the torn batches skipped)."""

    def __init__(self, path: str | os.PathLike[str], *, store: bool = True) -> None:
        p = Path(path)
        self.segments = segments(p)
        if not self.segments:
            raise ResultsError(
                "event log not found", where=str(p), fix="check the results directory path"
            )
        self.store = store
        self.torn = 0
        self._good: list[int] | None = None  # whole batches per segment, once checked

    def frames(
        self,
        columns: Sequence[str] | None = None,
        *,
        categorical: bool = False,
        job_prefix: str | None = None,
    ) -> Iterator[pl.DataFrame]:
        """The events a group of batches at a time (``columns``: only those;
        ``categorical``: ``stage``, ``source`` and ``agent`` left as polars categoricals,
        as the log stores them, rather than cast to strings)."""
        cols = list(columns) if columns is not None else list(EVENT_COLUMNS)
        checking = self._good is None
        good: list[int] = []
        torn = 0
        pending: list[pa.RecordBatch] = []
        rows = 0
        for i, seg in enumerate(self.segments):
            limit = None if self._good is None else self._good[i]
            with contextlib.ExitStack() as stack:
                if self.store:
                    source, size = stack.enter_context(opened_store_file(seg))
                else:
                    source, size = str(seg), seg.stat().st_size
                n = 0
                batches = _SegmentBatches(source, size, seg, limit=limit)
                for batch in batches:
                    n += 1
                    pending.append(batch)
                    rows += batch.num_rows
                    if rows >= CONVERT_EVENTS:
                        yield _to_polars(pending, cols, seg, categorical, job_prefix)
                        pending, rows = [], 0
                        batches.release()
                torn += batches.torn
                good.append(n)
        if pending:
            yield _to_polars(pending, cols, self.segments[-1], categorical, job_prefix)
        if checking:
            self._good, self.torn = good, torn


def _to_polars(
    batches: list[pa.RecordBatch],
    cols: list[str],
    seg: Path,
    categorical: bool = False,
    job_prefix: str | None = None,
) -> pl.DataFrame:
    """A group of batches as one polars chunk of :data:`EVENT_SCHEMA` types, or with the
    dictionary columns as categoricals (``categorical``: no unified dictionary and no
    string column is built; 3-4x cheaper). Batches of one growing dictionary are joined
    first (:func:`_combined`); older logs' per-batch dictionaries are mapped by polars.

    The columns read are validated first (offsets, UTF-8, dictionary indices), as one
    table rather than batch by batch: a live log's batches are small, and each check has
    a fixed cost (measured: 16 ms against 36 ms a million events). ``seg``: the segment
    named by an error (the group's last). ``job_prefix``: ``job`` is given as its number
    (:mod:`gridbench.jobflow.events.job_numbers`), with no string made."""
    table = pa.Table.from_batches(batches, schema=ARROW_SCHEMA).select(cols)
    try:
        table.validate(full=True)
    except (pa.ArrowException, ValueError) as exc:
        raise ResultsError(
            f"damaged event batch: {str(exc)[:200]}", where=str(seg), fix=_FIX
        ) from None
    check_dictionaries(table, str(seg))
    table = _combined(table)
    if job_prefix is not None and "job" in cols:
        at = table.column_names.index("job")
        numbers = _job_numbers(table.column(at), job_prefix)
        table = table.set_column(at, JOB_NO, numbers)
    if categorical:
        frame = pl.from_arrow(table, rechunk=False)
        assert isinstance(frame, pl.DataFrame)
        return frame
    frame = pl.from_arrow(table.unify_dictionaries(), rechunk=False)
    assert isinstance(frame, pl.DataFrame)
    return frame.cast({c: EVENT_SCHEMA[c] for c in frame.columns if c in EVENT_SCHEMA})


def _job_numbers(jobs: pa.ChunkedArray, prefix: str) -> pa.Array:
    """The number of each of ``jobs`` (-1: not the trial's form)."""
    # one chunk already (combining one would copy it), but for older logs' per-batch columns
    one = jobs.chunk(0) if jobs.num_chunks == 1 else jobs.combine_chunks()
    numbers = arrow_job_numbers(one, prefix)
    return pa.Array.from_buffers(pa.int64(), len(numbers), [None, pa.py_buffer(numbers)])


def _combined(table: pa.Table) -> pa.Table:
    """``table`` as one chunk per column when its dictionary columns grew one dictionary
    (:mod:`gridbench.jobflow.events.dictionaries`); as it is otherwise."""
    columns = []
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            one = combined_dictionary(col.chunks)
            if one is None:
                return table
            columns.append(one)
        else:
            columns.append(col.combine_chunks())
    return pa.Table.from_arrays(columns, names=table.column_names)


class _SegmentBatches:
    """The whole batches of one segment (``torn``: 1 once its tail proved torn), each
    checked only as far as reading it goes (:func:`_to_polars` validates their data)."""

    def __init__(self, source: str, size: int, seg: Path, *, limit: int | None):
        self.source, self.size, self.seg = source, size, seg
        self.limit = limit
        self.torn = 0
        self._stream: pa.BufferReader | None = None
        self._map: mmap.mmap | None = None

    def release(self) -> None:
        """Drop the pages read so far from this process's memory: the mapped file would
        otherwise count in its resident size up to the whole log (they are re-read from
        the file if a batch still refers to them)."""
        if self._stream is not None and self._map is not None and not self._map.closed:
            done = self._stream.tell() // mmap.PAGESIZE * mmap.PAGESIZE
            if done:
                self._map.madvise(mmap.MADV_DONTNEED, 0, done)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self.size == 0 or self.limit == 0:
            return
        reader = self._open()
        if reader is None:
            return
        n = 0
        while self.limit is None or n < self.limit:
            batch = self._next(reader)
            if batch is None:
                return
            n += 1
            yield batch

    def _open(self) -> pa.ipc.RecordBatchStreamReader | None:
        seg = self.seg
        with open(self.source, "rb") as fh:
            head = fh.read(4)
        if head != _CONTINUATION[: len(head)]:
            raise ResultsError(
                "not an Arrow IPC stream (bad first bytes)", where=str(seg), fix=_FIX
            )
        try:
            with open(self.source, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            check_stream(self._map, str(seg))  # no compressed batch: never inflated
            self._stream = pa.BufferReader(pa.py_buffer(self._map))
            reader = pa.ipc.open_stream(self._stream)
        except (pa.ArrowException, OSError, ValueError) as exc:
            if _TORN.search(str(exc)) and self.size < _SCHEMA_MAX:
                self.torn = 1  # the writer died while writing the schema: no events
                return None
            raise ResultsError(
                f"not a readable event log: {str(exc)[:200]}", where=str(seg), fix=_FIX
            ) from None
        _check_schema(reader.schema, seg)
        return reader

    def _next(self, reader: pa.ipc.RecordBatchStreamReader) -> pa.RecordBatch | None:
        try:
            return reader.read_next_batch()
        except StopIteration:
            return None
        except (pa.ArrowException, OSError, ValueError) as exc:
            if _TORN.search(str(exc)):
                self.torn = 1
                return None
            raise ResultsError(
                f"damaged event log: {str(exc)[:200]}", where=str(self.seg), fix=_FIX
            ) from None


def _check_schema(schema: pa.Schema, seg: Path) -> None:
    """The stream's schema is gridbench's events/1 (names and metadata are foreign bytes:
    one that is not UTF-8 is a mismatch, never an exception of its own)."""
    try:
        meta = schema.metadata
        marked = meta is not None and meta.get(FORMAT_KEY) == FORMAT
        same = schema.equals(ARROW_SCHEMA, check_metadata=False)
    except (pa.ArrowException, ValueError):
        marked = same = False
    if not marked:
        raise ResultsError(
            "Arrow stream without the gridbench events/1 marker", where=str(seg), fix=_FIX
        )
    if not same:
        raise ResultsError(
            "event log columns differ from gridbench's events/1", where=str(seg), fix=_FIX
        )
