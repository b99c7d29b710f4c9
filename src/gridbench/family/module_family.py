"""A family whose members are functions in its own modules, named as data
(``"module:attribute"``) and imported when first called: :class:`ModuleFamily`, with
:class:`ComparableFamily` (its figures too) and :class:`StartsFromSpecAt` (the
dashboard's /start). A built-in family is a subclass that sets the names and keeps only
what is its own (exit code, verdict, catalogue), so the command line, which loads every
family for ``--help``, imports none of a family's code.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.family import CommandSet, Executes, Figure, Ui
from gridbench.sections import Report, ValidityRule

if TYPE_CHECKING:
    from gridbench.store.layout import RunDir


def lazy(target: str) -> Any:
    """The object at ``"module:attribute"``, imported on first use: a family's parts stay
    unimported until a command or a run of that family needs them."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class ModuleFamily:
    """A family whose members are functions in its own modules, named as data
    (``"module:attribute"``) and imported when first called. A built-in family is a
    subclass that sets the names and keeps only what is its own (exit code, verdict,
    catalogue)::

        class Storage(ModuleFamily):
            name, title, schema = "io", "storage: ...", "gridbench.io/1"
            rules_at = "gridbench.io.validity:IO_VALIDITY_RULES"
            commands_at = "gridbench.io.cli:COMMANDS"  # declared: gridbench.commandline
            analysis_at = "gridbench.io.metrics:analyze_and_write"  # (run) -> metrics
            check_at = "gridbench.io.metrics_schema:validate_metrics"  # (metrics, where)
            report_at = "gridbench.io.report:build_report"  # (metrics, **report_inputs)
    """

    name: str
    title: str
    schema: str
    rules_at: str
    commands_at: str
    analysis_at: str
    check_at: str
    report_at: str

    @property
    def validity_rules(self) -> tuple[ValidityRule, ...]:
        """The family's validity rules."""
        rules: tuple[ValidityRule, ...] = lazy(self.rules_at)
        return rules

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """The family's own commands (``gridbench <name> ...``): ``commands_at`` names their
        declaration (a :class:`gridbench.commandline.Commands`, whose code is imported
        only when a command runs) or a function ``(sub, ui)`` that adds them."""
        declared = lazy(self.commands_at)
        if isinstance(declared, CommandSet):
            declared.add_commands(sub, ui)
        else:
            declared(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Read the run's files (untrusted), analyse them, write metrics.json."""
        metrics: dict[str, Any] = lazy(self.analysis_at)(run)
        return metrics

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Check the metrics, then the typed report with the run's "how it was
        configured" (:func:`gridbench.testplan.report_inputs`)."""
        from gridbench.testplan import report_inputs

        lazy(self.check_at)(metrics, str(run.metrics_file))
        report: Report = lazy(self.report_at)(metrics, **report_inputs(run))
        return report


class ComparableFamily(ModuleFamily):
    """A :class:`ModuleFamily` that is :class:`Comparable`: ``figures_at`` names its
    ``figures(metrics) -> list[Figure]``."""

    figures_at: str

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        """The comparable figures (compare, history) of an analysed run."""
        found: list[Figure] = lazy(self.figures_at)(metrics)
        return found


class StartsFromSpecAt:
    """A family's :class:`StartsFromSpec` made of data: ``runner_at`` names its
    ``runner_for_text(text, root)`` (mixed into a :class:`ModuleFamily`)."""

    runner_at: str

    def runner_for(self, text: str, root: Path) -> Executes:
        """A run of the spec ``text`` (:class:`~gridbench.family.StartsFromSpec`: the
        dashboard's /start), validated now, not started."""
        made: Executes = lazy(self.runner_at)(text, root)
        return made
