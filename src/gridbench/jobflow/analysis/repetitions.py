"""Statistics of one sweep point across its repeated trials (METHODS 1.10).

Only valid trials enter the summary; invalid ones are listed in ``excluded`` with their
reasons, never averaged in. Outliers are flagged per metric by a robust rule:
|x - median| > 3 * s, with s = 1.4826 * MAD (the normal-consistent median absolute
deviation), floored at 1% of |median| so that near-identical trials do not flag each
other; it needs at least 3 trials. A flagged trial is *dropped* (left out of the summary)
only when the backend's background queue explains it: more other jobs were queued during
it than the point's median trial saw. Otherwise it is *kept*, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.jobflow import text
from gridbench.paths import PathError, number, resolve
from gridbench.stats import rep

OUTLIER_K = 3.0
MAD_SCALE = 1.4826
REL_FLOOR = 0.01
MIN_TRIALS = 3


def outlier_metrics(last_stage: str | None) -> list[str]:
    """The per-trial metrics checked for outliers."""
    out = ["latency.overall.mean", "latency.overall.p99", "throughput.overall.average"]
    if last_stage is not None:
        out.insert(0, f"throughput.{last_stage}.steady")
    return out


def _value(trial: Mapping[str, Any], path: str) -> float | None:
    try:
        return number(resolve(trial, path))
    except PathError:
        return None


def _background(trial: Mapping[str, Any]) -> int | None:
    bq = trial.get("background_queue") or {}
    vals = [v for v in (bq.get("start"), bq.get("end")) if v is not None]
    return max(vals) if vals else None


def find_outliers(
    trials: Sequence[Mapping[str, Any]], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Outlier records {trial_id, metric, value, reason, kept} among ``trials`` (valid ones)."""
    out: list[dict[str, Any]] = []
    bgs = [b for b in (_background(t) for t in trials) if b is not None]
    bg_median = float(np.median(bgs)) if bgs else None
    for metric in metrics:
        pairs = [(t, _value(t, metric)) for t in trials]
        vals = [(t, v) for t, v in pairs if v is not None]
        if len(vals) < MIN_TRIALS:
            continue
        arr = np.array([v for _, v in vals])
        med = float(np.median(arr))
        scale = max(MAD_SCALE * float(np.median(np.abs(arr - med))), REL_FLOOR * abs(med))
        if scale <= 0:
            continue
        for t, v in vals:
            z = abs(v - med) / scale
            if z <= OUTLIER_K:
                continue
            bg = _background(t)
            interfered = bg is not None and bg_median is not None and bg > bg_median and bg > 0
            reason = (
                f"{metric} = {text.num(v)} is {text.num(z, 2)} robust SDs from the median "
                f"{text.num(med)} of {len(vals)} trials"
            )
            if interfered:
                reason += (
                    f"; the backend had {bg} other jobs queued (median trial: "
                    f"{text.num(bg_median or 0)}): outside interference, dropped"
                )
            else:
                seen = "not recorded" if bg is None else f"{bg} other jobs queued"
                reason += f"; no interference explains it (background queue {seen}): kept"
            out.append(
                {
                    "trial_id": t.get("trial_id"),
                    "metric": metric,
                    "value": v,
                    "reason": reason,
                    "kept": not interfered,
                }
            )
    return out


def _rep_of(trials: Sequence[Mapping[str, Any]], section: str, field: str | None) -> dict[str, Any]:
    keys: list[str] = []
    for t in trials:
        for k in t.get(section, {}):
            if k not in keys:
                keys.append(k)
    res: dict[str, Any] = {}
    for k in keys:
        vals: list[float | None] = []
        for t in trials:
            obj = t.get(section, {}).get(k)
            v = obj.get(field) if field is not None and isinstance(obj, Mapping) else obj
            vals.append(number(v) if v is not None else (0.0 if section == "failures" else None))
        res[k] = rep(vals)
    return res


def point_summary(trials: Sequence[Mapping[str, Any]], last_stage: str | None) -> dict[str, Any]:
    """The ``summary`` object of one point from its trial objects. A trial excluded by
    hand (``excluded_by_hand``: its reason, ``gridbench exclude``) is left out like an
    invalid one, and listed in ``excluded`` with that reason."""
    by_hand = [t for t in trials if t.get("excluded_by_hand")]
    valid = [t for t in trials if t.get("valid") and not t.get("excluded_by_hand")]
    invalid = [t for t in trials if not t.get("valid") and not t.get("excluded_by_hand")]
    outliers = find_outliers(valid, outlier_metrics(last_stage))
    dropped = {o["trial_id"] for o in outliers if not o["kept"]}
    used = [t for t in valid if t.get("trial_id") not in dropped]
    excluded = [
        {
            "trial_id": t.get("trial_id"),
            "reason": "invalid: " + "; ".join(t.get("validity", {}).get("reasons", []) or ["?"]),
        }
        for t in invalid
    ]
    excluded += [
        {"trial_id": tid, "reason": "outlier explained by outside interference"}
        for tid in sorted(x for x in dropped if x is not None)
    ]
    excluded += [
        {
            "trial_id": t.get("trial_id"),
            "reason": f"excluded by hand: {t.get('excluded_by_hand')}",
            "by_hand": True,
        }
        for t in by_hand
    ]
    growth, qmax = _rep_of(used, "queues", "growth_per_s"), _rep_of(used, "queues", "max")
    queues = {k: {"growth_per_s": g, "max": qmax[k]} for k, g in growth.items()}
    return {
        "throughput": _rep_of(used, "throughput", "steady"),
        "throughput_edgi": _rep_of(used, "throughput", "average"),
        "expected_ratio": _rep_of(used, "throughput", "expected_ratio"),
        "edgi_ratio": _rep_of(used, "throughput", "edgi_ratio"),
        "latency": _rep_of(used, "latency", "mean"),
        "failures": _rep_of(used, "failures", None),
        "queues": queues,
        "valid_trials": len(valid),
        "invalid_trials": len(invalid),
        "used_trials": len(used),
        "excluded_by_hand": len(by_hand),
        "outliers": outliers,
        "excluded": excluded,
    }
