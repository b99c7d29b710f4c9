"""Stamping client events for one agent into a trial's event log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gridbench.jobflow.events.buffer import EventWriter, Origin, Row, encode_attrs
from gridbench.jobflow.events.clock import AnchoredClock


class Recorder:
    """Writes client-side events stamped by one agent, with that agent's clock offset.

    Its log is written by its owner's flush tick (the trial's, every 0.1 s): stamping only
    appends a row."""

    def __init__(
        self, log: EventWriter, clock: AnchoredClock, agent: str = "local", clock_offset_ns: int = 0
    ) -> None:
        self.log = log
        self.clock = clock
        self.agent = agent
        self.offset = clock_offset_ns
        self.precision = clock.precision_ns
        self.origin = Origin("client", self.precision, agent, clock_offset_ns)
        self.key = log.origin_key(self.origin)  # this recorder's rows carry it
        #: record one row (job, stage, t_ns, precision_ns, self.key, attrs JSON or "");
        #: the hot path of the dispatcher: the log's own list append unless a subclass
        #: hooks :meth:`stamped`
        self.put: Callable[[Row], None] = (
            log.put if type(self).stamped is Recorder.stamped else self._put_hooked
        )

    def stamp(
        self,
        job: str,
        stage: str,
        t_ns: int | None = None,
        attrs: dict[str, Any] | str | None = None,
        precision_ns: int | None = None,
    ) -> int:
        """Record ``stage`` of ``job`` at ``t_ns`` (default: now); returns the stamp."""
        t = self.clock.now_ns() if t_ns is None else t_ns
        self.put((job, stage, t, precision_ns or self.precision, self.key, encode_attrs(attrs)))
        return t

    def _put_hooked(self, row: Row) -> None:
        self.log.put(row)
        self.stamped(row[0], row[1], row[2])

    def stamped(self, job: str, stage: str, t_ns: int) -> None:
        """Called after each stamp is recorded: nothing here; a live recorder counts."""
