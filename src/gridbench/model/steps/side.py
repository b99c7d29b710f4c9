"""The ``side`` step: a stamp ``service`` after the stage before it that does not hold
the job (an acknowledgement); the engine takes it on the way to the next step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gridbench.model.steps.base import StepKind, StepRun, register_step_kind

if TYPE_CHECKING:
    from gridbench.model.engine import ChainSim


class Side(StepKind):
    name = "side"
    holds_job = False

    def runner(self, sim: ChainSim, k: int) -> StepRun | None:
        return None


KIND = register_step_kind(Side())
