"""The dashboard's list columns, search and ``/metrics`` come from the families
(``CatalogueEntry.columns``/``search``, ``LiveMetered``, ``MetricSource``): job flow's
show as before, another family's runs get none of job flow's."""

from __future__ import annotations

from typing import Any

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from gridbench.family.dashboard import MetricSample
from gridbench.web.metrics import exposition, make_registry
from gridbench.web.routes.experiments import matches
from gridbench.web.runs import catalogued, list_columns

JOBFLOW = {"id": "a", "name": "ramp", "backend": "slurm", "load_model": "open",
           "status": "complete", "trials_planned": 4, "trials_done": None}  # fmt: skip
IO = {"id": "b", "name": "disk", "kind": "io", "status": "complete", "backend": "slurm"}
ELSEWHERE = {"id": "c", "name": "x", "kind": "not-installed-here", "status": "complete"}


def test_job_flow_runs_keep_their_trials_column_and_search() -> None:
    jf = catalogued(dict(JOBFLOW))
    assert jf["family_columns"]["trials"].text == "?/4" and jf["family_columns"]["trials"].numeric
    assert catalogued({"id": "d", "name": "old"})["family_columns"]["trials"].text == "–"
    assert matches(jf, "slurm open") and not matches(jf, "slurm closed")


def test_other_families_show_no_job_flow_column_nor_search_its_fields() -> None:
    io, other = catalogued(dict(IO)), catalogued(dict(ELSEWHERE))
    assert io["family_columns"] == {} and other["family_columns"] == {}
    assert list_columns([io, other]) == []
    assert not matches(io, "slurm")  # job flow's backend field, not io's
    mixed = list_columns([io, catalogued(dict(JOBFLOW)), other])
    assert [c.heading for c in mixed] == ["trials"]


class _Runner:
    def __init__(self, samples: list[MetricSample] | None) -> None:
        self._samples = samples

    def metric_samples(self, *, final: bool) -> list[MetricSample]:
        return list(self._samples or [])


class _Live:
    def __init__(self, rid: str, runner: Any, final: bool = False) -> None:
        self.run_id, self.name, self.status, self.final, self.runner = (
            rid,
            rid,
            "running",
            final,
            runner,
        )


def test_metrics_are_the_families_own() -> None:
    from gridbench.jobflow.web.live_metrics import live_samples

    trials = [
        {"trial_id": "p00-t00", "status": "complete", "submitted": 3, "planned": 3},
        {"trial_id": "p00-t01", "status": "pending", "submitted": 0, "planned": 3},
    ]
    latest = {"offered_per_s": 2.0, "achieved_per_s": 1.5, "submit_mean_s": None}
    jobflow = _Runner(live_samples(trials, latest, final=False))
    stray = _Runner([MetricSample("gridbench_not_declared", 1.0)])

    class Plain:  # a runner that samples nothing (not a MetricSource)
        pass

    runs = [_Live("jf", jobflow), _Live("other", stray), _Live("plain", Plain())]
    body, _ = exposition(make_registry(lambda: runs))  # type: ignore[arg-type, return-value]
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    names = list(fams)
    assert names[:10] == [
        "gridbench_experiment_running",
        *(f"gridbench_trial_jobs_{k}" for k in ("submitted", "acknowledged", "completed",
          "failed", "dropped", "late", "in_flight", "planned")),
        "gridbench_offered_rate_per_second",
    ]  # fmt: skip
    assert "gridbench_not_declared" not in names
    sub = fams["gridbench_trial_jobs_submitted"]
    assert sub.type == "counter"
    assert [(s.labels, s.value) for s in sub.samples] == [
        ({"experiment": "jf", "name": "jf", "trial": "p00-t00"}, 3.0)
    ]
    assert [s.value for s in fams["gridbench_offered_rate_per_second"].samples] == [2.0]
    assert not fams["gridbench_submit_latency_seconds"].samples
    running = fams["gridbench_experiment_running"].samples
    assert {s.labels["experiment"] for s in running} == {"jf", "other", "plain"}
