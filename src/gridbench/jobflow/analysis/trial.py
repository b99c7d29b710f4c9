"""One trial, from its events to its metrics.json trial object and its chart series (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from gridbench.jobflow import loads as load_models
from gridbench.jobflow.analysis import series as ser
from gridbench.jobflow.analysis.agents import agent_breakdown
from gridbench.jobflow.analysis.bottleneck import find_bottleneck
from gridbench.jobflow.analysis.clocks import BOUND_COLUMN, clock_summary, to_controller_time
from gridbench.jobflow.analysis.config import AnalysisConfig
from gridbench.jobflow.analysis.cycles import trial_cycles
from gridbench.jobflow.analysis.failures import failure_counts, job_counts
from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.analysis.latency import (
    end_stage,
    latency_durations,
    latency_stats,
    median,
    schedule_times,
)
from gridbench.jobflow.analysis.passages import Passages, schedule_sorted, stage_flow
from gridbench.jobflow.analysis.queues import (
    growth_window,
    queue_metrics,
    queue_segments,
    queue_series,
)
from gridbench.jobflow.analysis.rates import scheduler_rates
from gridbench.jobflow.analysis.reduce import (
    ReducedEvents,
    in_chunks,
    keep_expr,
    reduce_events,
)
from gridbench.jobflow.analysis.server import server_resources
from gridbench.jobflow.analysis.staging import staging_stats
from gridbench.jobflow.analysis.throughput import (
    StageFlow,
    default_window,
    stage_throughput,
    windowed_rate,
)
from gridbench.jobflow.analysis.timelines import (
    job_times,
    stage_failures,
    timeline_stages,
    with_declared_precision,
)
from gridbench.jobflow.analysis.users import job_users, user_breakdown
from gridbench.jobflow.analysis.validity import client_cpu, late_jobs, trial_validity
from gridbench.jobflow.analysis.warmup import Warmup, fraction_warmup, steady_state_warmup
from gridbench.jobflow.analysis.workers import pmap
from gridbench.jobflow.events.job_numbers import job_prefix
from gridbench.jobflow.events.model import STAGE_INTENDED, STAGE_SUBMIT

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class TrialResult:
    """A trial's metrics object and its series (``None`` when series are off)."""

    info: TrialInfo
    metrics: dict[str, Any]
    series: dict[str, Any] | None


def _origin(info: TrialInfo, tl_table: pl.DataFrame, stages: tuple[str, ...]) -> int:
    if info.started_ns is not None:
        return info.started_ns
    mins = [tl_table[s].min() for s in stages if s in tl_table.columns]
    vals = [int(m) for m in mins if isinstance(m, int)]
    return min(vals) if vals else 0


def _offered(info: TrialInfo, sched: F64, rate_based: bool) -> float | None:
    """The offered rate: trial.json's, else estimated from a rate-based schedule."""
    if info.offered_rate_per_s is not None:
        return info.offered_rate_per_s
    if rate_based and sched.size >= 2 and sched[-1] > sched[0]:
        return float((sched.size - 1) / (sched[-1] - sched[0]))
    return None


def analyze_trial(
    info: TrialInfo,
    events: pl.DataFrame,
    resources: pl.DataFrame | None = None,
    cfg: AnalysisConfig | None = None,
    server: pl.DataFrame | None = None,
) -> TrialResult:
    """Every per-trial metric of metrics.json (and series.json) from one trial's events
    (``resources``: the client's CPU samples; ``server``: the server processes')."""
    if BOUND_COLUMN not in events.columns:  # not read through load.read_trial_events
        events = to_controller_time(events, info.agents)
    stages = timeline_stages(info.chain.names())
    prefix = job_prefix(info.trial_id)
    reduced = reduce_events(in_chunks(events), stages, trial_keep(info), job_prefix=prefix)
    return analyze_reduced(info, reduced, resources, cfg, server)


def trial_keep(info: TrialInfo) -> pl.Expr:
    """The events of the trial its analysis reads beside the timeline
    (:func:`gridbench.jobflow.analysis.reduce.keep_expr`)."""
    model = load_models.find(info.load_model)
    return keep_expr(
        info.chain.names(),
        info.agents,
        all_events=model is not None and model.reads_events,
        by_agent=model is not None and model.users_by_agent,
    )


def analyze_reduced(
    info: TrialInfo,
    reduced: ReducedEvents,
    resources: pl.DataFrame | None = None,
    cfg: AnalysisConfig | None = None,
    server: pl.DataFrame | None = None,
) -> TrialResult:
    """:func:`analyze_trial` from the trial's events reduced by
    :func:`gridbench.jobflow.analysis.reduce.reduce_events` (with :func:`trial_keep`)."""
    cfg = cfg or AnalysisConfig()
    chain = info.chain
    load_model = load_models.find(info.load_model)  # None: results of an unknown model
    names = chain.names()
    tl, rest = reduced.take()
    stages = tl.stages
    origin = _origin(info, tl.table, stages)
    jt = with_declared_precision(job_times(tl, origin), chain)
    by_agent = load_model is not None and load_model.users_by_agent
    users = job_users(rest, tl.table["job"], agent_fallback=by_agent)
    errors = stage_failures(rest, tl.table["job"], names)
    del tl  # the per-job table: its times are in ``jt`` now
    end = end_stage(jt, chain)
    sched = schedule_times(jt, chain)
    passages = Passages(jt)
    passages.fill(stages)
    sched_sorted = schedule_sorted(passages, sched, names)
    sub_start = float(sched_sorted[0]) if sched_sorted.size else None
    sub_end = float(sched_sorted[-1]) if sched_sorted.size else None
    offered = _offered(info, sched_sorted, load_model is not None and load_model.rate_based)

    durations = latency_durations(jt, chain)
    latency = latency_stats(durations)

    firsts = [passages(s)[0] for s in stages if passages(s).size]
    lasts = [passages(s)[-1] for s in stages if passages(s).size]
    span = (float(max(lasts)) - float(min(firsts))) if firsts else 0.0
    window = cfg.window_s or default_window(span)
    warm = _warmup(cfg, sched_sorted, passages(names[-1]) if names else np.empty(0), window)

    first_up = STAGE_INTENDED if jt.has(STAGE_INTENDED) else None

    def flow(i: int) -> StageFlow:
        s = names[i]
        up = names[i - 1] if i else first_up
        return stage_flow(passages, s, up, jt.get(s) - sched, errors.get(s))

    flows = dict(zip(names, pmap(flow, range(len(names))), strict=True))
    if len(names) >= 2:
        last = flows[names[-1]]
        first_t = passages(names[0])
        flows["overall"] = StageFlow(
            "overall",
            last.times,
            names[0],
            float(first_t[0]) if first_t.size else None,
            last.lag,
            last.failures,
        )

    def measure(f: StageFlow) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The throughput object and the punctual series, from one P_n."""
        p = f.punctual() if f.times.size else None
        s = ser.series(f.times, p, cfg.max_points) if cfg.series and p is not None else None
        return stage_throughput(f, warm, sub_end, offered, p), s

    measured = dict(zip(flows, pmap(measure, flows.values()), strict=True))
    throughput = {s: m[0] for s, m in measured.items()}
    punct = {s: m[1] for s, m in measured.items() if m[1] is not None}

    rates = scheduler_rates(jt, chain, errors, end)
    seg_median = {g.name: latency[g.name]["p50"] for g in chain.all_segments()}

    def queue(q: tuple[str, str, str]) -> tuple[dict[str, Any], tuple[F64, F64]]:
        qname, a, b = q
        starts, ends = passages(a), passages.ends_after(a, b)
        lo, hi = growth_window(
            sub_start,
            sub_end,
            warm.start_s,
            flows[a].lag if a in flows else median(jt.get(a) - sched),
            seg_median.get(qname) if qname in seg_median else median(jt.get(b) - jt.get(a)),
        )
        return queue_metrics(starts, ends, lo, hi), (starts, ends)

    segs = queue_segments(chain)
    passages.fill(a for _, a, _ in segs)
    queued = dict(zip((q[0] for q in segs), pmap(queue, segs), strict=True))
    queues = {q: m[0] for q, m in queued.items()}
    queue_data = {q: m[1] for q, m in queued.items()}

    failures = failure_counts(jt)
    late = late_jobs(jt, info.late_threshold_ns)
    jobs = job_counts(jt, info.planned_jobs, end, late)
    lo_ns = origin + int(sub_start * 1e9) if sub_start is not None else None
    hi_ns = origin + int(sub_end * 1e9) if sub_end is not None else None
    cpu = client_cpu(resources, lo_ns, hi_ns)
    validity = trial_validity(info, jt, jobs, latency, cpu, end_stage=end, cfg=cfg.validity)
    model = None  # the load model's own results (closed models)
    if load_model is not None:
        model = load_model.trial_metrics(rest, chain)
        validity = load_model.adjust_validity(validity, model)
    ratios = {s: throughput[s]["expected_ratio"] for s in names}
    finding = find_bottleneck(names, ratios, cfg.tolerance)

    metrics: dict[str, Any] = {
        "trial_id": info.trial_id,
        "trial_index": info.trial_index,
        "started_ns": info.started_ns,  # the trial's start (the time-of-day view)
        "valid": validity["valid"],
        "status": info.status,
        "offered_rate_per_s": offered,
        "jobs": jobs,
        "latency": latency,
        "throughput": throughput,
        "rates": rates,
        "failures": failures,
        "failure_rate": jobs["failed"] / jobs["planned"] if jobs["planned"] else None,
        "queues": queues,
        "warmup": warm.to_dict(),
        "window_s": window,
        "validity": validity,
        "bottleneck": finding.stage if finding else None,
        "background_queue": dict(info.background_queue),
        "clocks": clock_summary(info.agents, info.clock_sync),
    }
    if model is not None:
        metrics["model"] = model
    cycles = trial_cycles(jt, chain, durations["overall"])
    if cycles is not None:  # a scheduler that starts jobs only at periodic passes
        metrics["cycles"] = cycles
    calls = (model or {}).get("calls")  # a closed model's timed calls (probe operations)
    ops = calls if isinstance(calls, int) and not isinstance(calls, bool) else None
    srv = server_resources(server, jobs["submitted"], resources, ops)
    if srv:
        metrics["server_resources"] = srv
    staged = staging_stats(rest)
    if staged is not None:
        metrics["staging"] = staged
    if users is not None:
        metrics["by_user"] = user_breakdown(users, jt, durations, end)
    agents_load = agent_breakdown(rest, info.agents)
    if agents_load:
        metrics["by_agent"] = agents_load
    out_series = None
    if cfg.series:
        out_series = _series(
            cfg, flows, punct, queue_data, durations, sched_sorted, passages(STAGE_SUBMIT), window
        )
    return TrialResult(info, metrics, out_series)


def _warmup(cfg: AnalysisConfig, sched_sorted: F64, done_sorted: F64, window: float) -> Warmup:
    if cfg.warmup_method == "steady_state":
        return steady_state_warmup(sched_sorted, done_sorted, window, cfg.warmup_fraction)
    return fraction_warmup(sched_sorted, cfg.warmup_fraction)


def _series(
    cfg: AnalysisConfig,
    flows: dict[str, StageFlow],
    punct: dict[str, Any],
    queue_data: dict[str, tuple[F64, F64]],
    durations: dict[str, F64],
    sched_sorted: F64,
    submit_sorted: F64,
    window: float,
) -> dict[str, Any]:
    mp = cfg.max_points
    all_t = [f.times for f in flows.values() if f.times.size]
    lo = min(float(t[0]) for t in all_t) if all_t else 0.0
    hi = max(float(t[-1]) for t in all_t) if all_t else 0.0
    grid = ser.time_grid(lo, hi, mp)
    windowed: dict[str, Any] = {"window_s": window}
    for s, f in flows.items():
        if s != "overall":
            windowed[s] = {
                "t": grid.tolist(),
                "v": windowed_rate(f.times, grid, window).tolist(),
                "downsampled": False,
            }
    queues: dict[str, Any] = {}
    for q, (a, b) in queue_data.items():
        qt, qv, down = queue_series(a, b, mp)
        queues[q] = {"t": qt.tolist(), "v": qv.tolist(), "downsampled": down}
    hist = dict(zip(durations, pmap(ser.histogram, durations.values()), strict=True))
    parts = [*punct.values(), *queues.values()]
    return {
        "downsampled": any(p["downsampled"] for p in parts),
        "punctual": punct,
        "windowed": windowed,
        "queues": queues,
        "latency_hist": hist,
        "offered": {
            "t": grid.tolist(),
            "v": windowed_rate(sched_sorted, grid, window).tolist(),
            "downsampled": False,
        },
        "submitted": {
            "t": grid.tolist(),
            "v": windowed_rate(submit_sorted, grid, window).tolist(),
            "downsampled": False,
        },
    }
