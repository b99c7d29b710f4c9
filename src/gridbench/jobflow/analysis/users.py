"""Results broken down per virtual user (spec ``users``, or the sustain model's users).

Each job's user is the ``user`` attribute of its submit stamp; a sustain trial without
declared users falls back to the submitting agent, which is one per virtual user there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow.analysis.latency import Durations
from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.events.model import STAGE_SUBMIT
from gridbench.stats import describe

NO_USER = "(none)"


def job_users(events: pl.DataFrame, jobs: pl.Series, *, agent_fallback: bool) -> pl.Series | None:
    """The user of every job in ``jobs`` order; ``None`` when no job names one."""
    submits = events.filter(pl.col("stage") == STAGE_SUBMIT)
    user = pl.col("attrs").str.json_path_match("$.user")
    if agent_fallback:
        user = pl.coalesce(user, pl.col("agent"))
    named = submits.select("job", user.alias("user")).filter(pl.col("user").is_not_null())
    if named.height == 0:
        return None
    first = named.unique("job", keep="first", maintain_order=True)
    joined = pl.DataFrame({"job": jobs}).join(first, on="job", how="left", maintain_order="left")
    return joined["user"].fill_null(NO_USER)


def user_breakdown(
    users: pl.Series, jt: JobTimes, durations: Durations, end_stage: str
) -> dict[str, Any]:
    """Per user: job counts, failures by kind, and overall / submit-call latency stats."""
    names = users.to_numpy()
    failed = jt.failed
    done = np.isfinite(jt.get(end_stage)) & ~failed
    out: dict[str, Any] = {}
    for name in sorted(set(names.tolist())):  # a handful of users, not one pass per job
        mask = names == name
        kinds = jt.failed_kind[mask]
        codes, counts = np.unique(kinds[kinds >= 0], return_counts=True)
        by_kind = {jt.kinds[k]: int(c) for k, c in zip(codes, counts, strict=True)}
        out[str(name)] = {
            "jobs": int(np.count_nonzero(mask)),
            "completed": int(np.count_nonzero(done & mask)),
            "failed": int(np.count_nonzero(failed & mask)),
            "failures": by_kind,
            "overall": describe(durations["overall"][mask]),
            "submit_call": describe(durations["submit_call"][mask]),
        }
    return out
