"""Usability studies as a benchmark family: SUS, timed tasks, Likert items and the
observer's verdicts, from the browser or from a survey export, compared with paired
tests; analysed into ``gridbench.study/1``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from gridbench.family import (
    CatalogueEntry,
    Figure,
    Ui,
    ValidityRule,
    status_exit_code,
    status_verdict,
)
from gridbench.sections import Report
from gridbench.store.layout import RunDir
from gridbench.testplan import report_inputs

SCHEMA = "gridbench.study/1"


class Study:
    """The study family (the ``kind`` of runs made by ``gridbench study serve|import``)."""

    name = "study"
    title = "usability studies: SUS, timed tasks, Likert ratings, paired comparisons"
    schema = SCHEMA

    @property
    def validity_rules(self) -> tuple[ValidityRule, ...]:
        """The study's rules (study/validity.py)."""
        from gridbench.study.validity import STUDY_VALIDITY_RULES

        return STUDY_VALIDITY_RULES

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """``gridbench study validate|plan|serve|import|report``."""
        from gridbench.study.command import add_commands

        add_commands(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Read the log (untrusted), analyse it, write metrics.json."""
        from gridbench.study.analysis import analyze_and_write

        return analyze_and_write(run)

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Headline, Table 1, Table 2, SUS, power, survey and charts."""
        from gridbench.study.metrics_schema import validate_metrics
        from gridbench.study.report import build_report

        validate_metrics(metrics, str(run.metrics_file))
        return build_report(metrics, **report_inputs(run))

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """3 when the run failed, 130 when aborted, else 0: a study has no pass mark."""
        return status_exit_code(metrics, passed=True)

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """ "pass", marked when the cohort is below the power analysis' minimum."""
        power = metrics.get("power")
        short = isinstance(power, Mapping) and power.get("enough") is False
        return status_verdict(
            metrics,
            self.exit_code(metrics),
            flagged="flagged",
            also="cohort too small" if short else "",
        )

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        """The tools, and how the data came in (delivered in the browser, or imported)."""
        tools = experiment.get("tools")
        names = [str(t) for t in tools] if isinstance(tools, list) else []
        mode = experiment.get("delivery")
        return CatalogueEntry(
            target=", ".join(names) or "tools",
            variant=f"study ({mode})" if isinstance(mode, str) else "study",
        )

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        """Comparable figures (compare, history): per-tool SUS scores and task times."""
        from gridbench.study.analysis import figures

        return figures(metrics)


FAMILY = Study()
