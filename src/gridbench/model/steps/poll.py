"""The ``poll`` step: the stage is stamped when a status update (``poll``: sequential or
batched, every ``interval_s``) sees the job, which is on the poller's list from
``tracked_from`` (the submission when not given). At most one per chain."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import simpy

from gridbench.model.steps.base import StepKind, StepRun, register_step_kind

if TYPE_CHECKING:
    from gridbench.model.engine import ChainSim
    from gridbench.model.spec import Step


class PollRun(StepRun):
    def __init__(self, sim: ChainSim, k: int) -> None:
        super().__init__(sim, k)
        sim.poll_k = k
        tracked = sim.chain[k].tracked_from
        sim.track_at = next((i for i, st in enumerate(sim.chain) if st.stage == tracked), -1)

    def enter(self, job: list[float]) -> None:
        self.sim.finished.append(job)  # the poller stamps it when an update sees it

    def start(self) -> None:
        self.sim.env.process(self._poller())

    def _seen(self, job: list[float]) -> None:
        sim = self.sim
        del sim.tracked[int(job[sim.IDX])]
        sim.done(job, self.k)

    def _poller(self) -> Generator[simpy.Event, Any, None]:
        sim = self.sim
        su = sim.chain[self.k].poll
        assert su is not None  # a poll step has one (the model's validator)
        env, k, step = sim.env, self.k, sim.STEP
        while True:
            if su.policy == "sequential":
                for job in list(sim.tracked.values()):
                    yield env.timeout(su.per_job_cost_s)
                    sim.events += 1
                    if job[step] == k and int(job[sim.IDX]) in sim.tracked:
                        self._seen(job)
                sim.finished.clear()  # the pass itself finds ended jobs
                yield env.timeout(su.interval_s)
            else:
                yield env.timeout(su.interval_s)
                if sim.tracked:
                    if su.per_job_cost_s > 0:
                        yield env.timeout(su.per_job_cost_s)
                    ended, sim.finished = sim.finished, []
                    sim.events += 1
                    for job in ended:
                        self._seen(job)


class Poll(StepKind):
    name = "poll"
    needs_service = False
    once = True

    def check(self, step: Step) -> None:
        if step.poll is None:
            raise ValueError(f"step {step.stage!r}: a poll step needs poll: {{policy, ...}}")

    def check_in_chain(self, chain: Sequence[Step], i: int, seen: set[str]) -> None:
        tracked = chain[i].tracked_from
        if tracked not in (None, *seen):
            raise ValueError(f"chain[{i}]: tracked_from {tracked!r} is no earlier stage")

    def runner(self, sim: ChainSim, k: int) -> StepRun:
        return PollRun(sim, k)


KIND = register_step_kind(Poll())
