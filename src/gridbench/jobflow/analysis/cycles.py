"""Scheduling cycles: a scheduler that starts jobs only at periodic passes (Maui's
dispatch every 3.5 min, 64 jobs a cycle, in the seed; Slurm's main scheduler every
``sched_interval`` with ``defer``), read from the start stamps of every trial.

A stage is *dispatched in passes* when its stamps come in bursts (several jobs at one
instant, within ``SAME_PASS_S``) on a periodic grid: the period is the usual gap between
instants (gaps under a quarter of their median left out, as a pass set off by a job's end
leaves a short one), and at least ``ON_GRID`` of the instants fall on its multiples (or
just after a job's end, which sets a pass off too). Evenly spaced arrivals started at once
never share an instant, so they are not taken for passes.

For each job the wait for the next pass is from when it became ready (the stage before)
to the first pass at or after that (at most to its own start: a job that waited longer
waited for something else too); its share of the job's latency is that wait over the
job's end-to-end latency. The first stage in chain order that shows passes is the one
reported (later stages inherit the grid when run times are fixed); the last stage a
server stamps is not read (a batched status poll stamps it in passes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.events.chain import StageChain

F64 = NDArray[np.float64]
#: stamps closer than this are one pass
SAME_PASS_S = 0.02
#: a pass this soon after a job's end was set off by it
TRIGGER_S = 0.1
#: the share of instants that must fall on the grid (or follow an end)
ON_GRID = 0.9
#: the share of jobs that must share their instant with another
BURST = 0.1
#: a share of the latency from which the wait for passes leads the headline
DOMINANT = 0.3


def detect(start: F64, ends: F64) -> tuple[float, F64] | None:
    """(period, pass instants) when the sorted finite ``start`` stamps come in periodic
    passes, else None; ``ends`` (sorted) are the instants jobs ended, which set passes off."""
    if start.size < 6:
        return None
    new = np.concatenate([[True], np.diff(start) > SAME_PASS_S])
    inst = start[new]
    if inst.size < 4 or float(np.mean(~new)) < BURST:
        return None
    k = np.searchsorted(ends, inst, side="right") - 1
    set_off = (k >= 0) & (inst - ends[np.maximum(k, 0)] <= TRIGGER_S)
    gaps = np.diff(inst[~set_off])
    if gaps.size < 3:
        return None
    kept = gaps[gaps >= 0.25 * float(np.median(gaps))]
    unit = float(np.median(kept[kept <= 1.5 * float(kept.min())]))
    if unit < 5 * SAME_PASS_S:
        return None
    rel = inst - inst[~set_off][0]
    on = (np.abs((rel + unit / 2) % unit - unit / 2) <= 0.08 * unit) | set_off
    return (unit, inst) if float(np.mean(on)) >= ON_GRID else None


def stage_cycles(ready: F64, start: F64, ends: F64, latency: F64) -> dict[str, Any] | None:
    """The cycle figures of one stage (per job: ``ready`` the stage before, ``start`` this
    one, ``latency`` end to end), or None when it shows no passes."""
    ok = np.isfinite(ready) & np.isfinite(start) & np.isfinite(latency) & (latency > 0)
    s = np.sort(start[np.isfinite(start)])
    found = detect(s, np.sort(ends[np.isfinite(ends)]))
    if found is None or not ok.any():
        return None
    period, inst = found
    new = np.concatenate([[True], np.diff(s) > SAME_PASS_S])
    r, st, lat = ready[ok], start[ok], latency[ok]
    nxt = inst[np.minimum(np.searchsorted(inst, r - 1e-9, side="left"), inst.size - 1)]
    wait = np.clip(np.minimum(nxt, st) - r, 0.0, None)
    return {
        "period_s": round(period, 4),
        "passes": int(inst.size),
        "jobs_per_pass": round(s.size / inst.size, 2),
        "max_jobs_per_pass": int(np.diff(np.r_[np.flatnonzero(new), s.size]).max()),
        "pass_wait_mean_s": round(float(wait.mean()), 4),
        "wait_share": round(float(wait.sum() / lat.sum()), 4),
        "wait_share_mean": round(float(np.mean(wait / lat)), 4),
    }


def trial_cycles(jt: JobTimes, chain: StageChain, latency: F64) -> dict[str, Any] | None:
    """The first stage of the chain whose stamps come in periodic passes, with its
    figures; None when none does. Not the first stage (the client's), nor one the client
    polls, nor the last a server stamps (the CE's T7: a batched status poll stamps in
    passes too, and that is the status update's cycle, not a dispatch)."""
    names = [s.name for s in chain.stages if not s.polled]
    for i in range(1, len(names) - 1):
        stage = names[i]
        if not jt.has(stage):
            continue
        got = stage_cycles(jt.get(names[i - 1]), jt.get(stage), jt.get(names[i + 1]), latency)
        if got is not None:
            return {"stage": stage, "after": names[i - 1], **got}
    return None


def run_cycles(points: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The run's cycles over its trials: the stage most trials show, the median period,
    the mean jobs per pass and wait share, how many trials show them; None when none."""
    trials = [t for p in points for t in p.get("trials", [])]
    seen = [t["cycles"] for t in trials if isinstance(t.get("cycles"), Mapping)]
    if not seen:
        return None
    stages = [str(c["stage"]) for c in seen]
    stage = max(set(stages), key=stages.count)
    mine = [c for c in seen if c["stage"] == stage]
    share = float(np.mean([c["wait_share"] for c in mine]))
    return {
        "stage": stage,
        "after": mine[0]["after"],
        "period_s": round(float(np.median([c["period_s"] for c in mine])), 4),
        "jobs_per_pass": round(float(np.mean([c["jobs_per_pass"] for c in mine])), 2),
        "max_jobs_per_pass": max(int(c["max_jobs_per_pass"]) for c in mine),
        "pass_wait_mean_s": round(float(np.mean([c["pass_wait_mean_s"] for c in mine])), 4),
        "wait_share": round(share, 4),
        "trials": len(mine),
        "of_trials": len(trials),
        "dominant": share >= DOMINANT,
        "statement": statement(stage, mine, share),
    }


def statement(stage: str, mine: Sequence[Mapping[str, Any]], share: float) -> str:
    """One sentence: the stage, its period, jobs per pass, the share of latency."""
    period = float(np.median([c["period_s"] for c in mine]))
    per = float(np.mean([c["jobs_per_pass"] for c in mine]))
    return (
        f"Scheduling cycles: {stage} starts jobs in passes every {period:.3g} s "
        f"({per:.3g} jobs a pass); waiting for the next pass is {share:.0%} of the "
        "jobs' latency"
    )
