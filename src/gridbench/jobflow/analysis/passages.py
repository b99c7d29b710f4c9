"""Each stage's sorted passage times, shared by the throughput and queue measures of a
trial, and a stage's flow (:class:`StageFlow`) built from them (pure)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from gridbench.jobflow.analysis.latency import median
from gridbench.jobflow.analysis.throughput import StageFlow, sorted_finite
from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.analysis.workers import pmap
from gridbench.jobflow.events.model import STAGE_INTENDED

F64 = NDArray[np.float64]


class Passages:
    """Sorted passage times per stage, computed once and shared (sorting is the main cost)."""

    def __init__(self, jt: JobTimes) -> None:
        self.jt = jt
        self._cache: dict[str, F64] = {}

    def __call__(self, stage: str) -> F64:
        if stage not in self._cache:
            self._cache[stage] = sorted_finite(self.jt.get(stage))
        return self._cache[stage]

    def fill(self, stages: Iterable[str]) -> None:
        """Sort these stages' passages now, on the worker threads (afterwards threads only
        read the cache)."""
        todo = [s for s in dict.fromkeys(stages) if s not in self._cache]
        for s, a in zip(todo, pmap(lambda s: sorted_finite(self.jt.get(s)), todo), strict=True):
            self._cache[s] = a

    def completed(self, stage: str, failing: NDArray[np.bool_] | None) -> F64:
        """Sorted times of the jobs that passed ``stage`` without being reported failing
        there (``failing``: per job, from :func:`stage_failures`)."""
        if failing is None or not failing.any():
            return self(stage)
        return sorted_finite(np.where(failing, np.nan, self.jt.get(stage)))

    def ends_after(self, start: str, end: str) -> F64:
        """Sorted ``end`` times of the jobs that also reached ``start``."""
        s, e = self.jt.get(start), self.jt.get(end)
        orphan = np.isfinite(e) & ~np.isfinite(s)
        return sorted_finite(np.where(np.isfinite(s), e, np.nan)) if orphan.any() else self(end)


def stage_flow(
    passages: Passages,
    stage: str,
    upstream: str | None,
    lag: F64,
    failing: NDArray[np.bool_] | None,
) -> StageFlow:
    """A stage's completed passages, measured from the first upstream time of any job."""
    up_t = passages(upstream) if upstream is not None else np.empty(0)
    n_failed = int(np.count_nonzero(failing)) if failing is not None else 0
    return StageFlow(
        stage,
        passages.completed(stage, failing),
        upstream,
        float(up_t[0]) if up_t.size else None,
        median(lag),
        n_failed,
    )


def schedule_sorted(passages: Passages, sched: F64, names: list[str]) -> F64:
    """The sorted schedule times: the sorted intended times when no job falls back to its
    first chain stage (the same values, so one sort less), else sorted anew."""
    intended = passages.jt.get(STAGE_INTENDED)
    first = passages.jt.get(names[0]) if names else None
    if first is None or not (np.isfinite(first) & ~np.isfinite(intended)).any():
        return passages(STAGE_INTENDED)
    return sorted_finite(sched)
