"""What an ingester hands back: events, warnings and counts (shared by every foreign format)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gridbench.jobflow.events.model import EVENT_SCHEMA

#: detailed warnings kept per file and kind before they are summarised as a count
WARNINGS_PER_FILE = 20
#: characters of a value from the input shown in a warning or error (a record may hold
#: megabytes in one field; echoing it whole would flood the terminal and ingest.json)
SHOWN_CHARS = 200


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked with "…" when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


@dataclass(slots=True)
class IngestResult:
    """New events of one ingest call, plus what went wrong (never fatal) and counts.

    ``events`` has :data:`~gridbench.jobflow.events.model.EVENT_SCHEMA`. ``unjoined`` holds server
    records that could not be tied to a gridbench job (only filled by a final poll).
    """

    events: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=EVENT_SCHEMA))
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    unjoined: pl.DataFrame | None = None


class WarningSink:
    """Collects warnings, keeping at most ``cap`` per (file, kind) and counting the rest."""

    def __init__(self, cap: int = WARNINGS_PER_FILE) -> None:
        self.cap = cap
        self.items: list[str] = []
        self._counts: dict[tuple[str, str], int] = {}

    def add(self, message: str, *, file: str = "", kind: str = "") -> None:
        key = (file, kind)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if n <= self.cap:
            self.items.append(clip(message, 4 * SHOWN_CHARS))

    def extend(self, messages: Iterable[str]) -> None:
        self.items.extend(clip(m, 4 * SHOWN_CHARS) for m in messages)

    def finish(self) -> list[str]:
        """The kept warnings followed by one summary line per capped (file, kind)."""
        out = list(self.items)
        for (file, kind), n in self._counts.items():
            if n > self.cap:
                where = f"{file}: " if file else ""
                out.append(f"{where}{n - self.cap} more {kind or 'warnings'} not shown")
        return out
