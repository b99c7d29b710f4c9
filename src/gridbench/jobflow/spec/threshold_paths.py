"""Job flow's threshold paths checked before anything runs (``validate``, ``plan``,
``run``): against the metrics schema (:mod:`gridbench.jobflow.metrics_schema`) and the
backend's stage chain, so that ``latency.overal.p99`` is refused with "did you mean
'latency.overall.p99'?" instead of failing after the whole run as "not measured"."""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel

from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.metrics_schema import (
    DERIVED,
    Bottleneck,
    JobflowMetrics,
    Knee,
    Summary,
    Trial,
)
from gridbench.schema import path_problem

#: Paths read from another document than a trial (analysis/thresholds.py's scopes).
SCOPES: dict[str, type[BaseModel]] = {
    "summary": Summary,
    "experiment": JobflowMetrics,
    "knee": Knee,
    "bottleneck": Bottleneck,
}
#: Mappings keyed by stage, and by segment, in a trial and in a point's summary.
BY_STAGE = {"throughput", "throughput_edgi", "expected_ratio", "edgi_ratio"}
BY_SEGMENT = {"latency", "queues"}


def threshold_problem(metric: str, chain: StageChain) -> tuple[str, str | None] | None:
    """Why ``metric`` names no figure of a job-flow run on ``chain``: (what is wrong, the
    path it probably meant or None); None when it may."""
    if metric.startswith("failures."):
        return None  # any failure kind: 0 when it did not occur
    scope, _, rest = metric.partition(".")
    model = SCOPES.get(scope)
    stages = {s.name for s in chain.stages} | {"overall"}
    segments = {s.name for s in chain.all_segments()} | set(DERIVED)

    def known(prefix: tuple[str, ...]) -> Collection[str] | None:
        if len(prefix) != 1:
            return None
        return stages if prefix[0] in BY_STAGE else segments if prefix[0] in BY_SEGMENT else None

    problem = path_problem(model or Trial, rest if model else metric, known)
    if problem is None or model is None:
        return problem
    message, instead = problem
    return f"{scope}: {message}", f"{scope}.{instead}" if instead else None
