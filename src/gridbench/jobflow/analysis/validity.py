"""Can a trial be trusted? Checks of the submitter, the client machine and the stamps.

A trial is **invalid** (excluded from summaries, listed with its reasons) when:

- it did not complete (status ``aborted`` or ``running``) or no job completed;
- late_share > 5%: submissions that started more than trial.json ``late_threshold_ns``
  after their intended time, over the planned jobs (the submitter lost the schedule);
- dropped_share > 1%: jobs never submitted (failure kind ``dropped``) over the planned jobs;
- the client was the bottleneck: the mean of resources.csv ``cpu_percent`` over the
  submission window reached 90% of its ceiling. The ceiling depends on what was measured:
  with no child processes it is one core (100%), since gridbench's event loop runs on one
  core; with children (client tools it spawned) it is all cores (cpu_count * 100);
- the client *tools* were the bottleneck: the CPU seconds of the programs a command-style
  backend spawned (trial.json ``client_processes.cpu_s``) reached 50% of all cores over the
  whole trial (the UNICORE UCC finding; 25% gives a warning);
- the overall latency's stamps are too coarse: the coarser precision of its two stages
  (the median precision of each stage's stamps, at least what the chain declares: a polled
  stage such as client_done is as precise as its polling) exceeds 10% of the median overall
  latency;
- stamps go backwards: a job reached a stage before the one it follows, by more than the
  stamps' uncertainty, the coarser precision plus both stages' clock-offset bounds (a
  negative segment after the agents' offsets were removed: the clocks of the sources
  disagree beyond what was estimated, or the data is wrong). Such jobs are counted
  (``backwards_jobs``, and per segment in ``negative_segments``) and left out of every
  latency statistic and share (:func:`gridbench.jobflow.analysis.latency.backwards_jobs`);
- the clocks are too uncertain: a segment's clock-offset bound (the bounds of the agents
  that stamped its two stages, added; 0 when the same agents stamped both) exceeds
  ``clock_factor`` (10%) of the segment's median latency (``clock_bounds`` lists agent,
  bound, segment and latency).

**Warnings** (the trial stays valid): a segment whose stamps are coarse by the same rule;
an overall latency coarse because of a *polled* stage (client_done: the job ended up to one
status poll before the client saw it, so the latency is late by at most that, not unknown);
client CPU not recorded; negative segments within the stamps' uncertainty (kept in the
latencies, counted in ``negative_segments``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow import text
from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.analysis.latency import (
    backwards_jobs,
    clock_bound_s,
    negative_counts,
    tolerance_s,
)
from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import STAGE_INTENDED, STAGE_SUBMIT
from gridbench.stats import Stats


@dataclass(frozen=True, slots=True)
class ValidityConfig:
    """Limits of the validity checks."""

    late_share_max: float = 0.05
    dropped_share_max: float = 0.01
    cpu_bound_fraction: float = 0.9
    # spawned client programs compete with everything else on the machine (often the
    # service itself), so half of all cores over the trial already measures the client
    tools_bound_fraction: float = 0.5
    coarse_factor: float = 0.1
    # a clock-offset bound above this share of a segment's median latency invalidates it
    clock_factor: float = 0.1


def late_jobs(jt: JobTimes, late_threshold_ns: int) -> int:
    """Submissions that started more than the threshold after their intended time."""
    lag = jt.get(STAGE_SUBMIT) - jt.get(STAGE_INTENDED)
    with np.errstate(invalid="ignore"):
        return int(np.count_nonzero(lag > late_threshold_ns / 1e9))


@dataclass(frozen=True, slots=True)
class ClientCpu:
    """Client CPU over the submission window (percent, 100 = one core)."""

    mean: float
    max: float
    children: int
    samples: int


def client_cpu(
    resources: pl.DataFrame | None, lo_ns: int | None, hi_ns: int | None
) -> ClientCpu | None:
    """Mean and max of cpu_percent over [lo_ns, hi_ns] (all samples when none fall in it)."""
    if resources is None or resources.height == 0 or "cpu_percent" not in resources.columns:
        return None
    r = resources.filter(pl.col("cpu_percent").is_not_null())
    if lo_ns is not None and hi_ns is not None and "t_ns" in r.columns:
        inside = r.filter(pl.col("t_ns").is_between(lo_ns, hi_ns))
        if inside.height:
            r = inside
    if r.height == 0:
        return None
    cpu = r["cpu_percent"].cast(pl.Float64).to_numpy()
    children = 0
    if "children" in r.columns:
        ch = r["children"].cast(pl.Int64, strict=False).max()
        children = int(ch) if isinstance(ch, int) else 0
    return ClientCpu(float(cpu.mean()), float(cpu.max()), children, int(cpu.size))


@dataclass(frozen=True, slots=True)
class Coarse:
    """A latency measured too coarsely: its name, the precision and median (s), and
    whether the coarser of its stages is one known only by polling."""

    name: str
    precision_s: float
    median_s: float
    polled: bool


def _coarse(
    chain: StageChain,
    jt: JobTimes,
    latency: Mapping[str, Stats],
    overall_start: str,
    end: str,
    factor: float,
) -> list[Coarse]:
    """Every latency measured too coarsely."""
    # hops between components (component=False) are often below any server clock's
    # resolution and only feed "other"; warning about them would drown the real ones
    pairs = [(g.name, g.start, g.end) for g in chain.all_segments() if g.component]
    pairs.append(("overall", overall_start, end))
    polled = {s.name for s in chain.stages if s.polled}
    # the typical (median) precision against the median latency: a polled stage's bracket
    # is the poll interval, and one stalled sweep must not decide the verdict
    typ = jt.typical_precision_s or jt.precision_s
    out = []
    for name, a, b in pairs:
        pa, pb = typ.get(a, 0.0), typ.get(b, 0.0)
        prec = max(pa, pb)
        med = latency.get(name, {}).get("p50")
        if med is not None and med > 0 and prec > factor * med:
            out.append(Coarse(name, prec, med, (a if pa >= pb else b) in polled))
    return out


def _negative(
    chain: StageChain, jt: JobTimes
) -> tuple[list[str], list[str], dict[str, dict[str, int]]]:
    """Reasons (negative beyond the stamps' uncertainty), warnings (within it) and the
    counts per segment."""
    reasons, warnings = [], []
    counts: dict[str, dict[str, int]] = {}
    ends = {g.name: g for g in chain.all_segments()}
    for name, (beyond, within) in negative_counts(jt, chain).items():
        g = ends[name]
        counts[name] = {"beyond_uncertainty": beyond, "within_uncertainty": within}
        if beyond:
            reasons.append(
                f"{beyond} job(s) reached {g.end} before {g.start} by more than the stamps' "
                f"uncertainty of {text.seconds(tolerance_s(jt, g))} (negative {name} after "
                "clock correction): the clocks of their sources disagree or the stamps are "
                "wrong; these jobs are left out of the latencies"
            )
        if within:
            warnings.append(
                f"{within} job(s) have a negative {name} within the stamps' uncertainty of "
                f"{text.seconds(tolerance_s(jt, g))} (kept in the latencies)"
            )
    return reasons, warnings, counts


def clock_bounds(
    chain: StageChain, jt: JobTimes, latency: Mapping[str, Stats], factor: float
) -> list[dict[str, Any]]:
    """Per segment whose stamps carry a clock-offset bound: the agent, the bound (s), the
    median latency (s) and whether the bound exceeds ``factor`` of it (``flagged``)."""
    out = []
    for g in chain.all_segments():
        bound, agents = clock_bound_s(jt, g)
        if bound <= 0:
            continue
        med = latency.get(g.name, {}).get("p50")
        out.append(
            {
                "segment": g.name,
                "agent": agents,
                "bound_s": bound,
                "latency_s": med,
                # no median (no job has the segment) means nothing to compare: not flagged
                "flagged": med is not None and bound > factor * abs(med),
            }
        )
    return out


def _client_tools_share(info: TrialInfo) -> float | None:
    """CPU of spawned client programs over the trial, as a share of the whole machine."""
    if info.client_cpu_s is None or info.started_ns is None or info.ended_ns is None:
        return None
    wall = (info.ended_ns - info.started_ns) / 1e9
    return info.client_cpu_s / (wall * info.cpu_count) if wall > 0 else None


def trial_validity(
    info: TrialInfo,
    jt: JobTimes,
    jobs: Mapping[str, int],
    latency: Mapping[str, Stats],
    cpu: ClientCpu | None,
    *,
    end_stage: str,
    cfg: ValidityConfig = ValidityConfig(),
) -> dict[str, Any]:
    """The trial's ``validity`` object."""
    reasons: list[str] = []
    warnings: list[str] = []
    if info.status != "complete":
        reasons.append(f"the trial did not complete (status {info.status})")
    if jt.out_of_range:
        reasons.append(
            f"{jt.out_of_range} stamp(s) lie too far from the trial's start to subtract "
            "(int64 overflow: ±292 years): not times this trial recorded; they were left out"
        )
    planned = jobs.get("planned") or 0
    late_share = jobs.get("late", 0) / planned if planned else 0.0
    dropped_share = jobs.get("dropped", 0) / planned if planned else 0.0
    if jobs.get("completed", 0) == 0:
        reasons.append("no job completed")
    if late_share > cfg.late_share_max:
        reasons.append(
            f"{text.pct(late_share)} of the planned submissions started more than "
            f"{text.seconds(info.late_threshold_ns / 1e9)} late (limit "
            f"{text.pct(cfg.late_share_max)}): the submitter could not keep the schedule"
        )
    if dropped_share > cfg.dropped_share_max:
        reasons.append(
            f"{text.pct(dropped_share)} of the planned jobs were dropped, never submitted "
            f"(limit {text.pct(cfg.dropped_share_max)})"
        )
    bound = False
    rule = None
    if cpu is None:
        warnings.append("client CPU was not recorded: a client-bound run cannot be ruled out")
    else:
        if cpu.children > 0:
            ceiling = 100.0 * info.cpu_count
            rule = f"all {info.cpu_count} cores (client tools were running as child processes)"
        else:
            ceiling = 100.0
            rule = "one core (gridbench's event loop runs on one core)"
        bound = cpu.mean >= cfg.cpu_bound_fraction * ceiling
        if bound:
            reasons.append(
                f"the client was the bottleneck: its CPU averaged {text.num(cpu.mean)}% over "
                f"the submission window, at least {text.pct(cfg.cpu_bound_fraction)} of {rule}"
            )
    tools_share = _client_tools_share(info)
    if tools_share is not None and tools_share >= cfg.tools_bound_fraction:
        bound = True
        reasons.append(
            f"the client tools were the bottleneck: the programs gridbench ran to submit and "
            f"poll used {text.pct(tools_share)} of all {info.cpu_count} cores over the trial "
            "(a client heavier than the service, as UNICORE's UCC was)"
        )
    elif tools_share is not None and tools_share >= cfg.tools_bound_fraction / 2:
        warnings.append(
            f"the client tools used {text.pct(tools_share)} of all {info.cpu_count} cores: "
            "close to measuring the client rather than the service"
        )
    overall_start = STAGE_INTENDED if jt.has(STAGE_INTENDED) else chain_first(info.chain)
    coarse = _coarse(info.chain, jt, latency, overall_start, end_stage, cfg.coarse_factor)
    for c in coarse:
        msg = (
            f"{c.name} is measured with stamps of {text.seconds(c.precision_s)} precision, "
            f"more than {text.pct(cfg.coarse_factor)} of its median {text.seconds(c.median_s)}"
        )
        if c.polled:  # known only by polling: late by up to one poll, not unknown
            msg += (
                " (a polled stamp: the job ended up to one status poll earlier; poll faster, "
                "timeouts.status_interval, or read the server's end stamp)"
            )
        (reasons if c.name == "overall" and not c.polled else warnings).append(msg)
    clocks = clock_bounds(info.chain, jt, latency, cfg.clock_factor)
    for cb in clocks:
        if cb["flagged"]:
            reasons.append(
                f"the clock of agent {cb['agent']} is known only to ±{text.seconds(cb['bound_s'])}"
                f" on {cb['segment']}, more than {text.pct(cfg.clock_factor)} of its median "
                f"{text.seconds(cb['latency_s'])}: the segment cannot be resolved across clocks"
            )
    neg_reasons, neg_warnings, negative = _negative(info.chain, jt)
    reasons.extend(neg_reasons)
    warnings.extend(neg_warnings)
    return {
        "valid": not reasons,
        "reasons": reasons,
        "warnings": warnings,
        "late_share": late_share,
        "dropped_share": dropped_share,
        "client_cpu_max": cpu.max if cpu else None,
        "client_cpu_mean": cpu.mean if cpu else None,
        "client_bound": bound,
        "client_cpu_rule": rule,
        "client_tools_cpu_share": tools_share,
        "coarse_precision": [c.name for c in coarse],
        "backwards_jobs": int(np.count_nonzero(backwards_jobs(jt, info.chain))),
        "negative_segments": negative,
        "clock_bounds": clocks,
    }


def chain_first(chain: StageChain) -> str:
    """The first chain stage's name (``submit`` for an empty chain)."""
    return chain.stages[0].name if chain.stages else STAGE_SUBMIT
