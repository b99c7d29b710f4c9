"""A trial's events reduced, in a few streaming passes, to what the analysis reads.

The analysis needs one row per job (the first time each stage was reached: the wide
:class:`Timeline`) and a handful of events with attributes (failures, users, transfers,
remote agents' submit stamps). Both come from polars queries over a lazy frame of the
events (a trial log scanned from disk, or an in-memory frame), so memory is bounded by
the number of jobs, not of events:

- the timeline: one ``group_by`` on a 64-bit hash of the job id with a ``min`` per stage
  (a second hash, whose min and max must agree within each group, detects a collision;
  then the exact string key is used). A log larger than :data:`PART_EVENTS` events is
  grouped in hash partitions, one pass each, so the group table of one partition is
  alive at a time. Jobs keep the order of their first event;
- each stage's precision (coarsest and median) and clocks, from one small group-by;
- ``rest``: the events the other measures read, in log order (a filter).

A load model that reads the whole trial (``reads_events``: the closed models, whose runs
are small) gets all events in ``rest``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow.analysis.agents import remote_agents
from gridbench.jobflow.analysis.clocks import BOUND_COLUMN, StageClock, clocks_from_pairs
from gridbench.jobflow.analysis.staging import TRANSFERS
from gridbench.jobflow.analysis.timelines import FAILED_COLUMN, Timeline
from gridbench.jobflow.events.model import STAGE_FAILED, STAGE_SUBMIT, STAGE_SUBMIT_ACK

#: events per hash partition of the timeline's group-by (its table: ~100 B per job)
PART_EVENTS = 40_000_000
_ROW = "_row"

Collect = Callable[[list[pl.LazyFrame]], list[pl.DataFrame]]


@dataclass(frozen=True)
class ReducedEvents:
    """The timeline and the events the other measures read (``rest``, log order)."""

    timeline: Timeline
    rest: pl.DataFrame
    events: int  # how many there were


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
        | stage.is_in(list(TRANSFERS.values()))
        | ((stage == STAGE_SUBMIT) & (pl.lit(by_agent) | attrs.str.contains('"user"')))
    )
    remote = remote_agents(agents)
    if remote:
        own = stage.is_in([STAGE_SUBMIT, STAGE_SUBMIT_ACK]) & pl.col("agent").is_in(list(remote))
        keep = keep | own
    return keep


def reduce_events(
    events: pl.LazyFrame,
    stages: Sequence[str],
    keep: pl.Expr,
    *,
    n_events: int = 0,
    collect: Collect | None = None,
) -> ReducedEvents:
    """Reduce ``events`` (on the controller's clock, with ``clock_bound_ns``) for the
    stages ``stages``; ``n_events`` (an estimate) sets the partitions, ``collect`` runs
    queries together (default: ``collect_all`` on the streaming engine)."""
    run: Collect = collect or (lambda qs: pl.collect_all(qs, engine="streaming"))
    stages = tuple(stages)
    parts = max(1, -(-n_events // PART_EVENTS))
    wide_q = _wide_queries(events.with_row_index(_ROW), stages, parts)
    small_q = events.group_by("stage", "agent", "precision_ns").agg(
        pl.len().alias("n"), pl.col(BOUND_COLUMN).max().alias("b")
    )
    # the first partition, the counts and ``rest`` in one pass (one read of the log)
    first, small, rest = run([wide_q[0], small_q, events.filter(keep)])
    frames = [first] + [run([q])[0] for q in wide_q[1:]]
    wide = pl.concat(frames) if parts > 1 else first
    if wide.height and bool(wide["_clash"].any()):  # two ids share a hash: exact keys
        wide = run([_exact_query(events.with_row_index(_ROW), stages)])[0]
    wide = wide.sort(_ROW).select("job", *stages)
    precision, typical = _precisions(small, stages)
    clocks = _clocks(small, stages)
    table = wide.with_columns(_failed_kinds(rest, wide["job"]))
    timeline = Timeline(stages, table, precision, clocks, typical)
    return ReducedEvents(timeline, rest, int(small["n"].sum()))


def _masked(indexed: pl.LazyFrame, stages: tuple[str, ...]) -> pl.LazyFrame:
    """Per event its row, job and a column per stage: its time there, else null."""
    mins = [pl.when(pl.col("stage") == s).then(pl.col("t_ns")).alias(s) for s in stages]
    return indexed.select(_ROW, "job", *mins)


def _wide_queries(indexed: pl.LazyFrame, stages: tuple[str, ...], parts: int) -> list[pl.LazyFrame]:
    """Per hash partition of the jobs, one row per job: its first row, ``job``, each
    stage's earliest time (null: never stamped) and ``_clash`` (a hash collision)."""
    h1, h2 = pl.col("job").hash(11), pl.col("job").hash(97)
    cols = _masked(indexed, stages).with_columns(h1.alias("_h1"), h2.alias("_h2"))
    return [
        (cols if parts == 1 else cols.filter(pl.col("_h1") % parts == k))
        .group_by("_h1")
        .agg(
            pl.col(_ROW).min(),
            pl.col("job").first(),
            (pl.col("_h2").min() != pl.col("_h2").max()).alias("_clash"),
            *[pl.col(s).min() for s in stages],
        )
        for k in range(parts)
    ]


def _exact_query(indexed: pl.LazyFrame, stages: tuple[str, ...]) -> pl.LazyFrame:
    """:func:`_wide_queries` keyed by the job id itself (slower; after a collision)."""
    return (
        _masked(indexed, stages)
        .group_by("job")
        .agg(pl.col(_ROW).min(), *[pl.col(s).min() for s in stages])
    )


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
