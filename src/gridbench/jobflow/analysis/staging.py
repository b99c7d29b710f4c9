"""Data staging beside latency: the bytes and files each timed transfer moved and its
rate, from the attributes of the transfers' end stamps (``downloaded``, ``staged_in``,
``staged_out``; pure, columnar)."""

from __future__ import annotations

from typing import Any

import polars as pl

STAGE_DOWNLOADED = "downloaded"


#: transfer kind -> the stage whose stamp carries its bytes, files and rate
TRANSFERS = {
    "upload": "uploaded",
    "stage_in": "staged_in",
    "download": STAGE_DOWNLOADED,
    "stage_out": "staged_out",
}
#: transfer kind -> the stage that starts it (the transfer's own time runs to its end)
STARTS = {
    "upload": "upload_start",
    "stage_in": "stage_in_start",
    "download": "download_start",
    "stage_out": "stage_out_start",
}


def staging_stats(events: pl.DataFrame) -> dict[str, Any] | None:
    """Per transfer kind (``stage_in``, ``stage_out``: the reference grid's; ``upload``,
    ``download``: the command backend's) ``{jobs, bytes_total, bytes_p50, files_p50,
    rate_bps_p50, rate_bps_min, seconds_p50, errors}`` (``seconds``: the transfer's own
    time, its start stamp to its end stamp), or None when the trial timed no transfer.
    Attributes are foreign input: a value that is not a number counts as missing."""
    out = {kind: _one(events, stage, STARTS[kind]) for kind, stage in TRANSFERS.items()}
    kept = {k: v for k, v in out.items() if v is not None}
    return kept or None


def _one(events: pl.DataFrame, stage: str, start: str) -> dict[str, Any] | None:
    d = events.filter(pl.col("stage") == stage)
    if d.is_empty():
        return None
    began = (
        events.filter(pl.col("stage") == start)
        .group_by("job")
        .agg(pl.col("t_ns").min().alias("t0"))
    )
    d = d.join(began, on="job", how="left")
    a = d.select(
        ((pl.col("t_ns") - pl.col("t0")) / 1e9).alias("s"),
        pl.col("attrs").str.json_path_match("$.bytes").cast(pl.Float64, strict=False).alias("b"),
        pl.col("attrs").str.json_path_match("$.files").cast(pl.Float64, strict=False).alias("f"),
        pl.col("attrs").str.json_path_match("$.rate_bps").cast(pl.Float64, strict=False).alias("r"),
        pl.col("attrs").str.json_path_match("$.error").is_not_null().alias("e"),
    )
    row: dict[str, Any] = a.select(
        pl.len().alias("jobs"),
        pl.col("b").sum().alias("bytes_total"),
        pl.col("b").median().alias("bytes_p50"),
        pl.col("f").median().alias("files_p50"),
        pl.col("r").median().alias("rate_bps_p50"),
        pl.col("r").min().alias("rate_bps_min"),
        pl.col("s").median().alias("seconds_p50"),
        pl.col("e").sum().alias("errors"),
    ).row(0, named=True)
    return row
