"""The per-job table of a trial whose jobs are numbered, built by scattering into arrays.

gridbench names job ``i`` of a trial ``<trial id>-<i zero-padded to 6 digits>`` (the
controller and its agents alike: :func:`gridbench.jobflow.events.model.job_name`). When
every event's job id has exactly that form, the number is a dense key: each stage's
earliest time is a scatter-min into an array indexed by it (``np.minimum.at``), with no
hash table, no partial tables to merge and no string kept per event. A log that is not
numbered so (ingested ids, hand-made logs) raises :class:`NotNumbered` at its first odd
chunk, and the caller takes the hash-keyed path instead.

The arrays come in blocks of :data:`BLOCK` numbers, made when a number in them is first
seen: never reallocated or copied as a run grows, and a stray large number (job
``p00-t00-999999999999``) costs one block, not an array up to it. The blocks may hold at
most :data:`SPARSE_LIMIT` times the events read (plus a few blocks): a log whose numbers
are scattered wider takes the hash-keyed path instead, so memory stays bounded by the log.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.jobflow.events.model import JOB_DIGITS

_ROW = "_row"
_NONE = np.iinfo(np.int64).max
#: job numbers per block of arrays (~25 MB a block for a 10-stage timeline)
BLOCK_BITS = 18
BLOCK = 1 << BLOCK_BITS
#: the blocks' numbers may exceed the events read by this factor (plus _SPARE blocks): a
#: job has at least one event, so a dense numbering stays well below it
SPARSE_LIMIT = 2
_SPARE = 4


NDInt = NDArray[np.int64]


class NotNumbered(Exception):
    """The log's job ids are not all ``<prefix><number>`` in gridbench's own form, or their
    numbers are too scattered to index."""


class _Block:
    """The arrays of the jobs numbered ``[b * BLOCK, (b + 1) * BLOCK)``: each job's first
    log row, and per stage its earliest time and whether it has one (C-contiguous, so that
    ``reshape(-1)`` is a view the scatter writes through)."""

    def __init__(self, stages: int) -> None:
        self.first = np.full(BLOCK, _NONE, np.int64)
        self.times = np.full((stages, BLOCK), _NONE, np.int64)
        self.seen = np.zeros((stages, BLOCK), np.bool_)


class NumberedJobs:
    """Each job's first log row and each stage's earliest time, in arrays indexed by the
    job's number (see the module's docstring)."""

    def __init__(self, stages: tuple[str, ...], prefix: str) -> None:
        self.stages = stages
        self.prefix = prefix
        # the canonical form only, so that one number is one id: "000042", "1234567"
        # (str(i).zfill(6)), never "0000042", "+00042" or " 42"
        digits = JOB_DIGITS
        self._form = rf"^{re.escape(prefix)}(?:\d{{{digits}}}|[1-9]\d{{{digits},17}})$"
        self._blocks: dict[int, _Block] = {}
        self._events = 0
        self._index = {s: k for k, s in enumerate(stages)}

    def add(self, indexed: pl.DataFrame) -> None:
        """Fold in one chunk of events with their log rows (``_row``)."""
        jobs = indexed.select(
            pl.col("job").str.contains(self._form).fill_null(False).alias("ok"),
            pl.col("job").str.slice(len(self.prefix)).cast(pl.Int64, strict=False).alias("n"),
        )
        if not jobs["ok"].all():  # an odd or null id
            raise NotNumbered
        number = jobs["n"].to_numpy()
        self._events += number.size
        # each event's stage row in the arrays: -1 for no timeline stage or no time
        staged = indexed.select(
            pl.when(pl.col("t_ns").is_not_null())
            .then(pl.col("stage").replace_strict(self._index, default=-1, return_dtype=pl.Int64))
            .fill_null(-1)
            .alias("k"),
            pl.col("t_ns").fill_null(0),
            pl.col(_ROW).cast(pl.Int64),
        )
        rows, k, t = staged[_ROW].to_numpy(), staged["k"].to_numpy(), staged["t_ns"].to_numpy()
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
            block = self._blocks[b] = _Block(len(self.stages))
        local = number - b * BLOCK
        np.minimum.at(block.first, local, rows)
        timed = k >= 0
        flat = k[timed] * BLOCK + local[timed]
        np.minimum.at(block.times.reshape(-1), flat, t[timed])
        block.seen.reshape(-1)[flat] = True

    def table(self) -> pl.DataFrame:
        """``job`` and each stage's earliest time, one row per job in first-event order
        (built a column at a time; the blocks are freed at the end)."""
        blocks = [self._blocks[b] for b in sorted(self._blocks)]
        bases = [b * BLOCK for b in sorted(self._blocks)]
        self._blocks = {}
        schema = {"job": pl.String, **dict.fromkeys(self.stages, pl.Int64)}
        if not blocks:
            return pl.DataFrame(schema=schema)
        present = [np.flatnonzero(blk.first != _NONE) for blk in blocks]
        pairs = list(zip(blocks, present, strict=True))
        first = np.concatenate([blk.first[p] for blk, p in pairs])
        # the runner numbers jobs in the order it schedules them: usually already in order
        order = None if bool(np.all(first[1:] > first[:-1])) else np.argsort(first, kind="stable")
        del first
        numbers = np.concatenate([p + base for p, base in zip(present, bases, strict=True)])
        columns: dict[str, pl.Series] = {
            "_n": pl.Series(numbers if order is None else numbers[order])
        }
        for k, s in enumerate(self.stages):  # a column at a time
            t = np.concatenate([blk.times[k][p] for blk, p in pairs])
            seen = np.concatenate([blk.seen[k][p] for blk, p in pairs])
            if order is not None:
                t, seen = t[order], seen[order]
            columns[s] = pl.Series(s, t)
            columns["_seen_" + s] = pl.Series(seen)
        return pl.DataFrame(columns).select(
            (pl.lit(self.prefix) + pl.col("_n").cast(pl.String).str.zfill(JOB_DIGITS)).alias("job"),
            *[pl.when(pl.col("_seen_" + s)).then(pl.col(s)).alias(s) for s in self.stages],
        )
