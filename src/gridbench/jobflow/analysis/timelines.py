"""Events -> one row per job: the first time each stage was reached, on the reference clock.

The events are already on the controller's clock (``t_ns − clock_offset_ns``, applied once
where they are loaded: :func:`gridbench.jobflow.analysis.clocks.to_controller_time`). When a (job,
stage) pair was stamped more than once (re-polls, duplicated reports) the earliest time
wins. Each stage also carries the coarsest precision any of its stamps declared, and the
clocks that stamped it: their largest offset bound and the agents (``StageClock``).
A job's failure is its earliest ``failed`` event, with ``attrs["kind"]`` ("unknown" when
absent).

Jobs are keyed by two independent 64-bit hashes of their id, grouped in polars and
scattered with numpy, so the cost is a few passes over the columns, not a loop per event.
If the two hashes ever disagree (a collision), an exact string-keyed path is taken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.jobflow.analysis.clocks import StageClock, stage_clocks
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import (
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_INTENDED,
    STAGE_SUBMIT_ACK,
)

_MISSING = np.iinfo(np.int64).max
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

    @property
    def n_jobs(self) -> int:
        return int(self.failed_kind.size)

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


def _job_ids(events: pl.DataFrame) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Dense job id per event row (in order of first appearance) and each job's first row."""
    h = events.select(pl.col("job").hash(11).alias("h1"), pl.col("job").hash(97).alias("h2"))
    first = np.sort(h.select(pl.col("h1").arg_unique())["h1"].to_numpy().astype(np.int64))
    u = pl.DataFrame({"h1": h["h1"].gather(first), "jid": np.arange(first.size, dtype=np.int64)})
    jid = (
        h.select("h1")
        .join(u, on="h1", how="left", maintain_order="left")["jid"]
        .to_numpy()
        .astype(np.int64, copy=False)
    )
    # A second, independent hash must agree within each job, else two ids collided.
    h2 = h["h2"].to_numpy()
    if not np.array_equal(h2, h2[first][jid]):
        return _job_ids_exact(events)
    return jid, first


def _job_ids_exact(events: pl.DataFrame) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """String-keyed fallback (slower; only taken on a 64-bit hash collision)."""
    idx = events.select("job").with_row_index("i")
    u = (
        idx.group_by("job")
        .agg(pl.col("i").min().alias("first"))
        .sort("first")
        .with_row_index("jid")
    )
    jid = (
        idx.join(u.select("job", "jid"), on="job", how="left", maintain_order="left")["jid"]
        .to_numpy()
        .astype(np.int64)
    )
    return jid, u["first"].to_numpy().astype(np.int64)


def build_timeline(events: pl.DataFrame, stages: Sequence[str]) -> Timeline:
    """Pivot an event frame (EVENT_SCHEMA) into the wide per-job :class:`Timeline`."""
    stages = tuple(stages)
    s_count = len(stages)
    cols = events.select(
        pl.col("stage")
        .replace_strict(list(stages), list(range(s_count)), default=None, return_dtype=pl.Int16)
        .fill_null(-1)
        .alias("s"),
        pl.col("t_ns").alias("t"),
        (pl.col("stage") == STAGE_FAILED).fill_null(False).alias("is_failed"),
        pl.col("precision_ns").fill_null(0).alias("p"),
    )
    if events.height == 0:
        empty: dict[str, pl.Series] = {"job": pl.Series("job", [], dtype=pl.String)}
        empty.update({s: pl.Series(s, [], dtype=pl.Int64) for s in stages})
        empty[FAILED_COLUMN] = pl.Series(FAILED_COLUMN, [], dtype=pl.String)
        return Timeline(stages, pl.DataFrame(empty), dict.fromkeys(stages, 0))
    jid, first_row = _job_ids(events)
    n_jobs = int(first_row.size)
    s = cols["s"].to_numpy()
    t = cols["t"].to_numpy()
    keep = s >= 0
    if keep.all():
        flat, tv = jid * s_count + s, t
    else:
        flat, tv = jid[keep] * s_count + s[keep], t[keep]
    wide = np.full(n_jobs * s_count, _MISSING, dtype=np.int64)
    # Plain scatter is exact where each (job, stage) occurs once; repeated pairs get a min-reduce.
    wide[flat] = tv
    if np.count_nonzero(wide != _MISSING) < flat.size:
        counts = np.bincount(flat, minlength=n_jobs * s_count)
        dup = counts[flat] > 1
        np.minimum.at(wide, flat[dup], tv[dup])
    mat = wide.reshape(n_jobs, s_count)

    prec = (
        cols.filter(pl.col("s") >= 0)
        .group_by("s")
        .agg(pl.col("p").max().alias("max"), pl.col("p").median().alias("median"))
        .rows()
    )
    precision = dict.fromkeys(stages, 0)
    typical = dict.fromkeys(stages, 0)
    for si, p, med in prec:
        precision[stages[int(si)]] = int(p)
        typical[stages[int(si)]] = int(med)

    data: dict[str, pl.Series] = {"job": events["job"].gather(first_row)}
    for i, name in enumerate(stages):
        col = pl.Series(name, mat[:, i])
        data[name] = col.set(col == _MISSING, None) if (mat[:, i] == _MISSING).any() else col
    data[FAILED_COLUMN] = _failed_kinds(events, cols, jid, n_jobs)
    return Timeline(stages, pl.DataFrame(data), precision, stage_clocks(events, stages), typical)


def _failed_kinds(
    events: pl.DataFrame, cols: pl.DataFrame, jid: NDArray[np.int64], n_jobs: int
) -> pl.Series:
    """Kind of each job's earliest failure (null when none)."""
    mask = cols["is_failed"].to_numpy()
    out = pl.Series(FAILED_COLUMN, [None] * n_jobs, dtype=pl.String)
    if not mask.any():
        return out
    rows = np.flatnonzero(mask)
    f = events[rows].select(
        pl.col("attrs").str.json_path_match("$.kind").fill_null("unknown").alias("kind")
    )
    kinds = f["kind"].to_numpy()
    ft = cols["t"].to_numpy()[rows]
    fj = jid[rows]
    order = np.lexsort((ft, fj))  # by job, then time: the first of each job is its earliest
    fj_sorted = fj[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = fj_sorted[1:] != fj_sorted[:-1]
    pick = order[first]
    return out.scatter(fj[pick], pl.Series(kinds[pick], dtype=pl.String))


def job_times(tl: Timeline, origin_ns: int) -> JobTimes:
    """Seconds since ``origin_ns`` per stage, failure codes and precisions in seconds."""
    tbl = tl.table
    t: dict[str, NDArray[np.float64]] = {}
    if tbl.height:
        conv = tbl.select(
            [((pl.col(s) - origin_ns).cast(pl.Float64) / 1e9).alias(s) for s in tl.stages]
        )
        for s in tl.stages:
            t[s] = conv[s].to_numpy().astype(np.float64, copy=False)
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
    return JobTimes(origin_ns, t, codes, kinds, precision_s, dict(tl.clocks), typical_s)


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
