"""The swept comparison (pure): align points, test each pair, correct, judge.

Any :class:`~gridbench.swept.SweptComparable` family (job flow) says which figures its
runs share, their points and each run's measurements of a figure at a point
(:class:`~gridbench.swept.Measure`: per-repetition values, per-unit samples clustered by
repetition, counts); this module knows nothing of its metrics. Points are matched by
key (job flow: the swept values, so a run with more rates than the baseline is still
comparable on the rates they share). Every experiment is tested against the first (the
baseline), by the figure's test when its data are there, else by Welch's t-test over
the repetitions. The p-values of one figure (over every point and experiment) form one
family for the Benjamini-Hochberg correction.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gridbench.compare import significance as sig
from gridbench.compare.model import (
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
from gridbench.family import Family, family, kind_of, not_applicable
from gridbench.stats import rep
from gridbench.swept import Measure, SweepPoint, SweptComparable, SweptFigure


def metric_info(figure: SweptFigure) -> MetricInfo:
    """The compare model's description of a swept figure."""
    better = "higher" if figure.higher_is_better else "lower"
    return MetricInfo(figure.key, figure.label, figure.unit, better, figure.test)


def _select(infos: list[SweptFigure], patterns: Sequence[str] | None) -> list[SweptFigure]:
    if not patterns:
        return infos
    chosen = [i for i in infos if any(fnmatch.fnmatchcase(i.key, p) for p in patterns)]
    if not chosen:
        names = ", ".join(i.key for i in infos[:12])
        raise ResultsError(
            f"no compared metric matches {', '.join(patterns)}",
            where="--metric",
            fix=f"use a name or glob pattern of a metric the experiments share, e.g. {names}",
        )
    return chosen


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


def _value(experiment: str, m: Measure) -> Value:
    """Mean, CI, range and n over the repetitions; the per-unit sample counts."""
    r = rep(m.repeats)
    return Value(
        experiment=experiment,
        value=r["mean"],
        ci95=r["ci95"],
        min=r["min"],
        max=r["max"],
        n=int(r["n"]),
        jobs=None if m.units is None else int(m.units.values.size),
        jobs_total=None if m.units is None else m.units.total,
    )


def _test(
    figure: SweptFigure, base: Measure, other: Measure
) -> tuple[str | None, sig.TestResult, str | None]:
    if figure.test == sig.FISHER:
        bf, of = base.counts or (0, 0), other.counts or (0, 0)
        res = sig.fisher(bf[0], bf[1], of[0], of[1])
        return sig.FISHER, res, None if res else "no planned jobs to compare"
    bj, oj = base.units, other.units
    if bj is not None and oj is not None and bj.values.size >= 2 and oj.values.size >= 2:
        fn = sig.mann_whitney_clustered if figure.test == sig.MWU_CLUSTERED else sig.welch_clustered
        res = fn(bj.values, bj.repetitions, oj.values, oj.repetitions)
        return figure.test, res, None if res else "per-job samples have no variance"
    bt, ot = base.repeats, other.repeats
    res = sig.welch(bt, ot)
    if res is not None:
        note = "per-trial test" if figure.test != sig.WELCH else None
        return sig.WELCH, res, note
    if bt.size < 2 or ot.size < 2:
        return None, None, "fewer than 2 used trials: not tested"
    return None, None, "the trials have no variance: not tested"


def _effect(base: float | None, other: float | None) -> tuple[float | None, float | None]:
    if base is None or other is None:
        return None, None
    ratio = other / base if base != 0.0 else None
    return other - base, ratio


def swept(fam: Family) -> SweptComparable:
    """``fam`` as a swept-comparable family; ResultsError when it is not one."""
    if not isinstance(fam, SweptComparable):
        raise not_applicable(fam, "compare", "its family gives no swept figures")
    return fam


def compare(
    runs: Sequence[ExperimentMetrics],
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Comparison:
    """Compare ``runs`` (of one swept-comparable family, by the kind recorded in the
    baseline) point by point against the first (pure; no file access).

    ``metrics``: glob patterns selecting among the family's figures. Raises ResultsError
    when fewer than two runs are given, the family finds them incompatible, or they
    share no point.
    """
    at_least_two(runs, "give two or more experiments; the first is the baseline")
    return compare_points(
        swept(family(kind_of(runs[0].record))), runs, metrics=metrics, settings=settings
    )


def _measure_all(
    fam: SweptComparable,
    runs: Sequence[ExperimentMetrics],
    by_run: list[dict[str, SweepPoint]],
    key: str,
    figure: SweptFigure,
) -> tuple[list[Value], dict[str, Measure]]:
    """Each run's value and measurements of ``figure`` at point ``key`` (where measured)."""
    vals: list[Value] = []
    data: dict[str, Measure] = {}
    for r, per in zip(runs, by_run, strict=True):
        if key not in per:
            continue
        data[r.id] = fam.measure(r, per[key], figure)
        vals.append(_value(r.id, data[r.id]))
    return vals, data


def compare_points(
    fam: SweptComparable,
    runs: Sequence[ExperimentMetrics],
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Comparison:
    """Compare ``runs`` of ``fam`` point by point against the first (pure)."""
    s = settings or Settings()
    at_least_two(runs, "give two or more experiments; the first is the baseline")
    fam.check_compatible(runs)
    base = runs[0]
    figures = _select(fam.swept_figures(runs), metrics)
    infos = [metric_info(f) for f in figures]
    by_run = [{p.key: p for p in fam.sweep_points(r)} for r in runs]
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
        for mi, figure in enumerate(figures):
            vals, data = _measure_all(fam, runs, by_run, key, figure)
            rows.append(vals)
            if base.id not in data:
                continue
            for v in vals[1:]:
                test, res, note = _test(figure, data[base.id], data[v.experiment])
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
    diffs = _corrected(pending, base.id, infos, s)
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
                point=dict(p0.values),
                offered_rate_per_s=p0.x,
                indices={
                    r.id: per[key].index for r, per in zip(runs, by_run, strict=True) if key in per
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
        notes=tuple(fam.comparison_notes(runs, s.max_samples) + spec_notes(runs)),
        key_metrics=tuple(fam.key_figures),
    )


def _corrected(
    pending: list[_Pending], baseline: str, infos: list[MetricInfo], s: Settings
) -> dict[tuple[int, int], list[Diff]]:
    """The diffs by (point, metric), Benjamini-Hochberg adjusted per metric."""
    p_raw = np.array([np.nan if x.p is None else x.p for x in pending], dtype=np.float64)
    family_of = np.array([x.metric for x in pending], dtype=np.int64)
    p_adj = np.full(p_raw.shape, np.nan)
    for mi in np.unique(family_of):  # one family per metric: every point and experiment
        sel = family_of == mi
        p_adj[sel] = sig.benjamini_hochberg(p_raw[sel])
    diffs: dict[tuple[int, int], list[Diff]] = {}
    for x, pa in zip(pending, p_adj, strict=True):
        diffs.setdefault((x.point, x.metric), []).append(
            _diff(x, None if np.isnan(pa) else float(pa), baseline, infos[x.metric], s)
        )
    return diffs


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
