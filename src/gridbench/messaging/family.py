"""Messaging as a benchmark family: ping-pong, echo, burst and transfer patterns over real
transports, each figure beside the native floor (sockperf, iperf3) measured in the same
run; analysed into ``gridbench.net/1``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from gridbench.family import (
    CatalogueEntry,
    CleanupOutcome,
    Figure,
    Ui,
    ValidityRule,
    status_exit_code,
    status_verdict,
)
from gridbench.sections import Report
from gridbench.store.layout import RunDir
from gridbench.testplan import report_inputs

SCHEMA = "gridbench.net/1"


class Messaging:
    """The net family (the ``kind`` of runs made by ``gridbench net run``)."""

    name = "net"
    title = "messaging: ping-pong, echo, burst and transfers against the network's floor"
    schema = SCHEMA

    @property
    def validity_rules(self) -> tuple[ValidityRule, ...]:
        """net's rules (messaging/validity.py)."""
        from gridbench.messaging.validity import NET_VALIDITY_RULES

        return NET_VALIDITY_RULES

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """``gridbench net validate|plan|run|report``."""
        from gridbench.messaging.command import add_commands

        add_commands(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Read the records (untrusted), analyse them, write metrics.json."""
        from gridbench.messaging.analysis import analyze_and_write

        return analyze_and_write(run)

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Headline, evaluation summary and every net section."""
        from gridbench.messaging.metrics_schema import validate_metrics
        from gridbench.messaging.report import build_report

        validate_metrics(metrics, str(run.metrics_file))
        return build_report(metrics, **report_inputs(run))

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """3 when the run failed, 130 when aborted, 1 when a threshold failed."""
        return status_exit_code(metrics, passed=metrics.get("thresholds_ok") is not False)

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """pass or fail by thresholds; marked when overhead above the network was found or
        a figure is not to be trusted."""
        overheads = metrics.get("overheads")
        above = f"{len(overheads)} above the floor" if isinstance(overheads, list) else ""
        return status_verdict(
            metrics,
            self.exit_code(metrics),
            flagged="flagged figures",
            also=above if overheads else "",
        )

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        """The environments, and the patterns run in them."""
        envs = experiment.get("environments")
        pats = experiment.get("patterns")
        names = [str(e) for e in envs] if isinstance(envs, list) else []
        patterns = [str(p) for p in pats] if isinstance(pats, list) else []
        return CatalogueEntry(
            target=", ".join(names) or "network",
            variant=", ".join(patterns) or "messaging",
        )

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        """The comparable figures (compare, history): per-size RTTs, echo latencies,
        transfer speeds, each with its repeated samples."""
        from gridbench.messaging.analysis import figures

        return figures(metrics)

    def cleanup(self, run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
        """Stop the peers, relays and floor servers a killed run left, verified by their
        recorded start times, and remove its namespaces, veth pairs and qdiscs by name."""
        from gridbench.messaging.cleanup import cleanup_run

        return cleanup_run(run, dry_run=dry_run, force=force)


FAMILY = Messaging()
