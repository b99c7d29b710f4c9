"""The comparison itself (pure): align points, pick metrics, test each pair, correct, judge.

Points are matched by their swept values (the point's ``k=v`` label), so a run with more
rates than the baseline is still comparable on the rates they share. Every experiment is
tested against the first (the baseline). The p-values of one metric (over every point and
experiment) form one family for the Benjamini-Hochberg correction.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gridbench.compare import significance as sig
from gridbench.compare.model import (
    F64,
    I64,
    Comparison,
    Diff,
    ExperimentMetrics,
    MetricComparison,
    MetricInfo,
    PointComparison,
    Settings,
    Value,
)
from gridbench.errors import ResultsError
from gridbench.jobflow.report.model import (
    as_dict,
    chain_view,
    latency_keys,
    point_label,
    points,
    queue_segments,
    throughput_stages,
)
from gridbench.paths import PathError, number, resolve
from gridbench.stats import rep

FAILURE_RATE = "failures.rate"
LATENCY_STATS = (("mean", sig.WELCH_CLUSTERED), ("p50", sig.MWU_CLUSTERED), ("p99", sig.WELCH))


def point_key(point: Mapping[str, Any]) -> str:
    """The key that matches a point across experiments: its swept values, or its index."""
    return point_label(point) or f"point {point.get('index', 0)}"


def used_trials(point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trial objects a point's summary used: valid and not excluded as outliers."""
    summary = as_dict(point.get("summary"))
    excluded = {as_dict(e).get("trial_id") for e in summary.get("excluded") or []}
    return [
        as_dict(t)
        for t in point.get("trials") or []
        if as_dict(t).get("valid") and as_dict(t).get("trial_id") not in excluded
    ]


def trial_value(trial: Mapping[str, Any], metric: str) -> float | None:
    """A trial's value of a trial path (``failures.rate`` is the trial's failure_rate)."""
    if metric == FAILURE_RATE:
        return number(trial.get("failure_rate"))
    try:
        return number(resolve(trial, metric))
    except PathError:
        return None


def _common(lists: Sequence[Sequence[str]]) -> list[str]:
    first = list(lists[0])
    rest = [set(x) for x in lists[1:]]
    return [k for k in first if all(k in r for r in rest)]


def default_metrics(runs: Sequence[ExperimentMetrics]) -> list[MetricInfo]:
    """The metrics every experiment has, overall ones first.

    Latency (seconds, lower is better) of every common segment: ``.mean`` (Welch on
    per-job samples, trial-clustered), ``.p50`` (Mann-Whitney U on per-job samples,
    trial-clustered), ``.p99`` (Welch on per-trial values); steady throughput (jobs/s,
    higher is better) of every common stage; the failure rate (Fisher's exact test);
    queue growth (jobs/s, lower is better).
    """
    if not runs:
        return []
    ms = [r.metrics for r in runs]
    chain = chain_view(ms[0])
    lat = _common([latency_keys(m) for m in ms])
    lat = sorted(lat, key=lambda k: (k != "overall", lat.index(k)))
    out: list[MetricInfo] = []
    for key in lat:
        label = chain.segment_label(key)
        for stat, test in LATENCY_STATS:
            out.append(MetricInfo(f"latency.{key}.{stat}", f"{label} ({stat})", "s", "lower", test))
    stages = _common([throughput_stages(m) for m in ms])
    stages = sorted(stages, key=lambda s: (s != "overall", stages.index(s)))
    for st in stages:
        label = "overall" if st == "overall" else chain.stage_label(st)
        out.append(
            MetricInfo(
                f"throughput.{st}.steady",
                f"steady throughput at {label}",
                "jobs/s",
                "higher",
                sig.WELCH,
            )
        )
    out.append(MetricInfo(FAILURE_RATE, "failed jobs / planned jobs", "ratio", "lower", sig.FISHER))
    for q in _common([queue_segments(m) for m in ms]):
        out.append(
            MetricInfo(
                f"queues.{q}.growth_per_s",
                f"queue growth in {chain.segment_label(q)}",
                "jobs/s",
                "lower",
                sig.WELCH,
            )
        )
    return out


def _select(infos: list[MetricInfo], patterns: Sequence[str] | None) -> list[MetricInfo]:
    if not patterns:
        return infos
    chosen = [i for i in infos if any(fnmatch.fnmatchcase(i.metric, p) for p in patterns)]
    if not chosen:
        names = ", ".join(i.metric for i in infos[:12])
        raise ResultsError(
            f"no compared metric matches {', '.join(patterns)}",
            where="--metric",
            fix=f"use a name or glob pattern of a metric the experiments share, e.g. {names}",
        )
    return chosen


def _check_compatible(runs: Sequence[ExperimentMetrics]) -> None:
    at_least_two(runs, "give two or more experiments; the first is the baseline")
    base = runs[0]
    for r in runs[1:]:
        if r.load_model != base.load_model:
            raise ResultsError(
                f"incompatible experiments: {r.id} uses the {r.load_model} load model, "
                f"the baseline {base.id} the {base.load_model} one",
                where=r.id,
                fix="compare experiments of the same load model (open with open, closed "
                "with closed)",
            )


def at_least_two(runs: Sequence[Any], fix: str) -> None:
    """ResultsError unless there are two runs or more to compare."""
    if len(runs) < 2:
        raise ResultsError(
            f"a comparison needs at least two experiments, got {len(runs)}",
            where="experiment ids",
            fix=fix,
        )


#: The fix for too few experiments given by id.
GIVE_IDS = "give two or more ids from 'gridbench list'; the first is the baseline"


def given_once(refs: Sequence[str], ids: Sequence[str]) -> None:
    """ResultsError when two of ``refs`` name the same experiment (``ids``, in order)."""
    seen: dict[str, str] = {}
    for ref, rid in zip(refs, ids, strict=True):
        if rid in seen:
            raise ResultsError(
                f"experiment {rid} is given twice ({seen[rid]!r} and {ref!r})",
                where="experiment ids",
                fix="give each experiment once",
            )
        seen[rid] = ref


def shared_keys(
    ids: Sequence[str], by_run: Sequence[Mapping[str, Any]], what: str, fix: str
) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """The baseline's keys (points, figures) that another run has too, and per run the
    keys left out. ResultsError naming ``what`` when the baseline shares none."""
    keys = [k for k in by_run[0] if any(k in other for other in by_run[1:])]
    if not keys:
        raise ResultsError(
            f"incompatible experiments: no {what} of the baseline {ids[0]} is measured by "
            "the others",
            where=", ".join(ids),
            fix=fix,
        )
    unmatched = {
        i: tuple(k for k in per if k not in keys)
        for i, per in zip(ids, by_run, strict=True)
        if any(k not in keys for k in per)
    }
    return keys, unmatched


def welch_diff(
    experiment: str,
    baseline: str,
    res: sig.TestResult,
    p_adjusted: float | None,
    effect: tuple[float | None, float | None],
    judged: tuple[bool, str],
    untested: str,
) -> Diff:
    """The Diff of a Welch test (``res``; None: not tested, ``untested`` says why)."""
    return Diff(
        experiment=experiment,
        baseline=baseline,
        test=sig.WELCH if res else None,
        statistic=res[0] if res else None,
        p_value=res[1] if res else None,
        p_adjusted=p_adjusted,
        significant=judged[0],
        difference=effect[0],
        ratio=effect[1],
        verdict=judged[1],
        note=None if res else untested,
    )


Jobs = tuple[F64, I64] | None  # per-job samples and their trial labels
Data = tuple[F64, Jobs, tuple[int, int]]


@dataclass
class _Pending:
    """A test result waiting for the multiple-comparison correction."""

    point: int
    metric: int
    experiment: str
    test: str | None
    stat: float | None
    p: float | None
    difference: float | None
    ratio: float | None
    note: str | None


def _values(
    run: ExperimentMetrics, point: Mapping[str, Any], info: MetricInfo
) -> tuple[Value, Data]:
    """Value, per-trial values, per-job samples (or None) and pooled failure counts."""
    trials = used_trials(point)
    vals = [trial_value(t, info.metric) for t in trials]
    per_trial = np.array([v for v in vals if v is not None], dtype=np.float64)
    r = rep(per_trial)
    jobs: Jobs = None
    total: int | None = None
    parts = info.metric.split(".")
    if parts[0] == "latency" and parts[-1] in ("mean", "p50"):
        idx = int(point.get("index", 0) or 0)
        key = ".".join(parts[1:-1])
        got = run.samples.get(idx, {}).get(key)
        labels = run.sample_trials.get(idx, {}).get(key)
        if got is not None:
            jobs = (got, labels if labels is not None else np.zeros(got.size, dtype=np.int64))
            total = run.samples_total.get(idx, {}).get(key, int(got.size))
    failed = sum(int(as_dict(t.get("jobs")).get("failed") or 0) for t in trials)
    planned = sum(int(as_dict(t.get("jobs")).get("planned") or 0) for t in trials)
    value = Value(
        experiment=run.id,
        value=r["mean"],
        ci95=r["ci95"],
        min=r["min"],
        max=r["max"],
        n=int(r["n"]),
        jobs=None if jobs is None else int(jobs[0].size),
        jobs_total=total,
    )
    return value, (per_trial, jobs, (failed, planned))


def _test(
    info: MetricInfo,
    base: Data,
    other: Data,
) -> tuple[str | None, sig.TestResult, str | None]:
    (bt, bj, bf), (ot, oj, of) = base, other
    if info.test == sig.FISHER:
        res = sig.fisher(bf[0], bf[1], of[0], of[1])
        return sig.FISHER, res, None if res else "no planned jobs to compare"
    if bj is not None and oj is not None and bj[0].size >= 2 and oj[0].size >= 2:
        fn = sig.mann_whitney_clustered if info.test == sig.MWU_CLUSTERED else sig.welch_clustered
        res = fn(bj[0], bj[1], oj[0], oj[1])
        return info.test, res, None if res else "per-job samples have no variance"
    res = sig.welch(bt, ot)
    if res is not None:
        note = "per-trial test" if info.test != sig.WELCH else None
        return sig.WELCH, res, note
    if bt.size < 2 or ot.size < 2:
        return None, None, "fewer than 2 used trials: not tested"
    return None, None, "the trials have no variance: not tested"


def _effect(base: float | None, other: float | None) -> tuple[float | None, float | None]:
    if base is None or other is None:
        return None, None
    ratio = other / base if base != 0.0 else None
    return other - base, ratio


def compare(
    runs: Sequence[ExperimentMetrics],
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Comparison:
    """Compare ``runs`` point by point against the first (pure; no file access).

    ``metrics``: glob patterns selecting among :func:`default_metrics`. Raises
    ResultsError when fewer than two runs are given, their load models differ, or they
    share no sweep point.
    """
    s = settings or Settings()
    _check_compatible(runs)
    base = runs[0]
    infos = _select(default_metrics(runs), metrics)
    by_run = [{point_key(p): p for p in points(r.metrics)} for r in runs]
    keys, unmatched = shared_keys(
        [r.id for r in runs],
        by_run,
        "sweep point",
        "compare runs of the same spec, or specs with the same swept values",
    )
    pending: list[_Pending] = []
    table: list[list[list[Value]]] = []
    for pi, key in enumerate(keys):
        rows: list[list[Value]] = []
        for mi, info in enumerate(infos):
            vals: list[Value] = []
            data: dict[str, Data] = {}
            for r, per in zip(runs, by_run, strict=True):
                if key not in per:
                    continue
                v, data[r.id] = _values(r, per[key], info)
                vals.append(v)
            rows.append(vals)
            if base.id not in data:
                continue
            for v in vals[1:]:
                test, res, note = _test(info, data[base.id], data[v.experiment])
                diff, ratio = _effect(vals[0].value, v.value)
                pending.append(
                    _Pending(
                        pi,
                        mi,
                        v.experiment,
                        test,
                        res[0] if res else None,
                        res[1] if res else None,
                        diff,
                        ratio,
                        note,
                    )
                )
        table.append(rows)
    p_raw = np.array([np.nan if x.p is None else x.p for x in pending], dtype=np.float64)
    family = np.array([x.metric for x in pending], dtype=np.int64)
    p_adj = np.full(p_raw.shape, np.nan)
    for mi in np.unique(family):  # one family per metric: every point and experiment
        sel = family == mi
        p_adj[sel] = sig.benjamini_hochberg(p_raw[sel])
    diffs: dict[tuple[int, int], list[Diff]] = {}
    for x, pa in zip(pending, p_adj, strict=True):
        diffs.setdefault((x.point, x.metric), []).append(
            _diff(x, None if np.isnan(pa) else float(pa), base.id, infos[x.metric], s)
        )
    # a metric no experiment has a value for at any point is noise in every view
    keep = [
        mi
        for mi in range(len(infos))
        if any(v.value is not None for rows in table for v in rows[mi])
    ]
    out_points: list[PointComparison] = []
    for pi, key in enumerate(keys):
        p0 = next(per[key] for per in by_run if key in per)
        out_points.append(
            PointComparison(
                key=key,
                point=dict(as_dict(p0.get("point"))),
                offered_rate_per_s=number(p0.get("offered_rate_per_s")),
                indices={
                    r.id: int(per[key].get("index", 0) or 0)
                    for r, per in zip(runs, by_run, strict=True)
                    if key in per
                },
                metrics=tuple(
                    MetricComparison(
                        info.metric, tuple(table[pi][mi]), tuple(diffs.get((pi, mi), []))
                    )
                    for mi, info in enumerate(infos)
                    if mi in keep
                ),
            )
        )
    return Comparison(
        experiments=tuple(runs),
        metric_info=tuple(infos[mi] for mi in keep),
        points=tuple(out_points),
        settings=s,
        unmatched=unmatched,
        notes=tuple(_notes(runs, s)),
    )


def judge(
    p_adjusted: float | None,
    difference: float | None,
    ratio: float | None,
    better: str,
    settings: Settings,
) -> tuple[bool, str]:
    """(significant, verdict): adjusted p below alpha and a large enough relative effect."""
    if p_adjusted is None or difference is None or p_adjusted >= settings.alpha:
        return False, "unchanged"
    big = abs(ratio - 1.0) >= settings.min_effect if ratio is not None else difference != 0.0
    if not big or difference == 0.0:
        return False, "unchanged"
    good = difference < 0 if better == "lower" else difference > 0
    return True, "improved" if good else "regressed"


def _diff(x: _Pending, p_adj: float | None, baseline: str, info: MetricInfo, s: Settings) -> Diff:
    significant, verdict = judge(p_adj, x.difference, x.ratio, info.better, s)
    return Diff(
        experiment=x.experiment,
        baseline=baseline,
        test=x.test,
        statistic=x.stat,
        p_value=x.p,
        p_adjusted=p_adj,
        significant=significant,
        difference=x.difference,
        ratio=x.ratio,
        verdict=verdict,
        note=x.note,
    )


def _notes(runs: Sequence[ExperimentMetrics], s: Settings) -> list[str]:
    notes: list[str] = []
    cut = [r.id for r in runs if r.downsampled]
    if cut:
        notes.append(
            f"per-job latencies were down-sampled to at most {s.max_samples} per point and "
            f"segment (seeded uniform sample) for: {', '.join(cut)}"
        )
    no_samples = [r.id for r in runs if not r.samples]
    if no_samples:
        notes.append(
            "no per-job samples for " + ", ".join(no_samples) + ": latency means and medians "
            "were tested across trials (Welch), which has little power with few trials"
        )
    return notes + spec_notes(runs)


def spec_notes(runs: Sequence[ExperimentMetrics]) -> list[str]:
    """The notes every comparison shares: runs from different specs, invalid runs."""
    notes: list[str] = []
    if len({r.name for r in runs}) > 1 or len({r.spec_hash for r in runs}) > 1:
        notes.append(
            "the experiments were run from different specs: differences may come "
            "from the spec, not the system"
        )
    invalid = [r.id for r in runs if r.valid is False]
    if invalid:
        notes.append("invalid measurements (see their validity verdict): " + ", ".join(invalid))
    return notes
