"""The stage chain: the ordered stages a job passes (each a named event stamped by one
component) and the named segments between them. A domain type: backends declare their
chain, the runner records it in trial.json, ingest derives one, and analysis and reports
read it, so it lives with the events it names, below all of them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gridbench.errors import GridbenchError

#: The most stages a chain may have. Real chains have 2-12 (EDGI's T1..T8 is 8); the
#: analysis costs stages x jobs in time and memory, so a chain read from foreign input
#: (an ingested file, a trial.json) is bounded before any work is done.
MAX_STAGES: Final = 64


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a chain: a named event, the component that stamps it, its precision."""

    name: str
    source: str
    label: str = ""
    precision_ns: int = 1_000
    #: known only by polling (client_done, PSI/J's states): its stamp is when a poll saw
    #: the change, up to one poll after it, and ``precision_ns`` is the poll interval
    polled: bool = False

    def __post_init__(self) -> None:  # a chain may come from foreign input (trial.json)
        _check_fields(self, f"stage {str(self.name)[:40]!r}", ("name", "source", "label"))
        p = self.precision_ns
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 2**63:
            raise ValueError(f"stage {self.name!r}: precision_ns is {str(p)[:40]!r}, not ns")
        if not isinstance(self.polled, bool):
            raise ValueError(f"stage {self.name!r}: polled is not true or false")


@dataclass(frozen=True, slots=True)
class Segment:
    """The time between two stages; ``component`` ones sum to the job's breakdown."""

    name: str
    start: str
    end: str
    component: bool = True

    def __post_init__(self) -> None:
        _check_fields(self, f"segment {str(self.name)[:40]!r}", ("name", "start", "end"))
        if not isinstance(self.component, bool):
            raise ValueError(f"segment {self.name!r}: component is not true or false")


def _check_fields(obj: object, what: str, names: tuple[str, ...]) -> None:
    """Each of ``names`` of ``obj`` is a string (ValueError naming it otherwise)."""
    for name in names:
        if not isinstance(getattr(obj, name), str):
            raise ValueError(f"{what}: {name} is not a string")


@dataclass(frozen=True, slots=True)
class StageChain:
    """The ordered stages a backend reports, and the named segments between them."""

    stages: tuple[Stage, ...]
    segments: tuple[Segment, ...] = ()

    def __post_init__(self) -> None:
        if len(self.stages) > MAX_STAGES or len(self.segments) > 4 * MAX_STAGES:
            raise GridbenchError(
                f"the stage chain has {len(self.stages)} stages and {len(self.segments)} "
                f"segments; at most {MAX_STAGES} stages (and {4 * MAX_STAGES} segments) are "
                "analysed",
                where="stage chain",
                fix="a job passes a handful of stages: check that the 'stage' field names "
                "stages (submit, ce_entry, ...), not per-job values such as ids or times",
            )

    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def all_segments(self) -> tuple[Segment, ...]:
        """Declared segments, or every adjacent pair when none are declared."""
        if self.segments:
            return self.segments
        st = self.stages
        return tuple(
            Segment(f"{a.name}->{b.name}", a.name, b.name) for a, b in itertools.pairwise(st)
        )

    def polled(self, stage: str, precision_ns: int) -> StageChain:
        """This chain with ``stage`` declared at ``precision_ns`` at least: a stage known
        only by polling is as precise as the poll interval, not as the clock that stamps it."""
        stages = tuple(
            dataclasses.replace(s, precision_ns=max(s.precision_ns, precision_ns), polled=True)
            if s.name == stage
            else s
            for s in self.stages
        )
        return StageChain(stages, self.segments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": [
                {
                    "name": s.name,
                    "source": s.source,
                    "label": s.label,
                    "precision_ns": s.precision_ns,
                    "polled": s.polled,
                }
                for s in self.stages
            ],
            "segments": [
                {"name": g.name, "start": g.start, "end": g.end, "component": g.component}
                for g in self.all_segments()
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StageChain:
        return cls(
            stages=tuple(Stage(**s) for s in d.get("stages", [])),
            segments=tuple(Segment(**g) for g in d.get("segments", [])),
        )
