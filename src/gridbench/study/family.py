"""Usability studies as a benchmark family: SUS, timed tasks, Likert items and the
observer's verdicts, from the browser or from a survey export, compared with paired
tests; analysed into ``gridbench.study/1``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gridbench.family import CatalogueEntry
from gridbench.family.module_family import ComparableFamily, lazy
from gridbench.family.verdicts import status_exit_code, status_verdict

if TYPE_CHECKING:  # light at import: the command line loads every family (--help)
    from gridbench.family.dashboard import Pages, WebContext

SCHEMA = "gridbench.study/1"


class Study(ComparableFamily):
    """The study family (the ``kind`` of runs made by ``gridbench study serve|import``)."""

    name = "study"
    spec_marks = frozenset(
        {"purpose", "tools", "participants", "questionnaires", "comparisons", "install_survey"}
    )
    spec_noun = "a usability-study spec"
    title = "usability studies: SUS, timed tasks, Likert ratings, paired comparisons"
    schema = SCHEMA
    rules_at = "gridbench.study.validity:STUDY_VALIDITY_RULES"
    commands_at = "gridbench.study.cli:COMMANDS"  # study validate|plan|import|serve|report
    analysis_at = "gridbench.study.analysis:analyze_and_write"
    check_at = "gridbench.study.metrics_schema:validate_metrics"
    report_at = "gridbench.study.report:build_report"
    figures_at = "gridbench.study.analysis:figures"  # per-tool SUS scores and task times

    def web_pages(self, web: WebContext) -> Pages:
        """The participant, admin and observer pages
        (:class:`~gridbench.family.dashboard.WebPages`), imported only when a dashboard is made."""
        pages: Pages = lazy("gridbench.study.web_pages:pages")(web)
        return pages

    def run_pages(self, run_id: str) -> tuple[tuple[str, str], ...]:
        """The admin and observer pages of a study run
        (:class:`~gridbench.family.dashboard.RunPages`): a study being delivered is "running"
        without a runner, its pages serve it."""
        rid = quote(run_id, safe="")
        return (
            ("Study admin page", f"/studies/{rid}"),
            ("Observer page", f"/studies/{rid}/observer"),
        )

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


FAMILY = Study()
