"""The ``tier`` step: FIFO through ``concurrency`` servers (null: no limit) for
``service``, stamping ``start_stage`` (if given) when a server takes the job; a
``queue_limit`` refuses submissions while the tier holds that many jobs; with
``dispatch``, waiting jobs start only at the scheduler's passes."""

from __future__ import annotations

import collections
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from gridbench.model.steps.base import StepKind, StepRun, register_step_kind

if TYPE_CHECKING:
    from gridbench.model.engine import ChainSim
    from gridbench.model.fitdist import Draw
    from gridbench.model.spec import Step


class Fifo:
    """A FIFO tier of ``free`` servers; ``after`` takes each job it finishes. With a
    dispatch interval, waiting jobs start only at the scheduler's passes."""

    __slots__ = ("after", "cap", "col", "draw", "env", "free", "limit", "queue", "start_col")

    def __init__(self, env: simpy.Environment, st: Step, draw: Draw, cols: tuple[int, int]) -> None:
        self.env, self.draw = env, draw
        self.start_col, self.col = cols
        self.cap = self.free = st.concurrency if st.concurrency is not None else 1 << 62
        self.limit = st.queue_limit
        self.queue: collections.deque[list[float]] = collections.deque()
        self.after: Callable[[list[float]], None] = lambda job: None

    def full(self) -> bool:
        """The tier holds ``queue_limit`` jobs, waiting or in service (as the reference CE)."""
        return self.limit is not None and len(self.queue) + self.cap - self.free >= self.limit

    def put(self, job: list[float]) -> None:
        if self.free:
            self.free -= 1
            self._start(job)
        else:
            self.queue.append(job)

    def _start(self, job: list[float]) -> None:
        if self.start_col >= 0:
            job[self.start_col] = self.env.now
        self.env.timeout(self.draw(), job).callbacks.append(self._end)

    def _end(self, ev: Any) -> None:
        job: list[float] = ev.value
        job[self.col] = self.env.now
        if self.queue:
            self._start(self.queue.popleft())
        else:
            self.free += 1
        self.after(job)


class Dispatched(Fifo):
    """A tier whose scheduler starts waiting jobs only at passes every ``interval_s``,
    and at a pass a job's end triggers (drawn once per instant of ending)."""

    __slots__ = ("dispatch", "last_end", "rng")

    def __init__(
        self, env: simpy.Environment, st: Step, draw: Draw, cols: tuple[int, int],
        rng: np.random.Generator,
    ) -> None:  # fmt: skip
        super().__init__(env, st, draw, cols)
        assert st.dispatch is not None  # a dispatched tier has one
        self.dispatch, self.rng, self.last_end = st.dispatch, rng, -1.0

    def put(self, job: list[float]) -> None:
        self.queue.append(job)

    def _end(self, ev: Any) -> None:
        job: list[float] = ev.value
        now = job[self.col] = self.env.now
        self.free += 1
        d = self.dispatch
        if d.on_end_share > 0 and now != self.last_end and self.queue:
            self.last_end = now
            if self.rng.random() < d.on_end_share:
                self.env.timeout(d.on_end_delay_s).callbacks.append(self._pass)
        self.after(job)

    def _pass(self, _ev: Any = None) -> None:
        while self.free and self.queue:
            self.free -= 1
            self._start(self.queue.popleft())

    def passes(self, phase: float) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(phase)
        while True:
            self._pass()
            yield self.env.timeout(self.dispatch.interval_s)


class TierRun(StepRun):
    def __init__(self, sim: ChainSim, k: int) -> None:
        super().__init__(sim, k)
        st = sim.chain[k]
        cols = (sim.col_of[st.start_stage] if st.start_stage else -1, sim.col[k])
        self.fifo = (
            Dispatched(sim.env, st, sim.draws[k], cols, sim.rng)
            if st.dispatch is not None
            else Fifo(sim.env, st, sim.draws[k], cols)
        )
        self.fifo.after = lambda job: sim.passed(job, k)
        if self.fifo.limit is not None and sim.gate is None:
            sim.gate = self.fifo  # the first bounded tier refuses submissions

    def enter(self, job: list[float]) -> None:
        self.fifo.put(job)

    def start(self) -> None:
        d = self.sim.chain[self.k].dispatch
        if d is not None and isinstance(self.fifo, Dispatched):
            phase = float(self.sim.rng.uniform(0.0, d.interval_s))
            self.sim.env.process(self.fifo.passes(phase))


class Tier(StepKind):
    name = "tier"
    servers = True

    def describe(self, step: Step) -> str | None:
        limit = "no limit seen" if step.concurrency is None else str(step.concurrency)
        pas = step.dispatch
        return f"{step.stage}: concurrency {limit}" + (
            f" · dispatched at passes every {pas.interval_s:g} s" if pas else ""
        )

    def runner(self, sim: ChainSim, k: int) -> StepRun:
        return TierRun(sim, k)


KIND = register_step_kind(Tier())
