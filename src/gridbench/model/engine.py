"""The chain model on SimPy's discrete-event engine (bench/model_engines.py measured it
against SimGrid on the same chain; docs/model.md gives the figures).

Each job is one small list of stage times; tiers are SimPy timeouts with callbacks (no
process per job), so an hour at 1,000 jobs/s is a few million events. Finished jobs
leave the engine in chunks through ``sink``, so memory holds only the jobs in flight.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import simpy
from numpy.typing import NDArray

from gridbench.model.fitdist import Draw, perturbed, sampler
from gridbench.model.spec import STAGES, ChainModel, Duration, Tier, durations

F64 = NDArray[np.float64]
#: the columns of a finished job's row (seconds from the trial's start; NaN: not reached)
COLUMNS = (
    "intended",
    *STAGES,
    "outcome",  # 0 done, 1 submit refused, 2 job failed, 3 lost (not done by the horizon)
)
(INT, SUB, CEE, ACK, CES, BRE, BRS, BRD, CED, CLD, OUT, IDX) = range(12)
OK, REFUSED, FAILED, LOST = 0.0, 1.0, 2.0, 3.0
Sink = Callable[[F64], None]
CHUNK = 65_536
#: simulated seconds of arrivals drawn at once (an unbounded CE refuses nobody)
ARRIVAL_BATCH_S = 1.0


@dataclass(frozen=True, slots=True)
class Offer:
    """What one simulated trial offers: an open load at ``rate_per_s`` for ``duration_s``,
    jobs of ``runtime_s`` (None: the model's runtime), run until ``horizon_s``."""

    rate_per_s: float
    duration_s: float
    horizon_s: float
    arrival: Literal["uniform", "poisson"] = "uniform"
    runtime_s: float | None = None


@dataclass(frozen=True, slots=True)
class SimStats:
    jobs: int
    events: int
    sim_end_s: float


def draw_model(model: ChainModel, rng: np.random.Generator) -> ChainModel:
    """The model with every fitted mean drawn from its sampling distribution (one
    repetition's parameters: the bootstrap over the fit)."""
    data = model.model_copy(deep=True)
    for _where, d in durations(data):
        new = perturbed(d, rng)
        d.mean = new.mean
    return data


class _Fifo:
    """A FIFO tier of ``free`` servers; ``after`` takes each job it finishes."""

    __slots__ = ("after", "cap", "col", "draw", "env", "free", "limit", "queue")

    def __init__(self, env: simpy.Environment, tier: Tier, draw: Draw, col: int) -> None:
        self.env, self.draw, self.col = env, draw, col
        self.cap = self.free = tier.concurrency if tier.concurrency is not None else 1 << 62
        self.limit = tier.queue_limit
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
        self.env.timeout(self.draw(), job).callbacks.append(self._end)

    def _end(self, ev: Any) -> None:
        job: list[float] = ev.value
        job[self.col] = self.env.now
        if self.queue:
            self._start(self.queue.popleft())
        else:
            self.free += 1
        self.after(job)


class ChainSim:
    """One trial of the chain on a fresh SimPy environment."""

    def __init__(self, model: ChainModel, offer: Offer, seed: int, sink: Sink) -> None:
        self.m, self.offer, self.sink = model, offer, sink
        self.rng = np.random.default_rng(seed)
        self.env = simpy.Environment()
        self.rows: list[list[float]] = []
        self.n = self.events = 0
        t, c = model.tiers, model.client
        s = self._s
        self.to_ce, self.ack, self.observe = s(c.to_ce), s(c.ack), s(c.observe)
        self.transfer = s(t.transfer.delay)
        rt = offer.runtime_s
        self.runtime = s(Duration(mean=rt)) if rt is not None else s(t.workers.runtime)
        self.ce = _Fifo(self.env, t.ce, s(t.ce.service), CES)
        self.bridge = _Fifo(self.env, t.bridge, s(t.bridge.service), BRS)
        self.workers = _Fifo(
            self.env, Tier(concurrency=t.workers.slots, service=t.workers.runtime),
            self.runtime, BRD,
        )  # fmt: skip
        self.ce.after = self._transfer
        self.bridge.after = self.workers.put
        self.workers.after = self._bridge_done
        self.tracked: dict[int, list[float]] = {}  # the CE's list: T3 seen, T7 not yet
        self.finished: list[list[float]] = []  # for batched polling: ended, not yet seen
        self.gap = 1.0 / offer.rate_per_s
        self.first = 0.0
        self.uniform = offer.arrival == "uniform"
        self.gaps = s(Duration(dist="exponential", mean=self.gap, cv=1.0))

    def _s(self, d: Duration) -> Draw:
        return sampler(d, self.rng)

    def run(self) -> SimStats:
        env = self.env
        env.timeout(0.0).callbacks.append(self._arrive)
        env.process(self._poller())
        env.run(until=self.offer.horizon_s)
        for job in list(self.tracked.values()) + list(self.ce.queue):
            job[OUT] = LOST
            self._emit(job)
        self._flush()
        return SimStats(self.n, self.events, env.now)

    # -- arrivals and the chain -------------------------------------------------------
    def _arrive(self, _ev: Any) -> None:
        """The jobs of the next ``ARRIVAL_BATCH_S`` of simulated time at once (their hop to
        the CE is their first event); one at a time when the CE queue is bounded, since
        a refusal depends on the queue at each job's own arrival."""
        now, end = self.env.now, self.offer.duration_s
        if now >= end:
            return
        bounded = self.ce.limit is not None
        upto = now if bounded else min(now + ARRIVAL_BATCH_S, end)
        t = now
        while True:
            self._one(t, t - now)
            t = self._next_arrival(t)
            if t >= upto or t >= end:
                break
        if t < end:
            self.env.timeout(t - now).callbacks.append(self._arrive)

    def _next_arrival(self, t: float) -> float:
        if self.uniform:
            return self.first + self.n * self.gap
        return t + self.gaps()

    def _one(self, t: float, ahead: float) -> None:
        job = [math.nan] * 12
        job[INT] = job[SUB] = t
        job[IDX] = self.n
        job[OUT] = OK
        self.n += 1
        self.events += 1
        p = self.m.failures.submit
        if self.ce.full() or (p > 0 and self.rng.random() < p):
            job[OUT] = REFUSED
            self._emit(job)
            return
        self.env.timeout(ahead + self.to_ce(), job).callbacks.append(self._ce_entry)

    def _ce_entry(self, ev: Any) -> None:
        job: list[float] = ev.value
        job[CEE] = self.env.now
        job[ACK] = job[CEE] + self.ack()
        self.events += 2
        self.ce.put(job)

    def _transfer(self, job: list[float]) -> None:
        self.tracked[int(job[IDX])] = job
        self.env.timeout(self.transfer(), job).callbacks.append(self._bridge_entry)

    def _bridge_entry(self, ev: Any) -> None:
        job: list[float] = ev.value
        job[BRE] = self.env.now
        self.events += 3  # T3, T4, T5 (the bridge's service end)
        self.bridge.put(job)

    def _bridge_done(self, job: list[float]) -> None:
        p = self.m.failures.job
        if p > 0 and self.rng.random() < p:
            job[OUT] = FAILED
        self.events += 1
        self.finished.append(job)

    # -- the CE's status updates ------------------------------------------------------
    def _seen(self, job: list[float]) -> None:
        job[CED] = self.env.now
        job[CLD] = job[CED] + self.observe()
        self.events += 2
        del self.tracked[int(job[IDX])]
        self._emit(job)

    def _poller(self) -> Generator[simpy.Event, Any, None]:
        su = self.m.status_update
        env = self.env
        while True:
            if su.policy == "sequential":
                for job in list(self.tracked.values()):
                    yield env.timeout(su.per_job_cost_s)
                    self.events += 1
                    if not math.isnan(job[BRD]) and int(job[IDX]) in self.tracked:
                        self._seen(job)
                self.finished.clear()  # the pass itself finds ended jobs
                yield env.timeout(su.interval_s)
            else:
                yield env.timeout(su.interval_s)
                if self.tracked:
                    if su.per_job_cost_s > 0:
                        yield env.timeout(su.per_job_cost_s)
                    ended, self.finished = self.finished, []
                    self.events += 1
                    for job in ended:
                        self._seen(job)

    # -- output -----------------------------------------------------------------------
    def _emit(self, job: list[float]) -> None:
        self.rows.append(job)
        if len(self.rows) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.sink(np.asarray(self.rows, dtype=np.float64))
            self.rows = []


def simulate(model: ChainModel, offer: Offer, seed: int) -> tuple[F64, SimStats]:
    """One trial's rows (columns ``COLUMNS`` plus the job index), sorted by job."""
    parts: list[F64] = []
    stats = ChainSim(model, offer, seed, parts.append).run()
    rows = np.concatenate(parts) if parts else np.empty((0, 12))
    return rows[np.argsort(rows[:, IDX])], stats
