"""Which jobs of an event log are still out: acknowledged, never seen to end.

The run's cleanup cancels them after a crash; the controller cancels a lost agent's.
"""

from __future__ import annotations

import polars as pl

from gridbench.jobflow.events.model import (
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT_ACK,
)


def outstanding_jobs(events: pl.DataFrame) -> pl.DataFrame:
    """(job, backend_id) of jobs acknowledged but never seen to end or be cancelled.

    A job recorded as ``lost`` (still running when the run gave up on it) is outstanding.
    """
    acked = events.filter(pl.col("stage") == STAGE_SUBMIT_ACK).select(
        "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("backend_id")
    )
    kind = pl.col("attrs").str.json_path_match("$.kind")
    ended = (
        events.filter(
            pl.col("stage").is_in([STAGE_CLIENT_DONE, STAGE_CANCELLED])
            | ((pl.col("stage") == STAGE_FAILED) & (kind.is_null() | (kind != FAIL_LOST)))
        )
        .select("job")
        .unique()
    )
    return acked.join(ended, on="job", how="anti").drop_nulls("backend_id").unique("job")
