"""Staging as a tier of the model: a transfer waits for one of the link's streams and
holds it ``files·per_file_s + bytes/bandwidth_bps`` (the reference grid's link,
gridbench.jobflow.reference.staging), so its service time depends on the job's data.

The stamps give each transfer's start (a stream taken) and end, with its bytes and files.
With two sizes or more measured, a least-squares fit of ``duration`` on ``bytes`` (and
``files`` where they vary) gives the bandwidth and the per-file cost; with one size the
bandwidth is the effective rate at that size and the per-file cost cannot be told apart
(the model says so in the link's ``note``). What the formula leaves is the ``overhead``.
Streams: the most transfers seen at once, when jobs waited for one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gridbench.model.fit import F64, Measured, in_flight_at_arrival
from gridbench.model.fitdist import fit_duration
from gridbench.model.spec import ChainModel, Link

#: the fewest transfers a link is fitted on
MIN_TRANSFERS = 5


def link_formula(took: F64, nbytes: F64, files: F64) -> tuple[float, float, str]:
    """``(bandwidth_bps, per_file_s, note)`` from transfer times and their sizes."""
    varies_b = np.ptp(nbytes) > 0
    varies_f = np.ptp(files) > 0
    if varies_b:
        cols = [nbytes, np.ones_like(nbytes)] + ([files] if varies_f else [])
        coef, *_ = np.linalg.lstsq(np.column_stack(cols), took, rcond=None)
        inv_bw = max(float(coef[0]), 1e-12)
        per_file = float(coef[2]) if varies_f else (
            float(coef[1]) / float(files[0]) if files[0] > 0 else 0.0)  # fmt: skip
        return 1.0 / inv_bw, max(per_file, 0.0), ""
    mean_b = float(nbytes.mean())
    took_mean = max(float(np.median(took)), 1e-9)
    return (
        max(mean_b, 1.0) / took_mean,
        0.0,
        "one size measured: the bandwidth is the effective rate at that size and any "
        "per-file cost is in it; measure two sizes to tell them apart",
    )


def streams_seen(arrive: F64, start: F64, end: F64, trial: NDArray[np.int64]) -> int | None:
    """The most transfers at once, when jobs waited for a stream (``arrive``: an estimate
    of when each became ready to transfer); else None (no limit seen)."""
    took = np.clip(end - start, 0.0, None)
    waited = (start - arrive) > 2.0 * float(np.median(took)) + 0.05
    if int(waited.sum()) < MIN_TRANSFERS:
        return None
    return int(in_flight_at_arrival(start, end, trial).max())


def fit_link(start: F64, end: F64, nbytes: F64, files: F64, streams: int | None) -> Link | None:
    """The link of these transfers (the low-load trials)."""
    took = np.clip(end - start, 0.0, None)
    if took.size < MIN_TRANSFERS:
        return None
    bw, per_file, note = link_formula(took, nbytes, files)
    rest = took - (files * per_file + nbytes / bw)
    return Link(
        streams=streams,
        streams_source="inferred",
        bandwidth_bps=round(bw, 1),
        per_file_s=round(per_file, 6),
        bytes=int(np.median(nbytes)),
        files=int(np.median(files)),
        overhead=fit_duration(np.clip(rest, 0.0, None)),
        note=note,
    )


def add_staging(model: ChainModel, low: Measured, every: Measured) -> ChainModel:
    """The reference grid's model with its staging links, when the run stamped transfers:
    the CE's service ends where the upload starts, the worker's run where the download
    starts (both read at low load, where nothing waits for a stream)."""
    tiers = model.tiers
    if tiers is None:
        return model
    t, e = low.times, every.times
    update: dict[str, object] = {}
    for direction, start, end, before in (
        ("in", "stage_in_start", "staged_in", "ce_entry"),
        ("out", "stage_out_start", "staged_out", "bridge_submit"),
    ):
        if end not in t:
            continue
        ahead = fit_duration(np.clip(t[start] - t[before], 0.0, None))
        streams = streams_seen(e[before] + ahead.mean, e[start], e[end], every.trial)
        link = fit_link(t[start], t[end], t[f"{end}:bytes"], t[f"{end}:files"], streams)
        if link is None:
            continue
        if direction == "in":
            update["ce"] = tiers.ce.model_copy(update={"service": ahead})
            update["stage_in"] = link
        else:
            update["workers"] = tiers.workers.model_copy(update={"runtime": ahead})
            update["stage_out"] = link
    if not update:
        return model
    return model.model_copy(update={"tiers": tiers.model_copy(update=update)})
