"""Storage as a benchmark family: iozone/Bonnie matrices on fio and bonnie++, signed
speedups against a baseline, consistency checks, analysed into ``gridbench.io/1``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gridbench.family import CatalogueEntry, CleanupOutcome, not_applicable
from gridbench.family.module_family import ComparableFamily, StartsFromSpecAt
from gridbench.family.verdicts import status_exit_code, status_verdict

if TYPE_CHECKING:
    from gridbench.sections import Report
    from gridbench.store.layout import RunDir

#: what io's analysis writes (gridbench.io.metrics.SCHEMA; spelled here too, since this
#: module stays light at import: the command line loads every family)
SCHEMA = "gridbench.io/1"


class Storage(StartsFromSpecAt, ComparableFamily):
    """The io family (the ``kind`` of runs made by ``gridbench io run``)."""

    name = "io"
    spec_marks = frozenset(
        {
            "targets",
            "iozone",
            "bonnie",
            "baseline",
            "concurrency",
            "consistency",
            "http",
            "resilience",
            "http_clients",
            "service",
            "conformance",
            "replay",
            "identities",
            "fio",
            "cache",
        }
    )
    spec_noun = "a storage spec"
    title = "storage: iozone and Bonnie matrices, speedups against a baseline"
    schema = SCHEMA
    rules_at = "gridbench.io.validity:IO_VALIDITY_RULES"
    commands_at = "gridbench.io.cli:COMMANDS"  # io validate|plan|run|report
    analysis_at = "gridbench.io.metrics:analyze_and_write"
    check_at = "gridbench.io.metrics_schema:validate_metrics"
    report_at = "gridbench.io.report:build_report"
    runner_at = "gridbench.io.runner:runner_for_text"  # the dashboard's /start
    # compare and history: the sampled hosts' CPU per step (a sampling: block)
    figures_at = "gridbench.hosts.sampling.compared:sampling_figures"

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """The io report, with the hosts its ``sampling:`` block sampled (each step a
        phase; docs/hosts.md)."""
        from gridbench.hosts.sampling.phases import with_sampling

        return with_sampling(super().report(run, metrics), run.path, run.read_spec()[1])

    def cleanup(self, run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
        """(:class:`~gridbench.family.Cleanable`) stop the fio servers a killed run left on
        its client hosts; continue the bricks it left paused in its resilience phase;
        report those it left down; record a killed run crashed."""
        from gridbench.io.fio_servers import BOOK, cleanup_servers
        from gridbench.io.resilience import RECORDS
        from gridbench.io.resilience_cleanup import cleanup_run, killed

        # only a resilience phase, client hosts' servers, or a kill -9 leave anything
        servers = (run.path / BOOK).exists()
        if not (run.path / RECORDS).exists() and not killed(run) and not servers:
            raise not_applicable(self, "cleanup", "it had no resilience phase: nothing to undo")
        done = cleanup_run(run, dry_run=dry_run, force=force)  # refuses a live run
        if not servers:
            return done
        lines, errors = cleanup_servers(run.path, dry_run=dry_run)
        return CleanupOutcome((*lines, *done.lines), (*errors, *done.errors))

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """3 when the run failed, 130 when aborted, 1 when a threshold or check failed."""
        ok = metrics.get("thresholds_ok") is True and metrics.get("consistency_ok") is True
        ok = ok and metrics.get("resilience_ok") is not False  # a lost or corrupt byte
        ok = ok and metrics.get("http_clients_ok") is not False
        ok = ok and metrics.get("service_ok") is not False
        ok = ok and metrics.get("identities_ok") is not False  # absent in older runs
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
