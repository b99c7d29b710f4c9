"""The regression history of one metric across every run of the same spec, oldest first.

Runs belong to one history when their experiment.json ``name`` (the spec's ``name``) is
the same: the spec hash changes with every edit (another rate, one more trial), and the
history should survive that; each entry says whether its spec hash equals the reference
run's (``same_config``), so a chart can mark where the spec changed.

This is the history of a :class:`~gridbench.swept.SweptComparable` family: the family
reads ``metric`` in each run as values per point (job flow: a threshold path, docs/
metrics.md); here they are averaged (with a 95% CI), each entry is compared with the
previous one by Welch's t-test over the values (two or more a side), and the p-values of
the whole history are adjusted together with Benjamini-Hochberg.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gridbench.compare import significance as sig
from gridbench.compare.engine import judge, welch_diff
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
from gridbench.stats import rep
from gridbench.swept import SweptComparable


def run_values(
    fam: SweptComparable, run: ExperimentMetrics, metric: str
) -> dict[str, tuple[Value, F64]]:
    """Point key -> (value, values) of ``metric`` in one run (pure)."""
    out: dict[str, tuple[Value, F64]] = {}
    for key, arr in fam.history_values(run, metric).items():
        r = rep(arr)
        out[key] = (Value(run.id, r["mean"], r["ci95"], r["min"], r["max"], int(r["n"])), arr)
    return out


def build_history(
    fam: SweptComparable,
    reference: ExperimentMetrics,
    runs: list[ExperimentMetrics],
    metric: str,
    settings: Settings | None = None,
    skipped: Mapping[str, str] | None = None,
) -> History:
    """The history of ``metric`` over ``runs`` (pure; sorted oldest first here)."""
    s = settings or Settings()
    better = "higher" if fam.history_higher_is_better(metric) else "lower"
    ordered = sorted(runs, key=lambda r: (r.created or "", r.id))
    per_run = [run_values(fam, r, metric) for r in ordered]
    ref_vals = run_values(fam, reference, metric)
    if not ref_vals:
        raise ResultsError(
            f"the metric {metric!r} names no number in {reference.id}",
            where="--metric",
            fix=fam.history_fix,
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
            res = sig.welch(prev[1], arr)  # None below two values a side (single values)
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
