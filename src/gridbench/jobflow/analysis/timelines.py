"""Events -> one row per job: the first time each stage was reached, on the reference clock.

The events are already on the controller's clock (``t_ns − clock_offset_ns``, applied once
where they are loaded: :func:`gridbench.jobflow.analysis.clocks.to_controller_time`). When a (job,
stage) pair was stamped more than once (re-polls, duplicated reports) the earliest time
wins. Each stage also carries the coarsest precision any of its stamps declared, and the
clocks that stamped it: their largest offset bound and the agents (``StageClock``).
A job's failure is its earliest ``failed`` event, with ``attrs["kind"]`` ("unknown" when
absent).

The table is built a chunk of the log at a time by
:mod:`gridbench.jobflow.analysis.reduce` (:func:`~gridbench.jobflow.analysis.reduce.timeline_of`
for an in-memory frame); this module holds what it builds and the numeric view of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.jobflow.analysis.clocks import StageClock
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import (
    STAGE_CLIENT_DONE,
    STAGE_INTENDED,
    STAGE_SUBMIT_ACK,
)
from gridbench.store.safe_open import INT64_MAX, INT64_MIN

FAILED_COLUMN = "failed"  # kind of the job's first failure, null when it did not fail


@dataclass(frozen=True)
class Timeline:
    """Wide per-job table and per-stage facts.

    ``table`` has a ``job`` column, one Int64 column per stage (reference ns, null when the
    stage was never stamped) and ``failed`` (String failure kind or null).
    """

    stages: tuple[str, ...]
    table: pl.DataFrame
    precision_ns: dict[str, int]
    clocks: dict[str, StageClock] = field(default_factory=dict)  # per stage stamped
    #: the median precision of each stage's stamps: a polled stage's typical bracket,
    #: which one stalled sweep does not move (``precision_ns`` keeps the coarsest)
    typical_precision_ns: dict[str, int] = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        return self.table.height


@dataclass(frozen=True)
class JobTimes:
    """Numeric view of a timeline: seconds since ``origin_ns`` (NaN = not reached)."""

    origin_ns: int
    t: dict[str, NDArray[np.float64]]
    failed_kind: NDArray[np.int16]  # -1 = not failed, else an index into ``kinds``
    kinds: tuple[str, ...]
    precision_s: dict[str, float]
    clocks: dict[str, StageClock] = field(default_factory=dict)  # per stage stamped
    typical_precision_s: dict[str, float] = field(default_factory=dict)
    #: stamps too far from ``origin_ns`` to subtract in int64: left out (NaN); validity
    #: makes the trial invalid (:func:`job_times`)
    out_of_range: int = field(default=0, compare=False)
    #: :meth:`span`'s arrays: a segment's durations are read by the latencies and the
    #: validity checks (four passes over the jobs each, without it)
    _spans: dict[tuple[str, str], NDArray[np.float64]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def n_jobs(self) -> int:
        return int(self.failed_kind.size)

    def span(self, start: str, end: str) -> NDArray[np.float64]:
        """``end - start`` per job (NaN where either is missing), computed once (read-only)."""
        key = (start, end)
        if key not in self._spans:
            d = self.get(end) - self.get(start)
            d.flags.writeable = False
            self._spans[key] = d
        return self._spans[key]

    def get(self, stage: str) -> NDArray[np.float64]:
        """Times of ``stage`` (all NaN when the stage is unknown)."""
        arr = self.t.get(stage)
        return arr if arr is not None else np.full(self.n_jobs, np.nan)

    def has(self, stage: str) -> bool:
        """Whether any job reached ``stage``."""
        arr = self.t.get(stage)
        return arr is not None and bool(np.isfinite(arr).any())

    @property
    def failed(self) -> NDArray[np.bool_]:
        return np.asarray(self.failed_kind >= 0, dtype=np.bool_)

    def kind_mask(self, kind: str) -> NDArray[np.bool_]:
        if kind not in self.kinds:
            return np.zeros(self.n_jobs, dtype=bool)
        return np.asarray(self.failed_kind == self.kinds.index(kind), dtype=np.bool_)


def timeline_stages(chain_names: Sequence[str]) -> tuple[str, ...]:
    """The stages a timeline keeps: the chain plus the client-only stages analysis uses."""
    out: list[str] = [STAGE_INTENDED]
    for s in [*chain_names, STAGE_SUBMIT_ACK, STAGE_CLIENT_DONE]:
        if s not in out:
            out.append(s)
    return tuple(out)


def _since(stage: str, origin_ns: int) -> pl.Expr:
    """A stage's stamps as seconds since ``origin_ns``; a stamp so far from it that the
    difference leaves int64 (polars would wrap it to a small number, of either sign) is
    null, counted by :func:`out_of_range`."""
    lo = max(INT64_MIN, origin_ns + INT64_MIN)
    hi = min(INT64_MAX, origin_ns + INT64_MAX)
    col = pl.col(stage)
    safe = pl.when(col.is_between(lo, hi)).then(col - origin_ns)
    return (safe.cast(pl.Float64) / 1e9).alias(stage)


def out_of_range(tl: Timeline, origin_ns: int) -> int:
    """Stamps of the timeline too far from ``origin_ns`` to subtract in int64 (none of a
    real trial: ±292 years)."""
    if not tl.table.height:
        return 0
    lo = max(INT64_MIN, origin_ns + INT64_MIN)
    hi = min(INT64_MAX, origin_ns + INT64_MAX)
    bad = [
        (pl.col(s).is_not_null() & ~pl.col(s).is_between(lo, hi)).sum().alias(s) for s in tl.stages
    ]
    return int(sum(tl.table.select(bad).row(0)))


def job_times(tl: Timeline, origin_ns: int) -> JobTimes:
    """Seconds since ``origin_ns`` per stage, failure codes and precisions in seconds (a
    stamp that cannot be subtracted from the origin in int64 is left out, NaN, and counted
    in ``out_of_range``)."""
    tbl = tl.table
    t: dict[str, NDArray[np.float64]] = {}
    wrapped = 0
    if tbl.height:
        conv = tbl.select([_since(s, origin_ns) for s in tl.stages])
        for s in tl.stages:
            t[s] = conv[s].to_numpy().astype(np.float64, copy=False)
        wrapped = out_of_range(tl, origin_ns)
    else:
        t = {s: np.empty(0, dtype=np.float64) for s in tl.stages}
    fk = tbl[FAILED_COLUMN]
    kinds = tuple(sorted(k for k in fk.unique().to_list() if k is not None))
    codes = np.full(tbl.height, -1, dtype=np.int16)
    if kinds:
        mapped = fk.replace_strict(
            list(kinds), list(range(len(kinds))), default=-1, return_dtype=pl.Int16
        )
        codes = mapped.fill_null(-1).to_numpy().astype(np.int16)
    precision_s = {s: p / 1e9 for s, p in tl.precision_ns.items()}
    typical_s = {s: p / 1e9 for s, p in tl.typical_precision_ns.items()}
    return JobTimes(
        origin_ns, t, codes, kinds, precision_s, dict(tl.clocks), typical_s, out_of_range=wrapped
    )


def with_declared_precision(jt: JobTimes, chain: StageChain) -> JobTimes:
    """``jt`` with each chain stage at least as coarse as the chain declares it (a polled
    stage is declared at the poll interval, whatever its stamps say)."""
    prec, typical = dict(jt.precision_s), dict(jt.typical_precision_s)
    for s in chain.stages:
        if s.name in prec:
            prec[s.name] = max(prec[s.name], s.precision_ns / 1e9)
        if s.name in typical:
            typical[s.name] = max(typical[s.name], s.precision_ns / 1e9)
    return dataclasses.replace(jt, precision_s=prec, typical_precision_s=typical)


#: a stage stamp whose attrs ``status`` (EDGI reports) or ``state`` (the client's tracker)
#: is one of these, compared case-insensitively, reports the job failing at that stage
FAILURE_STATUSES = frozenset({"failed", "error", "aborted", "cancelled", "canceled"})


def stage_failures(
    events: pl.DataFrame, jobs: pl.Series, stages: Sequence[str]
) -> dict[str, NDArray[np.bool_]]:
    """Per stage, per job of ``jobs`` (a timeline's order): was the job reported failing
    at that stage? Such a stamp is a failure, not a passage (METHODS 1.3 counts completed
    jobs). Stages with no failure are left out."""
    attrs = pl.col("attrs")
    status = pl.coalesce(
        attrs.str.json_path_match("$.status"), attrs.str.json_path_match("$.state")
    )
    failing = (
        events.lazy()
        .filter(pl.col("stage").is_in(list(stages)) & attrs.str.contains('"(?:status|state)"'))
        .select("job", "stage", status.str.to_lowercase().alias("st"))
        .filter(pl.col("st").is_in(list(FAILURE_STATUSES)))
        .select("job", "stage")
        .unique()
        .collect()
    )
    out: dict[str, NDArray[np.bool_]] = {}
    for (stage,), part in failing.partition_by("stage", as_dict=True).items():
        out[str(stage)] = jobs.is_in(part["job"].implode()).to_numpy()
    return out
