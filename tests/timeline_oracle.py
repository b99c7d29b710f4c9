"""An independent, in-memory pivot of a trial's events into the per-job timeline: the
oracle the chunked reduction (gridbench.jobflow.analysis.reduce) is checked against.

It keys jobs by two 64-bit hashes of their id, scatters times with numpy (a min-reduce
where a (job, stage) pair repeats) and takes each job's earliest failure; it reads the
whole frame at once, so it is for tests, not for runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.jobflow.analysis.clocks import stage_clocks
from gridbench.jobflow.analysis.timelines import FAILED_COLUMN, Timeline
from gridbench.jobflow.events.model import STAGE_FAILED

_MISSING = np.iinfo(np.int64).max


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
