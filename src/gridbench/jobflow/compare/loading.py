"""Reading a job-flow run for a comparison: metrics.json, experiment.json and per-job
latency samples.

Per-job samples come from the trials' events (the same timeline and latency code as the
analysis), pooled over each point's *used* trials (valid and not dropped as outliers),
and capped per experiment, point and latency key by a seeded uniform sub-sample, so a
comparison of million-job runs stays fast. Loaded experiments are cached by path and
metrics.json modification time.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from gridbench.errors import GridbenchError, ResultsError
from gridbench.jobflow.analysis import load
from gridbench.jobflow.analysis.latency import latency_durations
from gridbench.jobflow.analysis.reduce import TIMELINE_KEEP
from gridbench.jobflow.analysis.timelines import job_times, timeline_stages
from gridbench.jobflow.compare.figures import used_trials
from gridbench.jobflow.report.loading import load_metrics
from gridbench.jobflow.report.model import as_dict, as_list
from gridbench.stats import capped
from gridbench.store.layout import RunDir
from gridbench.swept import F64, I64, ExperimentMetrics


def _metrics(path: Path) -> dict[str, Any]:
    if not (path / load.METRICS_FILE).is_file():
        raise ResultsError(
            "the experiment has not been analysed (no metrics.json)",
            where=str(path),
            fix=f"run 'gridbench analyze {path.name}' first",
        )
    try:
        return load_metrics(path)
    except ResultsError as exc:
        raise ResultsError(
            f"metrics.json cannot be used: {exc.message}",
            where=exc.where or str(path / load.METRICS_FILE),
            fix=f"re-run 'gridbench analyze {path.name}' (the file may be cut short)",
        ) from None


def _seed(*parts: object) -> int:
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode())


def _trial_durations(trial_dir: Path) -> dict[str, F64]:
    info = load.read_trial_info(trial_dir)
    stages = timeline_stages(info.chain.names())
    tl = load.reduce_trial_events(trial_dir, info, stages, TIMELINE_KEEP)[0].take()[0]
    origin = info.started_ns if info.started_ns is not None else 0
    return latency_durations(job_times(tl, origin), info.chain)


Samples = tuple[dict[int, dict[str, F64]], dict[int, dict[str, int]], dict[int, dict[str, I64]]]


def _samples(path: Path, run_id: str, metrics: Mapping[str, Any], cap: int | None) -> Samples:
    samples: dict[int, dict[str, F64]] = {}
    totals: dict[int, dict[str, int]] = {}
    groups: dict[int, dict[str, I64]] = {}
    for p in as_list(metrics.get("points")):
        point = as_dict(p)
        index = int(point.get("index", 0) or 0)
        pooled: dict[str, list[F64]] = {}
        labels: dict[str, list[I64]] = {}
        for ti, t in enumerate(used_trials(point)):
            trial_dir = path / load.TRIALS_DIR / str(t.get("trial_id"))
            if not (trial_dir / load.TRIAL_FILE).is_file():
                continue  # an ingested or pruned run: per-trial tests only for this trial
            # one trial's events at a time; keep only the finite durations
            for key, d in _trial_durations(trial_dir).items():
                d = d[np.isfinite(d)]
                pooled.setdefault(key, []).append(d)
                labels.setdefault(key, []).append(np.full(d.size, ti, dtype=np.int64))
        samples[index], totals[index], groups[index] = {}, {}, {}
        for key, parts in pooled.items():
            allv = np.concatenate(parts)
            totals[index][key] = int(allv.size)
            samples[index][key], groups[index][key] = capped(
                allv, np.concatenate(labels[key]), cap, _seed(run_id, index, key)
            )
    return samples, totals, groups


@lru_cache(maxsize=32)
def _load_cached(path: str, mtime_ns: int, samples: bool, cap: int | None) -> ExperimentMetrics:
    p = Path(path)
    metrics = _metrics(p)
    record = load.read_experiment(p)
    run_id = str(record.get("id") or p.name)
    smp: Samples = ({}, {}, {})
    if samples:
        try:
            smp = _samples(p, run_id, metrics, cap)
        except GridbenchError as exc:
            raise ResultsError(
                f"the per-job samples cannot be read: {exc.message}",
                where=exc.where or str(p),
                fix="repair or re-record the trial, or compare without per-job samples "
                "(--no-samples)",
            ) from None
    return ExperimentMetrics(
        id=p.name,
        metrics=metrics,
        record=record,
        samples=smp[0],
        samples_total=smp[1],
        sample_trials=smp[2],
        sample_cap=cap if samples else None,
    )


def load_compared(run: RunDir, *, samples: bool, max_samples: int | None) -> ExperimentMetrics:
    """One analysed job-flow run; with ``samples`` the per-job latencies are read from
    the trials' events, at most ``max_samples`` per point and latency key (``None``: no
    cap). ResultsError for a run without metrics.json, or a torn one."""
    path = run.path
    mfile = path / load.METRICS_FILE
    mtime = mfile.stat().st_mtime_ns if mfile.is_file() else -1
    if mtime < 0:
        _metrics(path)  # raises the "not analysed" error
    return _load_cached(str(path.resolve()), mtime, samples, max_samples)
