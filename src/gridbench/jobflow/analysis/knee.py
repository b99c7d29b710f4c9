"""The knee of a rate sweep: the highest rate the system sustains, and its capacity.

- A point is *sustained* when every valid trial keeps every stage's ratio (steady /
  offered) >= 1 - tol; points without a valid, judged trial are skipped.
- ``first_failing_rate_per_s`` is the lowest rate that is not sustained;
  ``highest_sustained_rate_per_s`` the highest sustained rate below it (the highest rate
  tried when none fails).
- Capacity C: least-squares fit of achieved = min(offered, C) over all valid trials
  (achieved = the last chain stage's steady throughput), solved exactly interval by
  interval between the offered rates. Its 95% interval is the 2.5-97.5 percentile range of
  C over bootstrap resamples of the trials (seeded, default 1000), stratified by rate: each
  resample redraws the trials of every rate from that rate's own trials, so it keeps the
  design of the sweep (it needs a rate with at least 2 trials). When no point fails the
  capacity is not identified (it is only known to be above the highest rate tried), and
  capacity and interval are ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow import text

F64 = NDArray[np.float64]
DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True, slots=True)
class PointVerdict:
    """One sweep point as the knee sees it."""

    rate: float
    sustained: bool | None  # None: no valid trial could be judged
    bottleneck: str | None


def fit_capacity(x: F64, y: F64) -> float | None:
    """C minimising sum (y - min(x, C))^2 (smallest such C when the fit is flat above)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size == 0:
        return None
    u = np.unique(x)
    best_c, best_sse = float(u[-1]), float(np.sum((y - x) ** 2))  # C >= max x: no saturation
    bounds = [-np.inf, *u.tolist()]
    for j in range(len(u)):
        lo, hi = bounds[j], float(u[j])
        sat = x >= hi  # saturated when C <= hi
        c = float(np.clip(y[sat].mean(), lo, hi))
        sse = float(np.sum((y[~sat] - x[~sat]) ** 2) + np.sum((y[sat] - c) ** 2))
        if sse < best_sse - 1e-12 * max(1.0, best_sse):
            best_c, best_sse = c, sse
    return best_c


def bootstrap_capacity(
    x: F64, y: F64, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile interval of the capacity over rate-stratified bootstrap resamples."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    groups = [np.flatnonzero(x == v) for v in np.unique(x)]
    if resamples < 1 or not any(g.size >= 2 for g in groups):
        return None
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [g[rng.integers(0, g.size, size=(resamples, g.size))] for g in groups], axis=1
    )
    cs = [fit_capacity(x[i], y[i]) for i in idx]
    vals = np.array([c for c in cs if c is not None], dtype=np.float64)
    if vals.size == 0:
        return None
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return float(lo), float(hi)


def knee(
    verdicts: Sequence[PointVerdict],
    offered: F64,
    achieved: F64,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The metrics.json ``knee`` object from per-point verdicts and per-trial (offered,
    achieved) pairs of the valid trials."""
    judged = sorted((v for v in verdicts if v.sustained is not None), key=lambda v: v.rate)
    out: dict[str, Any] = {
        "highest_sustained_rate_per_s": None,
        "first_failing_rate_per_s": None,
        "capacity_per_s": None,
        "capacity_ci95": None,
        "limited_by": None,
        "statement": "",
    }
    if not judged:
        out["statement"] = (
            "No valid trial with an offered rate and measured stage ratios: no knee can be stated."
        )
        return out
    failing = next((v for v in judged if not v.sustained), None)
    below = [v for v in judged if v.sustained and (failing is None or v.rate < failing.rate)]
    if below:
        out["highest_sustained_rate_per_s"] = below[-1].rate
    if failing is None:
        top = judged[-1].rate
        out["statement"] = (
            f"Sustains every rate tried, up to {text.rate(top)}: no knee within the sweep "
            f"(capacity is above {text.num(top)}/s)."
        )
        return out
    out["first_failing_rate_per_s"] = failing.rate
    out["limited_by"] = failing.bottleneck
    c = fit_capacity(offered, achieved)
    ci = bootstrap_capacity(offered, achieved, resamples, seed)
    out["capacity_per_s"] = c
    out["capacity_ci95"] = list(ci) if ci is not None else None
    where = f" in {failing.bottleneck}" if failing.bottleneck else ""
    cap = ""
    if c is not None:
        cap = f"; capacity ≈ {text.num(c)}/s"
        if ci is not None:
            cap += f" (95% CI {text.num(ci[0])}–{text.num(ci[1])}/s)"
    if below:
        head = f"Sustains up to {text.rate(below[-1].rate)}; breaks at {text.rate(failing.rate)}"
    else:
        head = f"Breaks already at the lowest rate tried, {text.rate(failing.rate)}"
    out["statement"] = f"{head}{where}{cap}."
    return out
