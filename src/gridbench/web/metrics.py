"""``/metrics``: the live runs of this server in the OpenMetrics text format, with the
figures their families declare (job flow: each trial's job counters and the rates)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from gridbench.errors import GridbenchError
from gridbench.family import available, family
from gridbench.family.dashboard import LiveMetered, LiveMetric, MetricSource
from gridbench.web.live import LiveRun

#: every sample's first labels: the run's id and name
RUN_LABELS = ["experiment", "name"]


def declared() -> list[LiveMetric]:
    """The live metric families of every installed family that has some
    (:class:`~gridbench.family.dashboard.LiveMetered`); a family that cannot be loaded declares
    none."""
    found: list[LiveMetric] = []
    for name in available():
        try:
            fam = family(name)
        except GridbenchError:
            continue
        if isinstance(fam, LiveMetered):
            found.extend(fam.live_metrics)
    return found


def _metric_family(m: LiveMetric) -> CounterMetricFamily | GaugeMetricFamily:
    labels = [*RUN_LABELS, *m.labels]
    if m.counter:
        return CounterMetricFamily(m.name, m.doc, labels=labels, unit=m.unit)
    return GaugeMetricFamily(m.name, m.doc, labels=labels, unit=m.unit)


class LiveCollector(Collector):
    """Reads the current LiveRuns at every scrape (no state of its own): whether each
    runs, and the figures each family's runner samples (:class:`MetricSource`) in the
    metric families its family declares (:class:`LiveMetered`). It names no family's
    figures."""

    def __init__(self, runs: Callable[[], list[LiveRun]]) -> None:
        self._runs = runs

    def collect(self) -> Iterable[Metric]:
        runs = self._runs()
        state = GaugeMetricFamily(
            "gridbench_experiment_running",
            "1 while the experiment runs",
            labels=[*RUN_LABELS, "status"],
        )
        metrics = {m.name: _metric_family(m) for m in declared()}
        for r in runs:
            state.add_metric([r.run_id, r.name, r.status], 0.0 if r.final else 1.0)
            if not isinstance(r.runner, MetricSource):
                continue
            for s in r.runner.metric_samples(final=r.final):
                fam = metrics.get(s.metric)
                if fam is not None:  # a figure its family did not declare is not shown
                    fam.add_metric([r.run_id, r.name, *s.labels], s.value)
        yield state
        yield from metrics.values()


def make_registry(runs: Callable[[], list[LiveRun]]) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(LiveCollector(runs))
    return reg


def exposition(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The body and content type of one scrape."""
    body: bytes = generate_latest(registry)  # type: ignore[no-untyped-call]
    return body, CONTENT_TYPE_LATEST
