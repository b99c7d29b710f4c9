"""Messaging as a benchmark family: ping-pong, echo, burst and transfer patterns over real
transports, each figure beside the native floor (sockperf, iperf3) measured in the same
run; analysed into ``gridbench.net/1``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gridbench.family import CatalogueEntry, CleanupOutcome
from gridbench.family.module_family import ComparableFamily, StartsFromSpecAt
from gridbench.family.verdicts import status_exit_code, status_verdict

if TYPE_CHECKING:  # light at import: the command line loads every family (--help)
    from gridbench.sections import Report
    from gridbench.store.layout import RunDir

SCHEMA = "gridbench.net/1"


class Messaging(StartsFromSpecAt, ComparableFamily):
    """The net family (the ``kind`` of runs made by ``gridbench net run``)."""

    name = "net"
    spec_marks = frozenset(
        {"environments", "pingpong", "echo", "burst", "transfer", "floor", "relay", "lan"}
    )
    spec_noun = "a messaging spec"
    title = "messaging: ping-pong, echo, burst and transfers against the network's floor"
    schema = SCHEMA
    rules_at = "gridbench.messaging.validity:NET_VALIDITY_RULES"
    commands_at = "gridbench.messaging.cli:COMMANDS"  # net validate|plan|run|report
    analysis_at = "gridbench.messaging.analysis:analyze_and_write"
    check_at = "gridbench.messaging.metrics_schema:validate_metrics"
    report_at = "gridbench.messaging.report:build_report"
    # per-size RTTs, echo latencies, transfer speeds, each with its repeated samples
    figures_at = "gridbench.messaging.analysis:figures"
    runner_at = "gridbench.messaging.runner:runner_for_text"  # the dashboard's /start

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """3 when the run failed, 130 when aborted, 1 when a threshold failed."""
        return status_exit_code(metrics, passed=metrics.get("thresholds_ok") is not False)

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """pass or fail by thresholds; marked when overhead above the network was found or
        a figure is not to be trusted."""
        from gridbench.messaging.validity import BELOW_FLOOR

        overheads = metrics.get("overheads")
        above = f"{len(overheads)} above the floor" if isinstance(overheads, list) else ""
        validity = metrics.get("validity")
        flags = validity.get("flags") if isinstance(validity, Mapping) else None
        below = sum(
            1 for f in flags or [] if isinstance(f, Mapping) and f.get("rule") == BELOW_FLOOR
        )
        return status_verdict(
            metrics,
            self.exit_code(metrics),
            flagged="flagged figures",
            also=above if overheads else "",
            void=f"{below} better than the floor" if below else "",
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

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """The net report, with the hosts its ``sampling:`` block sampled (each step a
        phase; docs/hosts.md)."""
        from gridbench.hosts.sampling.phases import with_sampling

        return with_sampling(super().report(run, metrics), run.path, run.read_spec()[1])

    def cleanup(self, run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
        """Stop the peers, relays and floor servers a killed run left, verified by their
        recorded start times, and remove its namespaces, veth pairs and qdiscs by name."""
        from gridbench.messaging.cleanup import cleanup_run

        return cleanup_run(run, dry_run=dry_run, force=force)


FAMILY = Messaging()
