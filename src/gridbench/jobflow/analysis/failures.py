"""Job counts and failures: per trial by kind, and against the offered rate (seed Figure 25).

Counts per trial (``jobs``): ``planned`` (trial.json, else the jobs seen), ``submitted``
(reached the submit stage and were not rejected, timed out, errored or dropped at
submission), ``completed`` (reached the end stage without a failure), ``failed`` (any
failure, dropped ones included), ``dropped`` and ``late``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.jobflow.analysis.timelines import JobTimes
from gridbench.jobflow.events.model import (
    FAIL_DROPPED,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    SUBMIT_FAILURES,
)
from gridbench.paths import number
from gridbench.stats import rep


def failure_counts(jt: JobTimes) -> dict[str, int]:
    """Jobs per failure kind (each job counted once, by its first failure)."""
    if not jt.kinds:
        return {}
    counts = np.bincount(jt.failed_kind[jt.failed_kind >= 0], minlength=len(jt.kinds))
    return {k: int(c) for k, c in zip(jt.kinds, counts, strict=True) if c}


def job_counts(jt: JobTimes, planned: int | None, end_stage: str, late: int) -> dict[str, int]:
    """The trial's ``jobs`` object."""
    failed = jt.failed
    not_submitted = np.zeros(jt.n_jobs, dtype=bool)
    for k in SUBMIT_FAILURES:
        not_submitted |= jt.kind_mask(k)
    seen = int(
        np.count_nonzero(
            np.isfinite(jt.get(STAGE_INTENDED)) | np.isfinite(jt.get(STAGE_SUBMIT)) | failed
        )
    )
    return {
        "planned": planned if planned is not None else seen,
        "submitted": int(np.count_nonzero(np.isfinite(jt.get(STAGE_SUBMIT)) & ~not_submitted)),
        "completed": int(np.count_nonzero(np.isfinite(jt.get(end_stage)) & ~failed)),
        "failed": int(np.count_nonzero(failed)),
        "dropped": int(np.count_nonzero(jt.kind_mask(FAIL_DROPPED))),
        "late": late,
    }


def failures_vs_rate(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per point, over its valid trials: failed share of planned jobs and counts by kind."""
    out = []
    for p in points:
        trials = [t for t in p.get("trials", []) if t.get("valid")]
        shares: list[float | None] = []
        for t in trials:
            jobs = t.get("jobs", {})
            planned = jobs.get("planned") or 0
            shares.append(jobs.get("failed", 0) / planned if planned else None)
        kinds = sorted({k for t in trials for k in t.get("failures", {})})
        out.append(
            {
                "index": p.get("index"),
                "offered_rate_per_s": p.get("offered_rate_per_s"),
                "failed_share": rep(shares),
                "by_kind": {
                    k: rep([number(t.get("failures", {}).get(k, 0)) for t in trials]) for k in kinds
                },
            }
        )
    return out
