"""The per-job table of a trial whose jobs are numbered, built by scattering into arrays.

gridbench names job ``i`` of a trial ``<trial id>-<i zero-padded to 6 digits>`` (the
controller and its agents alike: :func:`gridbench.jobflow.events.job_numbers.job_name`).
When every event's job id has exactly that form, the number (read as ``job_no``,
:mod:`gridbench.jobflow.events.job_numbers`) is a dense key: each stage's earliest time
is a scatter into an array indexed by it (``np.maximum.at``), with no hash table, no
partial tables to merge and no string kept per event. A log that is not numbered so
(ingested ids, hand-made logs) raises :class:`NotNumbered` at its first odd chunk, and
the caller takes the hash-keyed path instead.

The arrays come in blocks of :data:`BLOCK` numbers, made when a number in them is first
seen: never reallocated or copied as a run grows, and a stray large number (job
``p00-t00-999999999999``) costs one block, not an array up to it. A block is zero-filled
by the kernel as its pages are first touched (``np.zeros``), so only the numbers used
cost memory: a time is stored as ``_BIG - t`` and a scatter-max keeps the earliest, with
0 meaning "not reached". The blocks may hold at most :data:`SPARSE_LIMIT` times the
events read (plus a few blocks): a log whose numbers are scattered wider takes the
hash-keyed path instead, so memory stays bounded by the log.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa
from numpy.typing import NDArray

from gridbench.jobflow.events.job_numbers import JOB_NO, job_name_expr

_ROW = "_row"
#: times and rows are stored as ``_BIG - value`` (positive for -2^62 < value < 2^62), so
#: that a never-touched 0 means none and the earliest is the largest
_BIG = 1 << 62
#: job numbers per block of arrays (virtual: pages cost memory once touched)
BLOCK_BITS = 20
BLOCK = 1 << BLOCK_BITS
#: the blocks' numbers may exceed the events read by this factor (plus _SPARE blocks): a
#: job has at least one event, so a dense numbering stays well below it
SPARSE_LIMIT = 2
_SPARE = 4
#: events folded at a time: each step's arrays stay in cache (measured on a chunk of a
#: million events: 12 ms against 23 ms in one piece)
FOLD_EVENTS = 65_536


NDInt = NDArray[np.int64]


class NotNumbered(Exception):
    """The log's job ids are not all ``<prefix><number>`` in gridbench's own form, or their
    numbers are too scattered to index."""


class _Part(NamedTuple):
    """A chunk's events as arrays: job number, log row, stage row (-1: none), time."""

    number: NDInt
    rows: NDInt
    k: NDInt
    t: NDInt


def block_bytes(stages: int) -> int:
    """The size of one block of arrays for a timeline of ``stages`` stages."""
    return (stages + 1) * BLOCK * 8


class NumberedJobs:
    """Each job's first log row and each stage's earliest time, in arrays indexed by the
    job's number (see the module's docstring)."""

    def __init__(self, stages: tuple[str, ...], prefix: str) -> None:
        self.stages = stages
        self.prefix = prefix
        self._blocks: dict[int, NDInt] = {}
        self._events = 0
        self._index = {s: k for k, s in enumerate(stages)}

    def part(self, indexed: pl.DataFrame) -> _Part:
        """One chunk of events with their log rows (``_row``) and job numbers
        (:data:`~gridbench.jobflow.events.job_numbers.JOB_NO`) as the arrays the scatter
        takes (pure: run ahead on a worker thread); :class:`NotNumbered` for an id that is
        not the trial's."""
        jobs = indexed.select(
            pl.col(JOB_NO),
            # each event's stage row in the arrays: -1 for no timeline stage or no time
            pl.when(pl.col("t_ns").is_not_null())
            .then(pl.col("stage").replace_strict(self._index, default=-1, return_dtype=pl.Int64))
            .fill_null(-1)
            .alias("k"),
            pl.col("t_ns").fill_null(0),
            pl.col(_ROW).cast(pl.Int64),
        )
        number = jobs[JOB_NO].to_numpy()
        if number.size and int(number.min()) < 0:  # an odd or null id
            raise NotNumbered
        t = jobs["t_ns"].to_numpy()
        if t.size and not (int(t.min()) > -_BIG and int(t.max()) < _BIG):
            raise NotNumbered  # a time outside the years 1824-2116: the hash path keeps it
        return _Part(number, jobs[_ROW].to_numpy(), jobs["k"].to_numpy(), t)

    def add(self, part: _Part) -> None:
        """Fold in one chunk's arrays (:meth:`part`), in log order, a slice of
        :data:`FOLD_EVENTS` at a time."""
        for at in range(0, part.number.size, FOLD_EVENTS):
            self._add(*(a[at : at + FOLD_EVENTS] for a in part))

    def _add(self, number: NDInt, rows: NDInt, k: NDInt, t: NDInt) -> None:
        self._events += number.size
        block_of = number >> BLOCK_BITS
        lo, hi = int(block_of.min()), int(block_of.max())
        for b in range(lo, hi + 1) if hi - lo < 4 else np.unique(block_of).tolist():
            at = None if lo == hi else block_of == b  # a chunk's jobs are mostly one block
            if at is not None and not at.any():
                continue
            self._scatter(b, *(a if at is None else a[at] for a in (number, rows, k, t)))

    def _scatter(self, b: int, number: NDInt, rows: NDInt, k: NDInt, t: NDInt) -> None:
        block = self._blocks.get(b)
        if block is None:
            if (len(self._blocks) + 1 - _SPARE) * BLOCK > SPARSE_LIMIT * self._events:
                raise NotNumbered  # scattered numbers: the hash path is bounded by the log
            # row 0: each job's first log row; row 1 + k: stage k's earliest time
            block = self._blocks[b] = np.zeros((len(self.stages) + 1, BLOCK), np.int64)
        local = number - b * BLOCK
        flat = block.reshape(-1)
        np.maximum.at(flat, local, _BIG - rows)
        timed = k >= 0
        np.maximum.at(flat, (k[timed] + 1) * BLOCK + local[timed], _BIG - t[timed])

    def table(self) -> pl.DataFrame:
        """``job`` and each stage's earliest time, one row per job in first-event order.
        The columns are made first and filled a block at a time, each block freed once
        its jobs are copied out: the peak is about the larger of the blocks and the table
        (the columns' pages cost memory as they are filled)."""
        schema = {"job": pl.String, **dict.fromkeys(self.stages, pl.Int64)}
        if not self._blocks:
            return pl.DataFrame(schema=schema)
        bases = sorted(self._blocks)
        present = [np.flatnonzero(self._blocks[b][0]) for b in bases]
        # row 0: numbers, row 1: first rows, then each stage's stored times
        columns = np.empty((len(self.stages) + 2, sum(p.size for p in present)), np.int64)
        at = 0
        for b, p in zip(bases, present, strict=True):
            block, m = self._blocks.pop(b), p.size
            dense = m == 0 or int(p[-1]) == m - 1  # jobs 0..m-1 of the block: no gather
            columns[0, at : at + m] = p + b * BLOCK
            columns[1:, at : at + m] = block[:, :m] if dense else block[:, p]
            del block
            at += m
        first = columns[1]
        # _BIG - row: decreasing when the rows increase, as the runner numbers jobs in the
        # order it schedules them: usually already in order
        if not bool(np.all(first[1:] < first[:-1])):
            columns = np.take(columns, np.argsort(-first, kind="stable"), axis=1)
        names = job_name_expr(self.prefix, pl.lit(columns[0])).alias("job")
        out: dict[str, pl.Series] = {"job": pl.select(names)["job"]}
        for k, s in enumerate(self.stages, start=2):
            out[s] = _times(s, columns[k])
        return pl.DataFrame(out)


def _times(name: str, stored: NDInt) -> pl.Series:
    """A stage's column from its stored ``_BIG - t`` values (0: not reached, null),
    turned into times in place and handed to polars without a copy."""
    stored = np.ascontiguousarray(stored)  # a view of a row: already contiguous
    reached = stored > 0
    np.subtract(_BIG, stored, out=stored)  # not reached: _BIG, under the null
    n = stored.size
    bitmap = None if bool(reached.all()) else pa.py_buffer(np.packbits(reached, bitorder="little"))
    array = pa.Array.from_buffers(pa.int64(), n, [bitmap, pa.py_buffer(stored)])
    series = pl.from_arrow(array)
    assert isinstance(series, pl.Series)
    return series.alias(name)
