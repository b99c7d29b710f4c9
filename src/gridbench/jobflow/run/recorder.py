"""Stamping client events for one agent into a trial's event log."""

from __future__ import annotations

from typing import Any

from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.log import Origin
from gridbench.jobflow.events.trial_log import EventWriter


class Recorder:
    """Writes client-side events stamped by one agent, with that agent's clock offset."""

    def __init__(
        self, log: EventWriter, clock: AnchoredClock, agent: str = "local", clock_offset_ns: int = 0
    ) -> None:
        self.log = log
        self.clock = clock
        self.agent = agent
        self.offset = clock_offset_ns
        self.precision = clock.precision_ns
        self.origin = Origin("client", self.precision, agent, clock_offset_ns)
        # the after-stamp hook does nothing unless a subclass overrides it: then skip the call
        self._hooked = type(self).stamped is not Recorder.stamped

    def _with_precision(self, precision_ns: int) -> Origin:
        return Origin("client", precision_ns, self.agent, self.offset)

    def stamp(
        self,
        job: str,
        stage: str,
        t_ns: int | None = None,
        attrs: dict[str, Any] | str | None = None,
        precision_ns: int | None = None,
    ) -> int:
        t = self.clock.now_ns() if t_ns is None else t_ns
        origin = self._with_precision(precision_ns) if precision_ns else self.origin
        self.log.append(job, stage, t, origin, attrs=attrs)
        if self._hooked:
            self.stamped(job, stage, t)
        return t

    def stamped(self, job: str, stage: str, t_ns: int) -> None:
        """Called after each stamp is recorded: nothing here; a live recorder counts."""
