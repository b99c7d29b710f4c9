"""A model step kind ``tick``: the job leaves at the next tick of a clock that ticks every
``service.mean`` seconds from the trial's start (a scheduler that picks up waiting jobs
at fixed instants)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gridbench.model.steps.base import StepKind, StepRun, register_step_kind

if TYPE_CHECKING:
    from gridbench.model.engine import ChainSim
    from gridbench.model.spec import Step


class TickRun(StepRun):
    def enter(self, job: list[float]) -> None:
        sim = self.sim
        service = sim.chain[self.k].service
        assert service is not None  # the kind needs one (the model's validation)
        now = sim.env.now
        wait = math.ceil(now / service.mean) * service.mean - now
        sim.env.timeout(max(wait, 0.0), job).callbacks.append(self._end)

    def _end(self, ev: Any) -> None:
        self.sim.done(ev.value, self.k)


class Tick(StepKind):
    name = "tick"

    def check(self, step: Step) -> None:
        if step.service is not None and step.service.mean <= 0:
            raise ValueError(f"step {step.stage!r}: a tick step needs a period (service.mean) > 0")

    def describe(self, step: Step) -> str | None:
        return f"{step.stage}: ticks every {step.service.mean:g} s" if step.service else None

    def runner(self, sim: ChainSim, k: int) -> StepRun:
        return TickRun(sim, k)


KIND = register_step_kind(Tick())
