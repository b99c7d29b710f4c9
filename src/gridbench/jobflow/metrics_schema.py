"""The structure of a job-flow ``metrics.json`` (``gridbench.metrics/1``), checked.

metrics.json is foreign input: the store may be shared, a run copied in, a crash may
leave it half written. ``validate_metrics`` checks the parts the report and compare code
rely on, before any of it is read, and raises one :class:`ResultsError` naming the file
and the first bad field (``points.0.trials.2.latency.overall.p99: Input should be a
valid number``).

Every model allows extra fields (a later analysis may add some), and most fields may be
absent or ``null`` (undefined values are null, see docs/metrics.md); what is there must
have its type. Numbers are checked by hand rather than by pydantic's lax mode, which
would accept ``"1.5"`` or ``true`` as a number: a number is an int or float (numpy's
too: the report also runs on the analysis' own objects), never a bool or a string.
"""

from __future__ import annotations

from typing import Any

from gridbench.schema import (
    Count,
    Described,
    Flag,
    Num,
    OpenModel,
    Rep,
    Text,
    ThresholdResult,
    validate_document,
)

SCHEMA = "gridbench.metrics/1"


# --- the chain ---------------------------------------------------------------------------


class Stage(OpenModel):
    name: Text = None
    source: Text = None
    label: Text = None
    precision_ns: Count = None
    polled: Flag = None


class Segment(OpenModel):
    name: Text = None
    start: Text = None
    end: Text = None
    component: Flag = None


class Chain(OpenModel):
    stages: list[Stage] = []
    segments: list[Segment] = []


# --- one trial ---------------------------------------------------------------------------


class StageThroughput(OpenModel):
    average: Num = None
    steady: Num = None
    expected_ratio: Num = None
    edgi_ratio: Num = None
    count: Count = None
    failures: Count = None


class Queue(OpenModel):
    final: Num = None
    max: Num = None
    growth_per_s: Num = None


class Warmup(OpenModel):
    method: Text = None
    fraction: Num = None
    trimmed_jobs: Count = None
    note: Text = None


class NegativeSegment(OpenModel):
    """Jobs whose segment went negative after clock correction (docs/metrics.md)."""

    beyond_uncertainty: Count = None
    within_uncertainty: Count = None


class ClockBound(OpenModel):
    """A segment measured across clocks: its bound against its median latency."""

    segment: Text = None
    agent: Text = None
    bound_s: Num = None
    latency_s: Num = None
    flagged: Flag = None


class TrialValidity(OpenModel):
    valid: Flag = None
    reasons: list[Text] = []
    warnings: list[Text] = []
    late_share: Num = None
    dropped_share: Num = None
    client_bound: Flag = None
    client_cpu_max: Num = None
    client_cpu_mean: Num = None
    negative_segments: dict[str, NegativeSegment] = {}
    clock_bounds: list[ClockBound] = []


class AgentClock(OpenModel):
    """One agent's clock in a trial's ``clocks`` (offsets may be negative: Num)."""

    offset_ns: Num = None
    bound_ns: Num = None
    drift_ppm: Num = None
    start_skew_ns: Num = None
    host: Text = None
    sync: Text = None


class Clocks(OpenModel):
    controller_sync: Text = None
    agents: dict[str, AgentClock] = {}


class AgentLoad(OpenModel):
    """One remote agent's load in a trial's ``by_agent``."""

    host: Text = None
    submitted: Count = None
    rate_per_s: Num = None
    late: Count = None
    dropped: Count = None
    cpu_s: Num = None
    submit_p50_ms: Num = None
    submit_p95_ms: Num = None
    lost: Text = None


class ServerProcess(OpenModel):
    """One label of a trial's ``server_resources`` (docs/metrics.md)."""

    samples: Count = None
    processes: Count = None
    pids: list[Count] = []
    gone: list[Count] = []
    cpu_mean_pct: Num = None
    cpu_max_pct: Num = None
    cpu_s: Num = None
    rss_mean_bytes: Num = None
    rss_max_bytes: Num = None
    jobs_submitted: Count = None
    cpu_s_per_job: Num = None
    client_cpu_s: Num = None
    client_cpu_s_per_job: Num = None
    operations: Count = None
    cpu_s_per_op: Num = None
    client_cpu_s_per_op: Num = None


class PerSecond(OpenModel):
    bins: Count = None
    mean: Num = None
    p50: Num = None
    p90: Num = None
    p99: Num = None


class Rates(OpenModel):
    side: Text = None
    submit_stage: Text = None
    start_stage: Text = None
    end_stage: Text = None
    completed: Count = None
    end_to_end_per_s: Num = None
    submit_per_s: Num = None
    dispatch_per_s: Num = None
    per_second: PerSecond | None = None


#: The latencies every trial has beside its chain's segments (analysis/latency.py).
DERIVED = ("overall", "other", "running_time", "submit_lag", "submit_call")


class Trial(OpenModel):
    trial_id: Text = None
    trial_index: Count = None
    started_ns: Count = None
    valid: Flag = None
    status: Text = None
    offered_rate_per_s: Num = None
    jobs: dict[str, Count] = {}
    latency: dict[str, Described] = {}  # docs/metrics.md, "Latency"
    throughput: dict[str, StageThroughput] = {}
    rates: Rates | None = None
    failures: dict[str, Count] = {}
    failure_rate: Num = None
    queues: dict[str, Queue] = {}
    warmup: Warmup | None = None
    window_s: Num = None
    validity: TrialValidity | None = None
    bottleneck: Text = None
    background_queue: dict[str, Num] = {}
    model: dict[str, Any] | None = None
    server_resources: dict[str, ServerProcess] = {}
    clocks: Clocks | None = None
    by_agent: dict[str, AgentLoad] = {}


# --- one point ---------------------------------------------------------------------------


class RepQueue(OpenModel):
    growth_per_s: Rep | None = None
    max: Rep | None = None


class Outlier(OpenModel):
    trial_id: Text = None
    metric: Text = None
    value: Num = None
    reason: Text = None
    kept: Flag = None


class Excluded(OpenModel):
    trial_id: Text = None
    reason: Text = None


class Summary(OpenModel):
    throughput: dict[str, Rep] = {}
    throughput_edgi: dict[str, Rep] = {}
    expected_ratio: dict[str, Rep] = {}
    edgi_ratio: dict[str, Rep] = {}
    latency: dict[str, Rep] = {}
    failures: dict[str, Rep] = {}
    queues: dict[str, RepQueue] = {}
    valid_trials: Count = None
    invalid_trials: Count = None
    used_trials: Count = None
    outliers: list[Outlier] = []
    excluded: list[Excluded] = []
    bottleneck_corroborated: Flag = None
    model: dict[str, Any] | None = None


class Point(OpenModel):
    index: Count = None
    point: dict[str, Any] = {}
    offered_rate_per_s: Num = None
    trials: list[Trial] = []
    summary: Summary | None = None
    bottleneck: Text = None
    bottleneck_evidence: Text = None


# --- the experiment ----------------------------------------------------------------------


class Knee(OpenModel):
    capacity_per_s: Num = None
    capacity_ci95: list[Num] | None = None
    first_failing_rate_per_s: Num = None
    highest_sustained_rate_per_s: Num = None
    limited_by: Text = None
    statement: Text = None


class Bottleneck(OpenModel):
    stage: Text = None
    segment: Text = None
    from_rate_per_s: Num = None
    evidence: Text = None
    statement: Text = None


class FailuresAtRate(OpenModel):
    index: Count = None
    offered_rate_per_s: Num = None
    failed_share: Rep | None = None
    by_kind: dict[str, Rep] = {}


class Validity(OpenModel):
    valid: Flag = None
    invalid_trials: list[Text] = []
    reasons: list[Text] = []


class JobflowMetrics(OpenModel):
    """The top level of ``gridbench.metrics/1``."""

    experiment: Text = None
    load_model: Text = None
    chain: Chain | None = None
    analysis: dict[str, Any] | None = None
    points: list[Point]
    knee: Knee | None = None
    bottleneck: Bottleneck | None = None
    failures_vs_rate: list[FailuresAtRate] = []
    growth: list[dict[str, Any]] = []
    time_of_day: dict[str, Any] | None = None
    validity: Validity | None = None
    thresholds: list[ThresholdResult] = []


def validate_metrics(data: Any, where: str = "metrics.json") -> dict[str, Any]:
    """``data`` if it is a ``gridbench.metrics/1`` document of the expected structure, else
    ResultsError naming ``where`` and the first bad field path."""
    return validate_document(data, JobflowMetrics, SCHEMA, where)
