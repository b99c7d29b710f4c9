"""A sampled host (:class:`HostTarget`: how to reach it, what to read there) and what the
sampler's tasks for it share."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gridbench.hosts.sampling.clock import HostClock


@dataclass(frozen=True)
class HostTarget:
    """One host to sample: how to reach it and what to read there."""

    name: str
    exporter: str | None = None  # node_exporter's URL
    address: str | None = None  # None: the controller itself, read in-process
    ssh: dict[str, Any] = field(default_factory=dict)  # asyncssh connect options
    python: str = "python3"
    processes: tuple[dict[str, Any], ...] = ()  # {"label", "name"|"pid"} for the probe
    offset_s: float | None = None  # the host's clock minus the controller's, when known

    @property
    def reachable_by_ssh(self) -> bool:
        return self.address is not None


@dataclass
class HostState:
    """What one host's tasks share."""

    target: HostTarget
    path: Path
    last_figures: float = 0.0  # controller monotonic time of the last host figures
    exporter_ok: bool = False
    ssh_ok: bool = False
    silent_warned: bool = False
    warned: set[str] = field(default_factory=set)
    clock: HostClock = field(default_factory=lambda: HostClock(""))
    line_t: float = 0.0  # when the probe's previous line arrived (controller clock)
    written: int = 0
    #: set while the exporter does not answer: the SSH probe gives the host's figures
    exporter_down: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def begin(cls, target: HostTarget, folder: Path) -> HostState:
        """The state of ``target`` as sampling begins, its samples in ``folder``."""
        st = cls(target, folder / f"{target.name}.jsonl", last_figures=time.monotonic())
        st.clock.host = target.name
        if target.offset_s is not None:
            st.clock.offset, st.clock.offset_from = target.offset_s, "given"
        return st
