"""Collectors bring server-side stamps into a trial's event log (monitoring reports etc.)."""

from __future__ import annotations

from typing import Protocol

from gridbench.events.log import EventLog


class Collector(Protocol):
    """Collects server-side events for the jobs of a trial into its log."""

    def describe(self) -> str: ...

    async def collect(
        self, log: EventLog, names: dict[str, str], *, final: bool, settle_s: float
    ) -> int:
        """Append new events for jobs in ``names`` (backend id -> job); return how many."""
        ...
