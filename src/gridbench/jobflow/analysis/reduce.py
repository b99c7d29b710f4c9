"""A trial's events reduced, one chunk at a time, to what the analysis reads.

The analysis needs one row per job (the first time each stage was reached: the wide
:class:`Timeline`) and a handful of events with attributes (failures, users, transfers,
remote agents' submit stamps). Both are built from the log's chunks (~1 M events each,
read in turn), so memory is bounded by the number of jobs, not of events; every step is
a polars group-by or filter (or a numpy scatter) over a chunk, never a Python loop per
event:

- the timeline: keyed by the job's number when every id is gridbench's own
  ``<trial>-<number>`` (:mod:`gridbench.jobflow.analysis.numbered`); otherwise, per chunk,
  one ``group_by`` on a 64-bit hash of the job id with a
  ``min`` per stage (a second hash, whose min and max must agree within each group,
  detects a collision; then the exact string key is used); the partial tables are merged
  by the same group-by whenever they have doubled. Jobs keep the order of their first
  event;
- each stage's precision (coarsest and median) and clocks, from counts per (stage,
  agent, precision);
- ``rest``: the events the other measures read, in log order (a filter).

A load model that reads the whole trial (``reads_events``: the closed models, whose runs
are small) gets all events in ``rest``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import polars as pl

from gridbench.jobflow.analysis.agents import remote_agents
from gridbench.jobflow.analysis.clocks import (
    BOUND_COLUMN,
    StageClock,
    clocks_from_pairs,
    to_controller_time,
)
from gridbench.jobflow.analysis.numbered import NotNumbered, NumberedJobs
from gridbench.jobflow.analysis.staging import STARTS, TRANSFERS
from gridbench.jobflow.analysis.timelines import FAILED_COLUMN, Timeline
from gridbench.jobflow.analysis.workers import made_ahead
from gridbench.jobflow.events.job_numbers import with_job_names, with_job_numbers
from gridbench.jobflow.events.model import (
    EVENT_SCHEMA,
    STAGE_FAILED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)

_ROW = "_row"
#: hash buckets of the per-job table (a merge copies one)
BUCKETS = 16
#: the fewest rows of a bucket's partials worth a merge
MERGE_MIN = 250_000
#: a bucket is merged when its partials have doubled since its last merge: each merge
#: re-groups the whole bucket, so growth by a quarter re-grouped each row ~5 times (10 M
#: jobs: 96 s of CPU against 80 s), while the peak stayed in the analysis that follows
_MERGE_GROWTH = 2.0


def keep_expr(
    stages: Sequence[str], agents: Mapping[str, Any], *, all_events: bool, by_agent: bool
) -> pl.Expr:
    """The events ``rest`` keeps: failures, stamps reporting a status, transfers, submit
    stamps naming a user (all of them when users are agents), remote agents' submit and
    ack stamps. A superset of what each measure filters again."""
    if all_events:
        return pl.lit(True)
    stage, attrs = pl.col("stage"), pl.col("attrs").fill_null("")
    keep = (
        (stage == STAGE_FAILED)
        | (stage.is_in(list(stages)) & attrs.str.contains('"(?:status|state)"'))
        | stage.is_in([*TRANSFERS.values(), *STARTS.values()])  # a transfer's own time
        | ((stage == STAGE_SUBMIT) & (pl.lit(by_agent) | attrs.str.contains('"user"')))
    )
    remote = remote_agents(agents)
    if remote:
        own = stage.is_in([STAGE_SUBMIT, STAGE_SUBMIT_ACK]) & pl.col("agent").is_in(list(remote))
        keep = keep | own
    return keep


class _JobTable(Protocol):
    """A per-job table built a chunk at a time: :meth:`part` is a pure function of the
    chunk (run on a worker thread, ahead of the fold), :meth:`add` folds it in, in order."""

    def part(self, indexed: pl.DataFrame) -> Any: ...
    def add(self, part: Any) -> None: ...
    def table(self) -> pl.DataFrame: ...


#: what a reduction reads: the events in log order, chunk by chunk; given a job prefix,
#: with each job's number (``job_no``, -1 for an id not of that form) in place of ``job``
#: (:mod:`gridbench.jobflow.events.job_numbers`). Called once per path tried.
Chunks = Callable[[str | None], Iterable[pl.DataFrame]]


def reduce_events(
    chunks: Chunks,
    stages: Sequence[str],
    keep: pl.Expr,
    *,
    merge_min: int = MERGE_MIN,
    job_prefix: str | None = None,
) -> ReducedEvents:
    """Reduce the events ``chunks`` gives (on the controller's clock, with
    ``clock_bound_ns``) for the timeline stages ``stages``; ``keep``: see :func:`keep_expr`.
    With ``job_prefix`` (:func:`gridbench.jobflow.events.model.job_prefix`), the per-job
    table is keyed by the jobs' numbers (:mod:`gridbench.jobflow.analysis.numbered`)
    unless an id is not of that form; then, and after a hash collision, the log is read
    again on the next path. ``merge_min``: the fewest rows of a bucket's partials that
    are merged."""
    names = tuple(stages)
    paths: list[tuple[str, str | None, Callable[[], _JobTable]]] = [
        ("hash", None, lambda: _Merged(names, exact=False, merge_min=merge_min)),
        ("id", None, lambda: _Merged(names, exact=True, merge_min=merge_min)),
    ]
    if job_prefix is not None:
        prefix = job_prefix
        paths.insert(0, ("number", prefix, lambda: NumberedJobs(names, prefix)))
    for key, numbered, make in paths[:-1]:
        try:
            return _reduce(chunks(numbered), names, keep, make(), key, numbered)
        except (NotNumbered, _Collision):
            continue
    key, numbered, make = paths[-1]
    return _reduce(chunks(numbered), names, keep, make(), key, numbered)


@dataclass(frozen=True)
class _Piece:
    """One chunk's share of the reduction: its per-job part, its (stage, agent,
    precision) counts, the rows ``rest`` keeps, and how many events it held."""

    wide: Any
    counts: pl.DataFrame
    kept: pl.DataFrame
    events: int


def _pieces(
    chunks: Iterable[pl.DataFrame], wide: _JobTable, keep: pl.Expr, job_prefix: str | None
) -> Iterator[_Piece]:
    """Each non-empty chunk's share, with the log row it starts at."""
    base = 0
    for chunk in chunks:
        if chunk.height:
            yield _piece(wide, keep, job_prefix, base, chunk)
            base += chunk.height


def _piece(
    wide: _JobTable, keep: pl.Expr, job_prefix: str | None, base: int, chunk: pl.DataFrame
) -> _Piece:
    """A chunk's share (``job_prefix``: its jobs come as numbers; the kept rows are
    named again, once the part has proved every number is the trial's)."""
    part = wide.part(chunk.with_row_index(_ROW, offset=base))
    kept = chunk.filter(keep)
    if job_prefix is not None:
        kept = with_job_names(kept, job_prefix)
    # lazy: the query reads only the four columns (eager: 16 ms against 7 ms a 1 M chunk)
    counts = (
        chunk.lazy()
        .group_by("stage", "agent", "precision_ns")
        .agg(pl.len().alias("n"), pl.col(BOUND_COLUMN).max().alias("b"))
        .collect()
    )
    return _Piece(part, counts, _compact(kept), chunk.height)


def _reduce(
    chunks: Iterable[pl.DataFrame],
    stages: tuple[str, ...],
    keep: pl.Expr,
    wide: _JobTable,
    job_key: str = "hash",
    job_prefix: str | None = None,
) -> ReducedEvents:
    small, rest = [], []
    base = 0
    # three stages at once, each on its own thread: reading, each chunk's pure work, and
    # the fold here; measured on 10 M jobs, the fold alone had held the pure work (12.5 s
    # of 19.5) while reading waited. Closed here, in this order, however the loop ends.
    with contextlib.ExitStack() as stages_:
        reading = stages_.enter_context(contextlib.closing(made_ahead(chunks)))
        pieces = _pieces(reading, wide, keep, job_prefix)
        for piece in stages_.enter_context(contextlib.closing(made_ahead(pieces))):
            wide.add(piece.wide)
            small.append(piece.counts)
            rest.append(piece.kept)
            base += piece.events
    counts = _as_strings(pl.concat(small)) if small else _EMPTY_COUNTS
    kept = _as_strings(pl.concat(rest)) if rest else _EMPTY_REST
    table = wide.table()
    precision, typical = _precisions(counts, stages)
    clocks = _clocks(counts, stages)
    table = table.with_columns(_failed_kinds(kept, table["job"]))
    timeline = Timeline(stages, table, precision, clocks, typical)
    return ReducedEvents(timeline, kept, base, job_key)


def _compact(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` holding its own copy of its rows' strings: a filtered or grouped frame's
    strings are views into the whole chunk's buffers, and those of a columnar log into
    the mapped file, so kept rows would keep every chunk alive and page the log back in
    when read (measured: +470 MB a million jobs). ``concat_str`` writes new strings."""
    present = [c for c, t in frame.schema.items() if t == pl.String]
    return frame.with_columns(pl.concat_str(pl.col(c), pl.lit("")) for c in present).shrink_to_fit()


def _as_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its categorical columns (a log read with ``categorical``) as the
    strings of :data:`EVENT_SCHEMA`."""
    cats = [c for c, t in frame.schema.items() if isinstance(t, pl.Categorical)]
    return frame.with_columns(pl.col(cats).cast(pl.String)) if cats else frame


#: the events the timeline itself reads beside the stages: failures (each job's kind)
TIMELINE_KEEP = pl.col("stage") == STAGE_FAILED


def timeline_of(events: pl.DataFrame, stages: Sequence[str]) -> Timeline:
    """The per-job timeline of an in-memory frame of events (moved to the controller's
    clock here unless :func:`gridbench.jobflow.analysis.clocks.to_controller_time` did)."""
    moved = events if BOUND_COLUMN in events.columns else to_controller_time(events, {})
    return reduce_events(in_chunks(moved), stages, TIMELINE_KEEP).take()[0]


#: events per chunk of an in-memory frame
CHUNK_EVENTS = 1_000_000


def frame_chunks(
    events: pl.DataFrame, size: int = CHUNK_EVENTS, job_prefix: str | None = None
) -> Iterator[pl.DataFrame]:
    """An in-memory frame in chunks of ``size`` events (``job_prefix``: see :data:`Chunks`)."""
    for chunk in events.iter_slices(size):
        yield chunk if job_prefix is None else with_job_numbers(chunk, job_prefix)


def in_chunks(events: pl.DataFrame, size: int = CHUNK_EVENTS) -> Chunks:
    """An in-memory frame as what :func:`reduce_events` reads."""
    return functools.partial(frame_chunks, events, size)


_EMPTY_COUNTS = pl.DataFrame(
    schema={
        "stage": pl.String,
        "agent": pl.String,
        "precision_ns": pl.Int64,
        "n": pl.UInt32,
        "b": pl.Int64,
    }
)
_EMPTY_REST = pl.DataFrame(schema={**EVENT_SCHEMA, BOUND_COLUMN: pl.Int64})


class _Merged:
    """The per-job table of the chunks seen so far, in :data:`BUCKETS` hash buckets: each
    bucket's partial group-by results are merged by the same group-by whenever they hold
    twice the rows of its last merge, so a merge copies one bucket, not the table, and
    partials at most double it."""

    def __init__(self, stages: tuple[str, ...], *, exact: bool, merge_min: int) -> None:
        self.stages = stages
        self.merge_min = merge_min
        self.exact = exact  # keyed by the job id itself (after a collision; slower)
        self.parts: list[list[pl.DataFrame]] = [[] for _ in range(BUCKETS)]
        self.rows = [0] * BUCKETS
        self.merged_rows = [0] * BUCKETS

    def part(self, indexed: pl.DataFrame) -> pl.DataFrame:
        """The chunk grouped by job: its first row and each stage's earliest time."""
        mins = [pl.when(pl.col("stage") == s).then(pl.col("t_ns")).alias(s) for s in self.stages]
        h1 = pl.col("job").hash(11)
        # one chunk per column: polars' string aggregations and gathers over the many small
        # chunks of a log's batches cost ~5x more (measured: 1.19 s -> 0.74 s a million jobs)
        part = (
            indexed.rechunk()
            .select(
                _ROW,
                "job",
                (pl.col("job") if self.exact else h1).alias("_h1"),
                (pl.lit(0, pl.UInt64) if self.exact else pl.col("job").hash(97)).alias("_h2"),
                (h1 % BUCKETS).alias("_b"),
                *mins,
            )
            .group_by("_h1")
            .agg(
                pl.col("_b").first(),
                pl.col(_ROW).min(),
                pl.col("job").first(),
                pl.col("_h2").min().alias("_h2min"),
                pl.col("_h2").max().alias("_h2max"),
                *[pl.col(s).min() for s in self.stages],
            )
        )
        return _compact(part)  # the job id (and the exact key after a collision)

    def add(self, part: pl.DataFrame) -> None:
        for (b,), bucket in part.partition_by("_b", as_dict=True, include_key=False).items():
            k = int(b)
            self.parts[k].append(bucket)
            self.rows[k] += bucket.height
            if self.rows[k] > max(_MERGE_GROWTH * self.merged_rows[k], self.merge_min):
                self._merge(k)

    def _merge(self, k: int) -> None:
        both = pl.concat(self.parts[k], rechunk=True)
        self.parts[k] = []
        merged = both.group_by("_h1").agg(
            pl.col(_ROW).min(),
            pl.col("job").first(),
            pl.col("_h2min").min(),
            pl.col("_h2max").max(),
            *[pl.col(s).min() for s in self.stages],
        )
        del both
        self.parts[k] = [merged]
        self.rows[k] = self.merged_rows[k] = merged.height

    def table(self) -> pl.DataFrame:
        """``job`` and each stage's earliest time, one row per job in first-event order
        (built a column at a time: the unsorted and the sorted table never both whole)."""
        done: list[pl.DataFrame] = []
        for k in range(BUCKETS):
            if len(self.parts[k]) > 1 or (self.parts[k] and not self.merged_rows[k]):
                self._merge(k)
            if self.parts[k]:
                wide = self.parts[k][0]
                if bool((wide["_h2min"] != wide["_h2max"]).any()):
                    raise _Collision
                done.append(wide.select(_ROW, "job", *self.stages))
            self.parts[k] = []
        if not done:
            empty = {"job": pl.String, **dict.fromkeys(self.stages, pl.Int64)}
            return pl.DataFrame(schema=empty)
        wide = pl.concat(done, rechunk=True)
        del done
        order = wide[_ROW].arg_sort()
        out: dict[str, pl.Series] = {}
        for c in ("job", *self.stages):
            out[c] = wide[c].gather(order)
            wide = wide.drop(c)
        return pl.DataFrame(out)


@dataclass
class ReducedEvents:
    """The timeline and the events the other measures read (``rest``, log order);
    :meth:`take` hands them over so the per-job table can be freed once read."""

    timeline: Timeline | None
    rest: pl.DataFrame | None
    events: int  # how many there were
    #: what keyed the per-job table: "number" (gridbench's own job names), "hash" (a
    #: 64-bit hash of other ids), "id" (the ids themselves, after a hash collision)
    job_key: str = "hash"

    def take(self) -> tuple[Timeline, pl.DataFrame]:
        tl, rest = self.timeline, self.rest
        if tl is None or rest is None:
            raise RuntimeError("reduced events already taken")
        self.timeline = self.rest = None
        return tl, rest


class _Collision(Exception):
    """Two job ids share a 64-bit hash (then the exact string-keyed path is taken)."""


def _precisions(
    small: pl.DataFrame, stages: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """Per stage the coarsest precision and the median of its stamps' (from counts of each
    value; a null precision counts as 0)."""
    precision = dict.fromkeys(stages, 0)
    typical = dict.fromkeys(stages, 0)
    counts = (
        small.filter(pl.col("stage").is_in(list(stages)))
        .group_by("stage", pl.col("precision_ns").fill_null(0).alias("p"))
        .agg(pl.col("n").sum())
        .sort("stage", "p")
    )
    for (stage,), part in counts.partition_by("stage", as_dict=True).items():
        p = part["p"].to_numpy()
        cum = np.cumsum(part["n"].to_numpy())
        total = int(cum[-1])
        lo = p[np.searchsorted(cum, (total - 1) // 2, side="right")]
        hi = p[np.searchsorted(cum, total // 2, side="right")]
        precision[str(stage)] = int(p[-1])
        typical[str(stage)] = int((float(lo) + float(hi)) / 2)
    return precision, typical


def _clocks(small: pl.DataFrame, stages: tuple[str, ...]) -> dict[str, StageClock]:
    if small.height == 0 or not (small["b"].max() or 0) > 0:  # type: ignore[operator]
        return {}  # the common one-clock trial
    pairs = small.group_by("stage", "agent").agg(pl.col("b").max())
    return clocks_from_pairs(pairs, stages)


def _failed_kinds(rest: pl.DataFrame, jobs: pl.Series) -> pl.Series:
    """Kind of each job's earliest failure (``attrs.kind``, "unknown" when absent; of
    failures at the same time the first logged), null when it did not fail."""
    failed = rest.filter(pl.col("stage") == STAGE_FAILED)
    if failed.height == 0:
        return pl.Series(FAILED_COLUMN, [None] * jobs.len(), dtype=pl.String)
    kind = pl.col("attrs").str.json_path_match("$.kind").fill_null("unknown")
    first = failed.group_by("job").agg(
        kind.sort_by("t_ns", nulls_last=True, maintain_order=True).first().alias(FAILED_COLUMN)
    )
    joined = pl.DataFrame({"job": jobs}).join(first, on="job", how="left", maintain_order="left")
    return joined[FAILED_COLUMN]
