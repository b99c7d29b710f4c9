"""The ``delay`` step: a pure delay of ``service``; no queue, no limit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridbench.model.steps.base import StepKind, StepRun, register_step_kind

if TYPE_CHECKING:
    from gridbench.model.engine import ChainSim


class DelayRun(StepRun):
    def enter(self, job: list[float]) -> None:
        self.enter_after(job, 0.0)

    def enter_after(self, job: list[float], ahead: float) -> None:
        # the hop and the wait for the arrival batch's instant in one event
        sim = self.sim
        job[sim.STEP] = self.k
        sim.env.timeout(ahead + sim.draws[self.k](), job).callbacks.append(self._end)

    def _end(self, ev: Any) -> None:
        self.sim.done(ev.value, self.k)


class Delay(StepKind):
    name = "delay"

    def runner(self, sim: ChainSim, k: int) -> StepRun:
        return DelayRun(sim, k)


KIND = register_step_kind(Delay())
