"""Job flow's figures on the dashboard's ``/metrics``
(:class:`~gridbench.family.dashboard.LiveMetered`): each live trial's job counters and the
latest chart sample's rates, read from the live view
(:class:`~gridbench.jobflow.web.live.JobFlowLive`) at each scrape. The names are the ones
Prometheus and Grafana have scraped since the dashboard first had ``/metrics``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gridbench.family.dashboard import LiveMetric, MetricSample

#: each trial's counters (``gridbench_trial_jobs_<key>``), as the live view's trial rows
#: hold them
COUNTERS = (
    ("submitted", "jobs whose submission started"),
    ("acknowledged", "jobs the backend acknowledged"),
    ("completed", "jobs seen to end"),
    ("failed", "jobs that failed (submit or run)"),
    ("dropped", "jobs dropped for being later than max_lateness"),
    ("late", "jobs submitted later than late_threshold"),
)
TRIAL = ("trial",)

LIVE_METRICS: tuple[LiveMetric, ...] = (
    *(
        LiveMetric(f"gridbench_trial_jobs_{k}", doc, counter=True, labels=TRIAL)
        for k, doc in COUNTERS
    ),
    LiveMetric(
        "gridbench_trial_jobs_in_flight", "jobs acknowledged and not yet ended", labels=TRIAL
    ),
    LiveMetric("gridbench_trial_jobs_planned", "jobs the trial plans to submit", labels=TRIAL),
    LiveMetric(
        "gridbench_offered_rate", "offered submissions per second (last sample)", unit="per_second"
    ),
    LiveMetric(
        "gridbench_achieved_rate",
        "acknowledged submissions per second (last sample)",
        unit="per_second",
    ),
    LiveMetric("gridbench_submit_latency", "mean submit-call time (last sample)", unit="seconds"),
)


def live_samples(
    trials: Iterable[Mapping[str, Any]], latest: Mapping[str, Any] | None, *, final: bool
) -> list[MetricSample]:
    """The samples of :data:`LIVE_METRICS`: per trial started, its counters; while the
    run goes on, the rates of the ``latest`` chart sample."""
    out: list[MetricSample] = []
    for t in trials:
        if t["status"] == "pending":
            continue
        lab = (str(t["trial_id"]),)
        for k, _ in COUNTERS:
            out.append(MetricSample(f"gridbench_trial_jobs_{k}", float(t.get(k) or 0), lab))
        out.append(
            MetricSample("gridbench_trial_jobs_in_flight", float(t.get("in_flight") or 0), lab)
        )
        if t.get("planned") is not None:
            out.append(MetricSample("gridbench_trial_jobs_planned", float(t["planned"]), lab))
    if latest is not None and not final:
        s = latest
        out.append(MetricSample("gridbench_offered_rate", float(s["offered_per_s"])))
        out.append(MetricSample("gridbench_achieved_rate", float(s["achieved_per_s"])))
        if s["submit_mean_s"] is not None:
            out.append(MetricSample("gridbench_submit_latency", float(s["submit_mean_s"])))
    return out
