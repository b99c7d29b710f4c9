"""Builds the collectors a spec asks for."""

from __future__ import annotations

from gridbench.jobflow.backends.base import Backend
from gridbench.jobflow.run.collect import Collector
from gridbench.jobflow.specbase.model import ExperimentBase


def build_collectors(spec: ExperimentBase, backend: Backend) -> list[Collector]:
    out: list[Collector] = []
    for c in spec.collectors:
        if c.type == "edgi":
            from gridbench.jobflow.run.edgi_collector import EdgiCollector

            out.append(EdgiCollector.from_spec(c, backend))
    return out
