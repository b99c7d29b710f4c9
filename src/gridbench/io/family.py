"""Storage as a benchmark family: iozone/Bonnie matrices on fio and bonnie++, signed
speedups against a baseline, consistency checks, analysed into ``gridbench.io/1``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from gridbench.family import (
    CatalogueEntry,
    Ui,
    ValidityRule,
    status_exit_code,
    status_verdict,
)
from gridbench.io.metrics import SCHEMA
from gridbench.sections import Report
from gridbench.store.layout import RunDir
from gridbench.testplan import report_inputs


class Storage:
    """The io family (the ``kind`` of runs made by ``gridbench io run``)."""

    name = "io"
    title = "storage: iozone and Bonnie matrices, speedups against a baseline"
    schema = SCHEMA

    @property
    def validity_rules(self) -> tuple[ValidityRule, ...]:
        """io's rules (io/validity.py)."""
        from gridbench.io.validity import IO_VALIDITY_RULES

        return IO_VALIDITY_RULES

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """``gridbench io validate|run|report``."""
        from gridbench.io.command import add_commands

        add_commands(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Read the recorded rows (untrusted), analyse them, write metrics.json."""
        from gridbench.io.metrics import analyze_and_write

        return analyze_and_write(run)

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Headline, evaluation summary and every io section."""
        from gridbench.io.metrics_schema import validate_metrics
        from gridbench.io.report import build_report

        validate_metrics(metrics, str(run.metrics_file))

        return build_report(metrics, **report_inputs(run))

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """3 when the run failed, 130 when aborted, 1 when a threshold or check failed."""
        ok = metrics.get("thresholds_ok") is True and metrics.get("consistency_ok") is True
        return status_exit_code(metrics, passed=ok)

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """pass or fail by thresholds and consistency checks; marked when a figure is not
        to be trusted (io validity rules)."""
        return status_verdict(metrics, self.exit_code(metrics), flagged="flagged figures")

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        """The targets, and the baseline they are compared with."""
        targets = experiment.get("targets")
        names = (
            [str(t.get("name")) for t in targets if isinstance(t, Mapping)]
            if isinstance(targets, list)
            else []
        )
        baseline = experiment.get("baseline")
        return CatalogueEntry(
            target=", ".join(names) or "storage",
            variant=f"storage vs {baseline}" if baseline else "storage",
        )


FAMILY = Storage()
