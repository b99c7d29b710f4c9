"""Collectors bring server-side stamps into a trial's event log (monitoring reports etc.)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the log's module (polars, pyarrow) loads only when a trial runs
    from gridbench.jobflow.events.trial_log import EventWriter


class Collector(Protocol):
    """Collects server-side events for the jobs of a trial into its log."""

    def describe(self) -> str: ...

    async def collect(
        self, log: EventWriter, names: dict[str, str], *, final: bool, settle_s: float
    ) -> int:
        """Learn this trial's jobs (backend id -> job) and append what is out; return how many."""
        ...

    async def finish(self, run_dir: Path, settle_s: float) -> int:
        """At the end of the experiment: wait up to ``settle_s`` for late server stamps."""
        ...


@runtime_checkable
class Summarised(Protocol):
    """A collector that has a few lines to say after the experiment (how it joined)."""

    def summary(self) -> list[str]:
        """Lines for the person running the experiment."""
        ...
