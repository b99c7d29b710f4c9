"""Server processes' CPU and memory over a trial, beside the client's own CPU per job.

From server_resources.csv (one row per sampled process: ``t_ns, label, pid, cpu_percent,
rss_bytes, state``) each label gets its CPU (mean and max, % of one core, summed over the
label's processes at each sample), CPU seconds over the trial, RSS (mean and max, summed
likewise), and CPU seconds per submitted job; the client's CPU seconds per job (from
resources.csv) stand beside it, so "the client's cost per request is small beside the
server's" is a number (issue 14; the XtreemOS CDA table).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

#: The samplers' interval, used as the span of a series' first sample.
DEFAULT_INTERVAL_S = 0.5


def cpu_seconds(t_ns: np.ndarray[Any, Any], cpu_percent: np.ndarray[Any, Any]) -> float:
    """CPU seconds from samples of a % of one core, each averaged since the previous one.

    Every sample covers the time since the sample before it; the first covers the median
    interval (the sampler's own, 0.5 s, when there is one sample)."""
    if t_ns.size == 0:
        return 0.0
    order = np.argsort(t_ns, kind="stable")
    t = t_ns[order].astype(np.float64) / 1e9
    cpu = np.nan_to_num(cpu_percent[order].astype(np.float64)) / 100.0
    dt = np.diff(t)
    first = float(np.median(dt)) if dt.size else DEFAULT_INTERVAL_S
    return float(first * cpu[0] + np.sum(dt * cpu[1:]))


def client_cpu_seconds(resources: pl.DataFrame | None) -> float | None:
    """The client's CPU seconds over the trial (resources.csv: gridbench and its children)."""
    if resources is None or not {"t_ns", "cpu_percent"} <= set(resources.columns):
        return None
    r = resources.drop_nulls(["t_ns", "cpu_percent"])
    if r.height == 0:
        return None
    return cpu_seconds(r["t_ns"].to_numpy(), r["cpu_percent"].to_numpy())


def _per_job(seconds: float | None, jobs: int) -> float | None:
    return seconds / jobs if seconds is not None and jobs > 0 else None


def server_resources(
    samples: pl.DataFrame | None,
    submitted: int,
    resources: pl.DataFrame | None = None,
    operations: int | None = None,
) -> dict[str, dict[str, Any]]:
    """The trial's ``server_resources`` object: per label, its CPU and RSS figures and the
    server's and the client's CPU seconds per submitted job, and per timed operation when
    the load model counted its calls (``operations``: a probe of tokens submits no job)
    (empty without samples)."""
    if samples is None or samples.height == 0:
        return {}
    client_s = client_cpu_seconds(resources)
    out: dict[str, dict[str, Any]] = {}
    for label in sorted(samples["label"].drop_nulls().unique().to_list()):
        rows = samples.filter(pl.col("label") == label)
        gone = rows.filter(pl.col("state") == "gone")
        run = rows.filter((pl.col("state") != "gone") | pl.col("state").is_null())
        run = run.drop_nulls(["t_ns", "cpu_percent"])
        # a label's processes (every process of a name) add up at each sample
        per_t = (
            run.group_by("t_ns")
            .agg(pl.col("cpu_percent").sum(), pl.col("rss_bytes").sum())
            .sort("t_ns")
        )
        cpu = per_t["cpu_percent"].to_numpy()
        rss = per_t["rss_bytes"].to_numpy().astype(np.float64)
        busy = cpu_seconds(per_t["t_ns"].to_numpy(), cpu) if per_t.height else None
        out[str(label)] = {
            "samples": per_t.height,
            "processes": run["pid"].n_unique() if run.height else 0,
            "pids": sorted(int(p) for p in rows["pid"].drop_nulls().unique().to_list()),
            "gone": sorted(int(p) for p in gone["pid"].drop_nulls().unique().to_list()),
            "cpu_mean_pct": float(cpu.mean()) if cpu.size else None,
            "cpu_max_pct": float(cpu.max()) if cpu.size else None,
            "cpu_s": busy,
            "rss_mean_bytes": float(rss.mean()) if rss.size else None,
            "rss_max_bytes": float(rss.max()) if rss.size else None,
            "jobs_submitted": submitted,
            "cpu_s_per_job": _per_job(busy, submitted),
            "client_cpu_s": client_s,
            "client_cpu_s_per_job": _per_job(client_s, submitted),
            "operations": operations,
            "cpu_s_per_op": _per_job(busy, operations or 0),
            "client_cpu_s_per_op": _per_job(client_s, operations or 0),
        }
    return out
