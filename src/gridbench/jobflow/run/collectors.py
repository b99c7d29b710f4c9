"""Builds the collectors a spec asks for."""

from __future__ import annotations

from gridbench.errors import IngestError, SpecError
from gridbench.jobflow.backends.base import Backend
from gridbench.jobflow.run.collect import Collector
from gridbench.jobflow.specbase.model import ExperimentBase


def build_collectors(spec: ExperimentBase, backend: Backend) -> list[Collector]:
    """The spec's collectors; a SpecError naming ``collectors.<i>.reports`` for report
    locations that cannot be read (the parser speaks of ``ingest``'s ``--reports``)."""
    out: list[Collector] = []
    for i, c in enumerate(spec.collectors):
        if c.type == "edgi":
            from gridbench.jobflow.run.edgi_collector import EdgiCollector

            try:
                out.append(EdgiCollector.from_spec(c, backend))
            except IngestError as exc:
                field = f"collectors.{i}.reports"
                detail = f" ({exc.where})" if exc.where and exc.where != "--reports" else ""
                fix = exc.fix if exc.fix and "--reports" not in exc.fix else None
                raise SpecError(
                    f"{exc.message}{detail}",
                    where=field,
                    fix=fix
                    or "list each component's reports once, nearest first: a directory or "
                    "http(s) URL, or TIER=LOCATION (e.g. [ce=URL, bridge=URL]); docs/spec.md",
                ) from None
    return out
