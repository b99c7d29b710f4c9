"""Per-job latencies (seconds) for every segment of the chain, and their statistics.

- a segment is ``t(end) - t(start)`` for every job that reached both stages;
- ``overall`` = client_done - intended (wrk2-style, from the *intended* submit time; a job
  without an intended stamp falls back to the first chain stage), over jobs that completed
  without a failure;
- ``running_time`` = client_done - first chain stage (the seed's T8 - T1), same jobs;
- ``other`` = overall - sum of the ``component`` segments, for jobs that have them all;
- ``submit_lag`` = submit - intended (how late the submitter started the call);
- ``submit_call`` = submit_ack - submit (the duration of the submit call).

When the chain has no ``client_done`` stamps the last chain stage ends the job.

Times are on the controller's clock (each agent's offset already removed). A job whose
stamps go backwards (a stage stamped before the one it follows, by more than the two
stamps' uncertainty: the coarser precision plus the clock-offset bound of a segment that
crosses clocks) has no
latency: time between its stages is unknown, so it is
left out of every duration here (NaN), and validity counts and flags it
(:func:`backwards_jobs`; docs/metrics.md, Validity). No statistic or share is computed
from an impossible, negative segment.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.analysis.clocks import segment_bound
from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.analysis.workers import pmap
from gridbench.jobflow.events.chain import Segment, StageChain
from gridbench.jobflow.events.model import (
    STAGE_CLIENT_DONE,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.stats import Stats, describe

Durations = dict[str, NDArray[np.float64]]


def end_stage(jt: JobTimes, chain: StageChain) -> str:
    """The stage that ends a job: client_done when recorded, else the last chain stage."""
    if jt.has(STAGE_CLIENT_DONE) or not chain.stages:
        return STAGE_CLIENT_DONE
    return chain.stages[-1].name


def schedule_times(jt: JobTimes, chain: StageChain) -> NDArray[np.float64]:
    """Each job's intended submit time, or its first chain stage when it has none."""
    intended = jt.get(STAGE_INTENDED)
    if not chain.stages:
        return intended
    first = jt.get(chain.stages[0].name)
    return np.where(np.isfinite(intended), intended, first)


def segment_durations(jt: JobTimes, seg: Segment) -> NDArray[np.float64]:
    """end - start per job (NaN where either stamp is missing; read-only, shared)."""
    return jt.span(seg.start, seg.end)


def clock_bound_s(jt: JobTimes, seg: Segment) -> tuple[float, str]:
    """The segment's clock-offset bound in seconds (0 when both stages are stamped by the
    same agents) and the agents it comes from
    (:func:`gridbench.jobflow.analysis.clocks.segment_bound`)."""
    bound, agents = segment_bound(jt.clocks.get(seg.start), jt.clocks.get(seg.end))
    return bound / 1e9, agents


def tolerance_s(jt: JobTimes, seg: Segment) -> float:
    """How far a segment may go below zero and still be consistent with its stamps: the
    coarser precision of its two stages plus the segment's clock-offset bound."""
    prec = max(jt.precision_s.get(seg.start, 0.0), jt.precision_s.get(seg.end, 0.0))
    return prec + clock_bound_s(jt, seg)[0]


def negative_counts(jt: JobTimes, chain: StageChain) -> dict[str, tuple[int, int]]:
    """Per segment with negative durations: (jobs below −tolerance, jobs negative within
    it). The first are impossible (the job is left out of the latencies), the second are
    kept: the stamps cannot tell their order apart."""
    out: dict[str, tuple[int, int]] = {}
    for seg in chain.all_segments():
        d = segment_durations(jt, seg)
        with np.errstate(invalid="ignore"):
            beyond = int(np.count_nonzero(d < -tolerance_s(jt, seg)))
            neg = int(np.count_nonzero(d < 0))
        if neg:
            out[seg.name] = (beyond, neg - beyond)
    return out


def backwards_jobs(jt: JobTimes, chain: StageChain) -> NDArray[np.bool_]:
    """Per job: does any segment end before it starts, by more than its stamps' uncertainty
    (:func:`tolerance_s`)?"""
    bad = np.zeros(jt.n_jobs, dtype=bool)
    for seg in chain.all_segments():
        with np.errstate(invalid="ignore"):
            bad |= segment_durations(jt, seg) < -tolerance_s(jt, seg)
    return bad


def latency_durations(jt: JobTimes, chain: StageChain) -> Durations:
    """Per-job durations (NaN = not applicable) for every segment and derived latency;
    a job whose stamps go backwards has none (:func:`backwards_jobs`)."""
    out: Durations = {}
    segments = chain.all_segments()
    for seg in segments:
        out[seg.name] = segment_durations(jt, seg)
    ok = ~jt.failed
    end = jt.get(end_stage(jt, chain))
    overall = np.where(ok, end - schedule_times(jt, chain), np.nan)
    out["overall"] = overall
    comp = np.zeros(jt.n_jobs, dtype=np.float64)
    for seg in segments:
        if seg.component:
            comp += out[seg.name]  # NaN propagates: jobs missing a component drop out
    # to the nanosecond the stamps have: a sum of float seconds leaves -1e-19 s "others"
    other = overall - comp
    out["other"] = np.round(other, 9, out=other)
    first = jt.get(chain.stages[0].name) if chain.stages else np.full(jt.n_jobs, np.nan)
    out["running_time"] = np.where(ok, end - first, np.nan)
    out["submit_lag"] = jt.get(STAGE_SUBMIT) - jt.get(STAGE_INTENDED)
    out["submit_call"] = jt.get(STAGE_SUBMIT_ACK) - jt.get(STAGE_SUBMIT)
    bad = backwards_jobs(jt, chain)
    if bad.any():
        shared = {seg.name for seg in segments}  # JobTimes.span's arrays: copied
        for name, d in out.items():
            if name in shared:
                out[name] = np.where(bad, np.nan, d)
            else:  # made here: cleared in place, no second array
                d[bad] = np.nan
    return out


def latency_stats(durations: Durations) -> dict[str, Stats]:
    """The stats object of every duration array."""
    return dict(zip(durations, pmap(describe, durations.values()), strict=True))


def median(d: NDArray[np.float64]) -> float | None:
    """Median of the finite values, ``None`` when there are none."""
    a = d[np.isfinite(d)]  # a fresh copy: np.median may partition it in place
    return float(np.median(a, overwrite_input=True)) if a.size else None
