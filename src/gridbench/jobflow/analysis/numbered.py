"""The per-job table of a trial whose jobs are numbered, built by scattering into arrays.

gridbench names job ``i`` of a trial ``<trial id>-<i zero-padded to 6 digits>`` (the
controller and its agents alike: :func:`gridbench.jobflow.events.model.job_name`). When
every event's job id has exactly that form, the number is a dense key: each stage's
earliest time is a scatter-min into an array indexed by it (``np.minimum.at``), with no
hash table, no partial tables to merge and no string kept per event. A log that is not
numbered so (ingested ids, hand-made logs) raises :class:`NotNumbered` at its first odd
chunk, and the caller takes the hash-keyed path instead.

The arrays grow with the largest number seen, which must stay below
:data:`SPARSE_LIMIT` times the events read (plus a slack): a log naming job
``p00-t00-999999999999`` is refused here rather than allocating for it.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from gridbench.jobflow.events.model import JOB_DIGITS

_ROW = "_row"
_NONE = np.iinfo(np.int64).max
#: the largest job number accepted is this times the events read so far, plus _SLACK: a
#: job has at least one event, so a dense numbering stays far below it
SPARSE_LIMIT = 4
_SLACK = 1 << 16


class NotNumbered(Exception):
    """The log's job ids are not all ``<prefix><number>`` in gridbench's own form."""


class NumberedJobs:
    """Each job's first log row and each stage's earliest time, in arrays indexed by the
    job's number (see the module's docstring)."""

    def __init__(self, stages: tuple[str, ...], prefix: str, *, jobs_hint: int = 0) -> None:
        self.stages = stages
        self.prefix = prefix
        self._hint = jobs_hint  # the trial's planned jobs: the arrays' first size
        # the canonical form only, so that one number is one id: "000042", "1234567"
        # (str(i).zfill(6)), never "0000042", "+00042" or " 42"
        digits = JOB_DIGITS
        self._form = rf"^{re.escape(prefix)}(?:\d{{{digits}}}|[1-9]\d{{{digits},17}})$"
        self._first = np.empty(0, np.int64)  # the job's first row in the log
        self._times = np.empty((len(stages), 0), np.int64)
        self._seen = np.empty((len(stages), 0), np.bool_)
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
        top = int(number.max()) + 1
        if top > SPARSE_LIMIT * self._events + _SLACK:
            raise NotNumbered
        self._grow(top)
        np.minimum.at(self._first, number, indexed[_ROW].to_numpy().astype(np.int64))
        # one scatter for every stage: each event's flat index (its stage's row of the
        # arrays, then its number); -1 for an event of no timeline stage or without a time
        staged = indexed.select(
            pl.when(pl.col("t_ns").is_not_null())
            .then(pl.col("stage").replace_strict(self._index, default=-1, return_dtype=pl.Int64))
            .fill_null(-1)
            .alias("k"),
            pl.col("t_ns").fill_null(0),
        )
        k = staged["k"].to_numpy()
        at = k >= 0
        flat = k[at] * self._first.size + number[at]  # the arrays are C-contiguous: a view
        np.minimum.at(self._times.reshape(-1), flat, staged["t_ns"].to_numpy()[at])
        self._seen.reshape(-1)[flat] = True

    def _grow(self, size: int) -> None:
        have = self._first.size
        if size <= have:
            return
        # the planned jobs at once, then by half again (amortised; a 10 M-job table's
        # doubling would overshoot by up to 8 arrays of 10 M)
        hint = min(self._hint, SPARSE_LIMIT * self._events + _SLACK)  # trial.json is foreign
        size = max(size, have + have // 2, hint)
        first = np.full(size, _NONE, np.int64)
        first[:have] = self._first
        times = np.full((len(self.stages), size), _NONE, np.int64)
        times[:, :have] = self._times
        seen = np.zeros((len(self.stages), size), np.bool_)
        seen[:, :have] = self._seen
        self._first, self._times, self._seen = first, times, seen

    def table(self) -> pl.DataFrame:
        """``job`` and each stage's earliest time, one row per job in first-event order."""
        present = np.flatnonzero(self._first != _NONE)
        order = present[np.argsort(self._first[present], kind="stable")]
        self._first = np.empty(0, np.int64)
        out = pl.DataFrame({"_n": order}).select(
            (pl.lit(self.prefix) + pl.col("_n").cast(pl.String).str.zfill(JOB_DIGITS)).alias("job")
        )
        for k, s in enumerate(self.stages):  # a column at a time: the arrays go as they are read
            column = pl.DataFrame({"t": self._times[k][order], "seen": self._seen[k][order]})
            out = out.with_columns(
                column.select(pl.when(pl.col("seen")).then(pl.col("t")).alias(s)).to_series()
            )
        self._times = np.empty((len(self.stages), 0), np.int64)
        self._seen = np.empty((len(self.stages), 0), np.bool_)
        return out
