"""``/metrics``: the live trials of this server in the OpenMetrics text format."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from gridbench.web.live import LiveRun

_COUNTERS = (
    ("submitted", "jobs whose submission started"),
    ("acknowledged", "jobs the backend acknowledged"),
    ("completed", "jobs seen to end"),
    ("failed", "jobs that failed (submit or run)"),
    ("dropped", "jobs dropped for being later than max_lateness"),
    ("late", "jobs submitted later than late_threshold"),
)
LABELS = ["experiment", "name", "trial"]


class LiveCollector(Collector):
    """Reads the current LiveRuns at every scrape (no state of its own)."""

    def __init__(self, runs: Callable[[], list[LiveRun]]) -> None:
        self._runs = runs

    def collect(self) -> Iterable[Metric]:
        runs = self._runs()
        counters = {
            k: CounterMetricFamily(f"gridbench_trial_jobs_{k}", doc, labels=LABELS)
            for k, doc in _COUNTERS
        }
        in_flight = GaugeMetricFamily(
            "gridbench_trial_jobs_in_flight", "jobs acknowledged and not yet ended", labels=LABELS
        )
        planned = GaugeMetricFamily(
            "gridbench_trial_jobs_planned", "jobs the trial plans to submit", labels=LABELS
        )
        offered = GaugeMetricFamily(
            "gridbench_offered_rate", "offered submissions per second (last sample)",
            labels=LABELS[:2], unit="per_second",
        )  # fmt: skip
        achieved = GaugeMetricFamily(
            "gridbench_achieved_rate", "acknowledged submissions per second (last sample)",
            labels=LABELS[:2], unit="per_second",
        )  # fmt: skip
        submit = GaugeMetricFamily(
            "gridbench_submit_latency", "mean submit-call time (last sample)",
            labels=LABELS[:2], unit="seconds",
        )  # fmt: skip
        state = GaugeMetricFamily(
            "gridbench_experiment_running",
            "1 while the experiment runs",
            labels=[*LABELS[:2], "status"],
        )
        for r in runs:
            state.add_metric([r.run_id, r.name, r.status], 0.0 if r.final else 1.0)
            for t in r.rows("trials"):
                if t["status"] == "pending":
                    continue
                lab = [r.run_id, r.name, str(t["trial_id"])]
                for k, fam in counters.items():
                    fam.add_metric(lab, float(t.get(k) or 0))
                in_flight.add_metric(lab, float(t.get("in_flight") or 0))
                if t.get("planned") is not None:
                    planned.add_metric(lab, float(t["planned"]))
            samples = r.rows("samples")
            if samples and not r.final:
                s = samples[-1]
                offered.add_metric([r.run_id, r.name], float(s["offered_per_s"]))
                achieved.add_metric([r.run_id, r.name], float(s["achieved_per_s"]))
                if s["submit_mean_s"] is not None:
                    submit.add_metric([r.run_id, r.name], float(s["submit_mean_s"]))
        yield state
        yield from counters.values()
        yield from (in_flight, planned, offered, achieved, submit)


def make_registry(runs: Callable[[], list[LiveRun]]) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(LiveCollector(runs))
    return reg


def exposition(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The body and content type of one scrape."""
    body: bytes = generate_latest(registry)  # type: ignore[no-untyped-call]
    return body, CONTENT_TYPE_LATEST
