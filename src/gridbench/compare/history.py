"""The regression history of one metric across every run of the same spec, oldest first.

Runs belong to one history when their experiment.json ``name`` (the spec's ``name``) is
the same: the spec hash changes with every edit (another rate, one more trial), and the
history should survive that; each entry says whether its spec hash equals the reference
run's (``same_config``), so a chart can mark where the spec changed.

``metric`` uses the threshold path grammar (docs/metrics.md): a trial path such as
``latency.overall.p99`` is averaged over each point's used trials (with a 95% CI); a
``summary.`` path is read from each point's summary; ``experiment.`` / ``knee.`` /
``bottleneck.`` paths give one value per run (point key ``experiment``). Each entry is
compared with the previous one by Welch's t-test over the per-trial values (trial paths
only); the p-values of the whole history are adjusted together with Benjamini-Hochberg.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gridbench.compare import significance as sig
from gridbench.compare.engine import judge, point_key, trial_value, used_trials, welch_diff
from gridbench.compare.loading import load_experiment
from gridbench.compare.model import (
    F64,
    Diff,
    ExperimentMetrics,
    History,
    HistoryEntry,
    Settings,
    Value,
)
from gridbench.errors import ResultsError
from gridbench.jobflow.report.model import as_dict, points
from gridbench.paths import PathError, number, resolve
from gridbench.stats import rep
from gridbench.store.catalogue import list_runs

EXPERIMENT_KEY = "experiment"
_TOP = ("experiment.", "knee.", "bottleneck.")
_HIGHER = (
    "throughput.",
    "summary.throughput",
    "summary.expected_ratio",
    "summary.edgi_ratio",
    "knee.capacity",
    "experiment.knee.capacity",
    "jobs.completed",
    "summary.valid_trials",
    "summary.used_trials",
)


def better_direction(metric: str) -> str:
    """'higher' for throughput-like paths, else 'lower' (latency, failures, queues)."""
    return "higher" if metric.startswith(_HIGHER) or ".expected_ratio" in metric else "lower"


def _kind(metric: str) -> str:
    if metric.startswith(_TOP):
        return "top"
    if metric.startswith("summary."):
        return "summary"
    return "trial"


def _top_value(metrics: Mapping[str, Any], metric: str) -> float | None:
    path = metric[len("experiment.") :] if metric.startswith("experiment.") else metric
    try:
        return number(resolve(metrics, path))
    except PathError:
        return None


def run_values(run: ExperimentMetrics, metric: str) -> dict[str, tuple[Value, F64]]:
    """Point key -> (value, per-trial values) of ``metric`` in one run (pure)."""
    kind = _kind(metric)
    if kind == "top":
        v = _top_value(run.metrics, metric)
        if v is None:
            return {}
        return {EXPERIMENT_KEY: (Value(run.id, v, None, v, v, 1), np.array([v]))}
    out: dict[str, tuple[Value, F64]] = {}
    for p in points(run.metrics):
        if kind == "summary":
            try:
                v = number(resolve(as_dict(p.get("summary")), metric[len("summary.") :]))
            except PathError:
                v = None
            if v is not None:
                out[point_key(p)] = (Value(run.id, v, None, v, v, 1), np.array([v]))
            continue
        vals = [trial_value(t, metric) for t in used_trials(p)]
        arr = np.array([x for x in vals if x is not None], dtype=np.float64)
        if arr.size == 0:
            continue
        r = rep(arr)
        out[point_key(p)] = (
            Value(run.id, r["mean"], r["ci95"], r["min"], r["max"], int(r["n"])),
            arr,
        )
    return out


def build_history(
    reference: ExperimentMetrics,
    runs: list[ExperimentMetrics],
    metric: str,
    settings: Settings | None = None,
    skipped: Mapping[str, str] | None = None,
) -> History:
    """The history of ``metric`` over ``runs`` (pure; sorted oldest first here)."""
    s = settings or Settings()
    better = better_direction(metric)
    ordered = sorted(runs, key=lambda r: (r.created or "", r.id))
    per_run = [run_values(r, metric) for r in ordered]
    ref_vals = run_values(reference, metric)
    if not ref_vals:
        raise ResultsError(
            f"the metric {metric!r} names no number in {reference.id}",
            where="--metric",
            fix="use a path such as latency.overall.p99, throughput.<stage>.steady, "
            "failures.rate, summary.latency.overall.mean or knee.capacity_per_s "
            "(docs/metrics.md)",
        )
    keys: list[str] = list(ref_vals)
    for pv in per_run:
        keys += [k for k in pv if k not in keys]
    # collect every test first: the correction needs the whole family
    tests: list[tuple[int, str, sig.TestResult, float | None, float | None]] = []
    for i in range(1, len(ordered)):
        for key, (v, arr) in per_run[i].items():
            prev = per_run[i - 1].get(key)
            if prev is None:
                continue
            res = sig.welch(prev[1], arr) if _kind(metric) == "trial" else None
            diff = None if v.value is None or prev[0].value is None else v.value - prev[0].value
            ratio = (
                v.value / prev[0].value
                if v.value is not None and prev[0].value not in (None, 0.0)
                else None
            )
            tests.append((i, key, res, diff, ratio))
    p_adj = sig.benjamini_hochberg(
        np.array([np.nan if t[2] is None else t[2][1] for t in tests], dtype=np.float64)
    )
    vs: dict[int, dict[str, Diff]] = {}
    for (i, key, res, diff, ratio), pa in zip(tests, p_adj, strict=True):
        padj = None if np.isnan(pa) else float(pa)
        vs.setdefault(i, {})[key] = welch_diff(
            ordered[i].id,
            ordered[i - 1].id,
            res,
            padj,
            (diff, ratio),
            judge(padj, diff, ratio, better, s),
            "not tested (fewer than 2 trials, or not a per-trial metric)",
        )
    entries = tuple(
        HistoryEntry(
            experiment=r.id,
            created=r.created,
            spec_hash=r.spec_hash,
            same_config=r.spec_hash is not None and r.spec_hash == reference.spec_hash,
            valid=r.valid,
            values={k: v for k, (v, _) in pv.items()},
            vs_previous=vs.get(i, {}),
        )
        for i, (r, pv) in enumerate(zip(ordered, per_run, strict=True))
    )
    return History(
        metric=metric,
        name=reference.name,
        reference=reference.id,
        better=better,
        points=tuple(keys),
        entries=entries,
        settings=s,
        skipped=dict(skipped or {}),
    )


def history(
    root: Path, experiment_id: str, metric: str, *, settings: Settings | None = None
) -> History:
    """``metric`` across every analysed run with the same spec name as ``experiment_id``.

    Oldest first. Runs of that name that are not analysed (or unreadable) are listed in
    ``skipped`` with the reason. Raises ResultsError for an unknown or unanalysed
    ``experiment_id`` and for a metric path that names nothing in it.
    """
    reference = load_experiment(root, experiment_id, samples=False)
    runs: list[ExperimentMetrics] = []
    skipped: dict[str, str] = {}
    for entry in list_runs(root):
        if str(entry.get("name")) != reference.name:
            continue
        try:
            runs.append(load_experiment(root, str(entry["path"]), samples=False))
        except ResultsError as exc:
            skipped[str(entry.get("id"))] = exc.message
    return build_history(reference, runs, metric, settings, skipped)
