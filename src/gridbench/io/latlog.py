"""fio latency logs (``write_lat_log``): per-I/O lines ``msec, value, ddir, bs, offset[, prio]``
read columnar with polars, summarised to percentiles and a per-second series.

A one-hour run at a few thousand IOPS logs millions of lines; they are never looped over
in Python. ``value`` is nanoseconds (fio >= 3.x logs latency in ns); ``ddir`` is 0 read,
1 write, 2 trim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.errors import ResultsError
from gridbench.store.safe_open import refuse_compressed

COLUMNS = ["msec", "ns", "ddir", "bs", "offset"]
DDIR = {0: "read", 1: "write", 2: "trim"}


def read_lat_log(path: Path) -> pl.DataFrame:
    """The log as a frame (msec, ns, ddir, bs, offset); ResultsError naming the file if it
    is not a fio latency log."""
    try:
        with open(path, "rb") as fh:
            refuse_compressed(fh.read(4), path)  # polars would inflate it, unbounded
        return pl.read_csv(
            path,
            has_header=False,
            columns=[0, 1, 2, 3, 4],  # newer fio adds a priority column
            new_columns=COLUMNS,
            schema_overrides=dict.fromkeys(COLUMNS, pl.Int64),
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, OSError) as exc:
        raise ResultsError(
            f"not a fio latency log: {str(exc).splitlines()[0]}",
            where=str(path),
            fix="give a *_lat.N.log file written by fio's write_lat_log",
        ) from None


def summarise(df: pl.DataFrame) -> dict[str, Any]:
    """Per direction: count, mean and p50/p90/p99/p99.9 latency (ms), and a per-second
    series of I/O count and p99 (ms)."""
    out: dict[str, Any] = {}
    for code, name in DDIR.items():
        d = df.filter(pl.col("ddir") == code)
        if d.height == 0:
            continue
        # one sort, then nearest-rank percentiles by index (cheaper than a polars
        # quantile per percentile, each of which sorts again)
        ns = np.sort(d["ns"].to_numpy())
        idx = (
            (np.ceil(np.array([0.5, 0.9, 0.99, 0.999]) * ns.size) - 1)
            .clip(0, ns.size - 1)
            .astype(int)
        )
        p50, p90, p99, p999 = (float(v) / 1e6 for v in ns[idx])
        stats = {
            "n": int(ns.size),
            "mean": float(ns.mean()) / 1e6,
            "p50": p50,
            "p90": p90,
            "p99": p99,
            "p999": p999,
        }
        ms = pl.col("ns") / 1e6
        width = bin_ms(int(np.max(d["msec"].to_numpy())))
        per_s = (
            d.group_by((pl.col("msec") // width * width / 1000).alias("second"))
            .agg(ios=pl.len(), p99_ms=ms.quantile(0.99, "nearest"), bytes=pl.col("bs").sum())
            .sort("second")
        )
        out[name] = {**stats, "per_second": {**per_s.to_dict(as_series=False), "bin_ms": width}}
    return out


#: bin widths of the latency series, widest first
BINS_MS = (1000, 500, 200, 100, 50, 20, 10, 5, 2, 1)


def bin_ms(span_ms: int) -> int:
    """The widest bin that still cuts a test of ``span_ms`` into 10 or more points (a test
    shorter than a second would otherwise be one point at x = 0)."""
    return next((b for b in BINS_MS if span_ms // b >= 10), BINS_MS[-1])
