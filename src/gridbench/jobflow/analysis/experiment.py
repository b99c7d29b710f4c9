"""The analysis entry point: a results directory in, metrics.json (and series.json) out.

``analyze_run`` reads each trial in turn (only one trial's events are in memory at a
time), analyses it, then assembles the points (repetition summaries, outliers, the point
bottleneck), the knee, the experiment-level bottleneck, failures against rate, validity
and the thresholds. ``assemble`` does the assembly from trial results and is pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gridbench.jobflow import loads as load_models
from gridbench.jobflow.analysis import load
from gridbench.jobflow.analysis.bottleneck import (
    corroborated,
    evidence,
    experiment_bottleneck,
    find_bottleneck,
    segment_for_stage,
)
from gridbench.jobflow.analysis.config import AnalysisConfig, parse_warmup
from gridbench.jobflow.analysis.cycles import run_cycles
from gridbench.jobflow.analysis.failures import failures_vs_rate
from gridbench.jobflow.analysis.growth import sweep_growth
from gridbench.jobflow.analysis.knee import PointVerdict, knee
from gridbench.jobflow.analysis.left_behind import left_behind
from gridbench.jobflow.analysis.repetitions import point_summary
from gridbench.jobflow.analysis.sampling import mark_client_bound, sampling_metrics
from gridbench.jobflow.analysis.schedule import trial_times
from gridbench.jobflow.analysis.thresholds import evaluate_thresholds
from gridbench.jobflow.analysis.timelines import timeline_stages
from gridbench.jobflow.analysis.trial import TrialResult, analyze_reduced, trial_keep
from gridbench.jobflow.events.chain import StageChain
from gridbench.store import exclusions
from gridbench.store.layout import write_json

SCHEMA = "gridbench.metrics/1"


def analyze_run(
    run_dir: str | Path,
    *,
    thresholds: Sequence[Any] | None = None,
    warmup: Any = None,
    tolerance: float | None = None,
    config: AnalysisConfig | None = None,
    write: bool = False,
) -> dict[str, Any]:
    """Analyse every trial of a run and return the metrics.json object.

    ``thresholds`` and ``warmup`` default to the run's spec.yaml (``warmup`` accepts a
    fraction, "steady_state" or ``{"method", "fraction"}``), and so does the clock rule's
    ``validity.clock_factor`` when no ``config`` is given. ``config`` sets everything
    else. With ``write=True`` metrics.json and each trial's series.json are written.
    """
    run = Path(run_dir)
    dirs = load.trial_dirs(run)
    load.check_trials_present(run, dirs)
    need_spec = thresholds is None or warmup is None or config is None
    spec = load.read_spec_settings(run) if need_spec else {}
    cfg = config or _spec_validity(AnalysisConfig(), spec.get("validity"))
    method, fraction = parse_warmup(warmup if warmup is not None else spec.get("warmup"))
    cfg = _replace(cfg, method, fraction, tolerance, series=write and cfg.series)
    results: list[TrialResult] = []
    for d in dirs:
        info = load.read_trial_info(d)
        stages = timeline_stages(info.chain.names())
        reduced, torn = load.reduce_trial_events(d, info, stages, trial_keep(info))
        res = analyze_reduced(
            info, reduced, load.read_resources(d), cfg, load.read_server_resources(d)
        )
        del reduced
        res.metrics["events_torn"] = torn  # batches a crash cut short, skipped
        if write and res.series is not None:
            # compact: chart data, written by json's C encoder (indented, the Python one
            # took 60 ms a trial)
            write_json(d / load.SERIES_FILE, res.series, indent=None)
        results.append(TrialResult(res.info, res.metrics, None))
    exp = load.read_experiment(run)
    name = str(exp.get("name") or spec.get("name") or run.name)
    ths = thresholds if thresholds is not None else spec.get("thresholds") or []
    sampled = sampling_metrics(run, spec)  # hosts sampled during the run (sampling:)
    mark_client_bound([r.metrics for r in results], sampled)  # the client_bound rule
    by_hand = exclusions.in_force(run)  # gridbench exclude: appended beside the run
    metrics = assemble(
        results, experiment=name, cfg=cfg, thresholds=ths, by_hand=exclusions.reasons(run)
    )
    metrics["excluded_by_hand"] = exclusions.as_records(by_hand)
    if sampled is not None:
        metrics["sampling"] = sampled
    if write:
        write_metrics(run, metrics)
    return metrics


def write_metrics(run_dir: str | Path, metrics: Mapping[str, Any]) -> Path:
    """Write RUN/metrics.json atomically."""
    return write_json(Path(run_dir) / load.METRICS_FILE, metrics, indent=1)


def _spec_validity(cfg: AnalysisConfig, validity: Any) -> AnalysisConfig:
    """``cfg`` with the spec's ``validity.clock_factor`` (spec.yaml was validated at run
    time; a value that is not a positive number is ignored)."""
    factor = validity.get("clock_factor") if isinstance(validity, Mapping) else None
    if not isinstance(factor, int | float) or isinstance(factor, bool) or factor <= 0:
        return cfg
    return dataclasses.replace(
        cfg, validity=dataclasses.replace(cfg.validity, clock_factor=float(factor))
    )


def _replace(
    cfg: AnalysisConfig, method: str, fraction: float, tol: float | None, *, series: bool
) -> AnalysisConfig:
    return AnalysisConfig(
        warmup_method=method,
        warmup_fraction=fraction,
        tolerance=cfg.tolerance if tol is None else tol,
        window_s=cfg.window_s,
        validity=cfg.validity,
        resamples=cfg.resamples,
        seed=cfg.seed,
        max_points=cfg.max_points,
        series=series,
    )


def _point(
    index: int, trials: list[TrialResult], chain: StageChain, cfg: AnalysisConfig
) -> dict[str, Any]:
    trials = sorted(trials, key=lambda r: r.info.trial_index)
    names = chain.names()
    objs = [r.metrics for r in trials]
    summary = point_summary(objs, names[-1] if names else None)
    rates = [o["offered_rate_per_s"] for o in objs if o.get("offered_rate_per_s") is not None]
    offered = float(np.mean(rates)) if rates else None
    ratios = {s: summary["expected_ratio"].get(s, {}).get("mean") for s in names}
    finding = find_bottleneck(names, ratios, cfg.tolerance) if summary["used_trials"] else None
    ev = None
    if finding is not None:
        seg = segment_for_stage(chain, finding.stage)
        growth = summary["queues"].get(seg or "", {}).get("growth_per_s", {}).get("mean")
        ev = evidence(finding, seg, offered, growth)
        summary["bottleneck_corroborated"] = corroborated(finding, offered, growth)
    excluded = {e["trial_id"] for e in summary["excluded"]}
    used = [o for o in objs if o.get("valid") and o.get("trial_id") not in excluded]
    kinds = [o["model"].get("kind") for o in objs if isinstance(o.get("model"), dict)]
    load_model = load_models.find(str(kinds[0])) if kinds else None
    if load_model is not None:
        summary["model"] = load_model.summary(used)
    return {
        "index": index,
        "point": dict(trials[0].info.point),
        "offered_rate_per_s": offered,
        "trials": objs,
        "summary": summary,
        "bottleneck": finding.stage if finding else None,
        "bottleneck_evidence": ev,
    }


def _verdict(p: Mapping[str, Any], names: list[str], tol: float) -> PointVerdict | None:
    if p.get("offered_rate_per_s") is None:
        return None
    excluded = {e["trial_id"] for e in p["summary"]["excluded"]}
    judged: list[bool] = []
    for t in p["trials"]:
        if not t.get("valid") or t.get("trial_id") in excluded:
            continue
        rs = [t["throughput"].get(s, {}).get("expected_ratio") for s in names]
        known = [r for r in rs if r is not None]
        if known:
            judged.append(min(known) >= 1.0 - tol)
    sustained = all(judged) if judged else None
    return PointVerdict(float(p["offered_rate_per_s"]), sustained, p.get("bottleneck"))


def _capacity_data(points: Sequence[Mapping[str, Any]], last: str) -> tuple[Any, Any]:
    xs: list[float] = []
    ys: list[float] = []
    for p in points:
        excluded = {e["trial_id"] for e in p["summary"]["excluded"]}
        for t in p["trials"]:
            if not t.get("valid") or t.get("trial_id") in excluded:
                continue
            x, y = t.get("offered_rate_per_s"), t["throughput"].get(last, {}).get("steady")
            if x is not None and y is not None:
                xs.append(float(x))
                ys.append(float(y))
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)


def assemble(
    results: Sequence[TrialResult],
    *,
    experiment: str,
    cfg: AnalysisConfig | None = None,
    thresholds: Sequence[Any] = (),
    by_hand: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The metrics.json object from analysed trials (pure). ``by_hand``: trial id -> the
    reason it is excluded by hand (left out of every summary and threshold, listed)."""
    cfg = cfg or AnalysisConfig()
    for r in results:
        reason = (by_hand or {}).get(str(r.metrics.get("trial_id")))
        if reason is not None:
            r.metrics["excluded_by_hand"] = reason
        else:
            r.metrics.pop("excluded_by_hand", None)
    chain = results[0].info.chain if results else StageChain(stages=())
    names = chain.names()
    by_point: dict[int, list[TrialResult]] = {}
    for r in results:
        by_point.setdefault(r.info.point_index, []).append(r)
    points = [_point(i, by_point[i], chain, cfg) for i in sorted(by_point)]
    verdicts = [v for v in (_verdict(p, names, cfg.tolerance) for p in points) if v is not None]
    x, y = _capacity_data(points, names[-1]) if names else (np.empty(0), np.empty(0))
    knee_obj = knee(verdicts, x, y, resamples=cfg.resamples, seed=cfg.seed)
    invalid = [t for p in points for t in p["trials"] if not t["valid"]]
    metrics: dict[str, Any] = {
        "schema": SCHEMA,
        "experiment": experiment,
        "load_model": results[0].info.load_model if results else None,
        "chain": chain.to_dict(),
        "analysis": cfg.to_dict(),
        "points": points,
        "knee": knee_obj,
        "bottleneck": experiment_bottleneck(points, chain),
        "failures_vs_rate": failures_vs_rate(points),
        "growth": sweep_growth(points, results[0].info.load_model if results else None),
        "time_of_day": trial_times(points, results[0].info.load_model if results else None),
        "left_behind": left_behind([r.info for r in results], points),
        "cycles": run_cycles(points),  # periodic dispatch passes, from the start stamps
        "validity": {
            "valid": not invalid and bool(results),
            "invalid_trials": [t["trial_id"] for t in invalid],
            "reasons": [f"{t['trial_id']}: {r}" for t in invalid for r in t["validity"]["reasons"]]
            + ([] if results else ["the run has no trials"]),
        },
    }
    metrics["thresholds"] = evaluate_thresholds(metrics, list(thresholds))
    return metrics
