"""Open-loop arrival schedules (pure): intended submit offsets in ns from the trial start.

Intended times come from the schedule alone, never from when the previous call finished,
so a slow backend cannot slow the offered load down (no coordinated omission).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from gridbench.spec.model import LoadSpec, TrialSpec

NS = 1_000_000_000


def _arrivals(
    rate: float,
    duration: float,
    n: int | None,
    arrival: str,
    rng: np.random.Generator,
    start: float = 0.0,
) -> npt.NDArray[np.float64]:
    if rate <= 0:
        return np.empty(0)
    count = n if n is not None else math.floor(rate * duration + 1e-9)
    if arrival == "poisson":
        if n is not None:
            gaps = rng.exponential(1.0 / rate, size=count)
            return start + (np.cumsum(gaps) - gaps[0] if count else np.empty(0))
        # a Poisson process over the window: the count itself is random (mean rate × T);
        # draw generously, then keep the arrivals that fall inside the window
        draw = int(rate * duration + 6 * math.sqrt(rate * duration) + 16)
        t = np.cumsum(rng.exponential(1.0 / rate, size=draw))
        while t[-1] < duration:  # rare: extend until past the window
            t = np.concatenate([t, t[-1] + np.cumsum(rng.exponential(1.0 / rate, size=draw))])
        return start + t[t < duration]
    return start + np.arange(count, dtype=np.float64) / rate


def _ramp(start_rate: float, end_rate: float, duration: float) -> npt.NDArray[np.float64]:
    """Arrivals of a linear rate ramp: the k-th job comes when the integral of rate reaches k."""
    total = (start_rate + end_rate) / 2 * duration
    k = np.arange(math.floor(total + 1e-9), dtype=np.float64)
    a = (end_rate - start_rate) / duration if duration > 0 else 0.0
    if abs(a) < 1e-12:
        return k / start_rate if start_rate > 0 else np.empty(0)
    # solve start*t + a/2 t^2 = k for t >= 0
    return (-start_rate + np.sqrt(start_rate**2 + 2 * a * k)) / a


def intended_offsets(load: LoadSpec, trial: TrialSpec, seed: int = 1) -> npt.NDArray[np.int64]:
    """Sorted intended submit offsets (ns since trial start) for the open model."""
    rng = np.random.default_rng(seed)
    if load.schedule:
        parts, t = [], 0.0
        for step in load.schedule:
            parts.append(_arrivals(step.rate, step.duration, None, load.arrival, rng, t))
            t += step.duration
        sec = np.concatenate(parts) if parts else np.empty(0)
    elif load.ramp:
        sec = _ramp(load.ramp.start, load.ramp.end, load.ramp.duration)
    else:
        rate = load.rate or 0.0
        duration = trial.duration if trial.duration is not None else math.inf
        n = trial.jobs if trial.duration is None else None
        sec = _arrivals(rate, duration, n, load.arrival, rng)
        if trial.jobs is not None and trial.duration is not None:
            sec = sec[: trial.jobs]
    return np.round(np.sort(sec) * NS).astype(np.int64)


def split_for_agents(offsets: npt.NDArray[np.int64], agents: int) -> list[npt.NDArray[np.int64]]:
    """Interleave a schedule across agents so each keeps an even share of the rate."""
    return [offsets[k::agents] for k in range(agents)]


def offered_rate_per_s(offsets: npt.NDArray[np.int64], window_s: float) -> float:
    return float(len(offsets)) / window_s if window_s > 0 else 0.0
