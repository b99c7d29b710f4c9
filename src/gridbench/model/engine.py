"""A chain model on SimPy's discrete-event engine (bench/bench_model.py measured it
against SimGrid; docs/model.md gives the figures).

The model is run as its generic chain of steps (gridbench.model.chain): delays, FIFO
tiers (optionally dispatched only at periodic scheduler passes), side stamps and one
status-update poll. Each job is one small list of stage times; steps are SimPy timeouts
with callbacks (no process per job), so an hour at 1,000 jobs/s is a few million events.
Finished jobs leave the engine in chunks through ``sink``, so memory holds only the jobs
in flight.
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

from gridbench.model.chain import stage_names, steps
from gridbench.model.fitdist import Draw, perturbed, sampler
from gridbench.model.spec import ChainModel, Duration, Step, durations

F64 = NDArray[np.float64]
OK, REFUSED, FAILED, LOST = 0.0, 1.0, 2.0, 3.0  # a job's outcome (lost: not done by the end)
Sink = Callable[[F64], None]
CHUNK = 65_536
#: simulated seconds of arrivals drawn at once (an unbounded chain refuses nobody)
ARRIVAL_BATCH_S = 1.0


@dataclass(frozen=True, slots=True)
class Layout:
    """A simulated job's row: ``intended``, the stages (s from the trial's start; NaN: not
    reached), ``outcome``, then the job's index and its current step."""

    columns: tuple[str, ...]

    @property
    def out(self) -> int:
        return len(self.columns) - 1

    @property
    def idx(self) -> int:
        return len(self.columns)

    @property
    def width(self) -> int:
        return len(self.columns) + 2


def layout(model: ChainModel) -> Layout:
    return Layout(("intended", *stage_names(steps(model)), "outcome"))


@dataclass(frozen=True, slots=True)
class Offer:
    """What one simulated trial offers: an open load at ``rate_per_s`` for ``duration_s``,
    jobs of ``runtime_s`` (None: the model's runtime), run until ``horizon_s``."""

    rate_per_s: float
    duration_s: float
    horizon_s: float
    arrival: Literal["uniform", "poisson"] = "uniform"
    runtime_s: float | None = None
    input_bytes: int | None = None  # staged per job (None: the model's)
    output_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class SimStats:
    jobs: int
    events: int
    sim_end_s: float


def draw_model(model: ChainModel, rng: np.random.Generator) -> ChainModel:
    """The model with every fitted mean and cv drawn from their sampling distributions
    (one repetition's parameters: the bootstrap over the fit)."""
    data = model.model_copy(deep=True)
    for _where, d in durations(data):
        new = perturbed(d, rng)
        d.mean, d.cv = new.mean, new.cv
    return data


class _Fifo:
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


class _Dispatched(_Fifo):
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


class ChainSim:
    """One trial of the chain on a fresh SimPy environment."""

    def __init__(self, model: ChainModel, offer: Offer, seed: int, sink: Sink) -> None:
        self.m, self.offer, self.sink = model, offer, sink
        self.rng = np.random.default_rng(seed)
        self.env = simpy.Environment()
        self.rows: list[list[float]] = []
        self.n = self.events = 0
        self.chain = steps(model)
        self.lay = layout(model)
        col = {name: i for i, name in enumerate(self.lay.columns)}
        self.OUT, self.IDX, self.STEP = self.lay.out, self.lay.idx, self.lay.idx + 1
        self.col = [col[st.stage] for st in self.chain]
        self.prev_col: list[int] = []  # a side stamp's origin: the stage stamped before it
        last = col["submit"]
        for st in self.chain:
            self.prev_col.append(last)
            if st.kind != "side":
                last = col[st.stage]
        self.draws = [self._draw(st) for st in self.chain]
        self.tiers: dict[int, _Fifo] = {}
        for k, st in enumerate(self.chain):
            if st.kind == "tier":
                cols = (col[st.start_stage] if st.start_stage else -1, col[st.stage])
                tier = (
                    _Dispatched(self.env, st, self.draws[k], cols, self.rng)
                    if st.dispatch is not None
                    else _Fifo(self.env, st, self.draws[k], cols)
                )
                tier.after = self._after_of(k)
                self.tiers[k] = tier
        self.gate = next((t for t in self.tiers.values() if t.limit is not None), None)
        polls = [k for k, st in enumerate(self.chain) if st.kind == "poll"]
        self.poll_k = polls[0] if polls else -1
        tracked = self.chain[self.poll_k].tracked_from if polls else None
        self.track_at = next((k for k, st in enumerate(self.chain) if st.stage == tracked), -1)
        self.tracked: dict[int, list[float]] = {}  # on the poller's list, not yet seen
        self.finished: list[list[float]] = []  # for batched polling: ended, not yet seen
        self.inflight: dict[int, list[float]] = {}
        self.gap = 1.0 / offer.rate_per_s
        self.first = 0.0
        self.uniform = offer.arrival == "uniform"
        self.gaps = sampler(Duration(dist="exponential", mean=self.gap, cv=1.0), self.rng)

    def _draw(self, st: Step) -> Draw:
        """A step's duration: the job's runtime (swept), a transfer's formula plus its
        fitted overhead, or the fitted service."""
        rt = self.offer.runtime_s
        if st.job and rt is not None:
            return sampler(Duration(mean=rt + st.overhead_s), self.rng)
        if st.service is None:
            return lambda: 0.0
        base = sampler(st.service, self.rng)
        link = st.link
        if link is None:
            return base
        swept = self.offer.input_bytes if st.direction == "in" else self.offer.output_bytes
        nbytes = link.bytes if swept is None else swept
        fixed = link.files * link.per_file_s + nbytes / link.bandwidth_bps
        return lambda: fixed + base()

    def _after_of(self, k: int) -> Callable[[list[float]], None]:
        return lambda job: self._after(job, k)

    def run(self) -> SimStats:
        env = self.env
        env.timeout(0.0).callbacks.append(self._arrive)
        if self.poll_k >= 0:
            env.process(self._poller(self.chain[self.poll_k]))
        for k, tier in self.tiers.items():
            d = self.chain[k].dispatch
            if d is not None and isinstance(tier, _Dispatched):
                env.process(tier.passes(float(self.rng.uniform(0.0, d.interval_s))))
        env.run(until=self.offer.horizon_s)
        for job in list(self.inflight.values()):
            job[self.OUT] = LOST
            self._emit(job)
        self._flush()
        return SimStats(self.n, self.events, env.now)

    # -- arrivals ---------------------------------------------------------------------
    def _arrive(self, _ev: Any) -> None:
        """The jobs of the next ``ARRIVAL_BATCH_S`` of simulated time at once; one at a
        time when a tier's queue is bounded, since a refusal depends on the queue at each
        job's own arrival."""
        now, end = self.env.now, self.offer.duration_s
        if now >= end:
            return
        upto = now if self.gate is not None else min(now + ARRIVAL_BATCH_S, end)
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
        job = [math.nan] * self.lay.width
        job[0] = job[1] = t  # intended, submit
        job[self.IDX] = self.n
        job[self.OUT] = OK
        self.n += 1
        self.events += 1
        p = self.m.failures.submit
        if (self.gate is not None and self.gate.full()) or (p > 0 and self.rng.random() < p):
            job[self.OUT] = REFUSED
            self._emit(job)
            return
        self.inflight[self.n - 1] = job
        if self.track_at < 0 and self.poll_k >= 0:
            self.tracked[self.n - 1] = job
        first = self.chain[0]
        if first.kind == "delay":  # the hop and the wait for the batch's instant in one event
            job[self.STEP] = 0
            self.env.timeout(ahead + self.draws[0](), job).callbacks.append(self._delay_end)
        elif ahead > 0:
            self.env.timeout(ahead, job).callbacks.append(self._begin)
        else:
            self._advance(job, 0)

    def _begin(self, ev: Any) -> None:
        self._advance(ev.value, 0)

    # -- the chain --------------------------------------------------------------------
    def _advance(self, job: list[float], k: int) -> None:
        """Send ``job`` into step ``k`` (side stamps are taken on the way)."""
        chain = self.chain
        while k < len(chain) and chain[k].kind == "side":
            job[self.col[k]] = job[self.prev_col[k]] + self.draws[k]()
            self.events += 1
            k += 1
        if k == len(chain):
            del self.inflight[int(job[self.IDX])]
            self._emit(job)
            return
        job[self.STEP] = k
        kind = chain[k].kind
        if kind == "delay":
            self.env.timeout(self.draws[k](), job).callbacks.append(self._delay_end)
        elif kind == "tier":
            self.tiers[k].put(job)
        else:  # poll: the poller stamps it when an update sees it
            self.finished.append(job)

    def _delay_end(self, ev: Any) -> None:
        job: list[float] = ev.value
        k = int(job[self.STEP])
        job[self.col[k]] = self.env.now
        self._after(job, k)

    def _after(self, job: list[float], k: int) -> None:
        self.events += 1
        if k == self.track_at:
            self.tracked[int(job[self.IDX])] = job
        if self.chain[k].job:
            p = self.m.failures.job
            if p > 0 and self.rng.random() < p:
                job[self.OUT] = FAILED
        self._advance(job, k + 1)

    # -- status updates ---------------------------------------------------------------
    def _seen(self, job: list[float]) -> None:
        job[self.col[self.poll_k]] = self.env.now
        del self.tracked[int(job[self.IDX])]
        self._after(job, self.poll_k)

    def _poller(self, st: Step) -> Generator[simpy.Event, Any, None]:
        su = st.poll
        assert su is not None  # a poll step has one (the model's validator)
        env, k, step = self.env, self.poll_k, self.STEP
        while True:
            if su.policy == "sequential":
                for job in list(self.tracked.values()):
                    yield env.timeout(su.per_job_cost_s)
                    self.events += 1
                    if job[step] == k and int(job[self.IDX]) in self.tracked:
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
        self.rows.append(job[: self.lay.width - 1])
        if len(self.rows) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.sink(np.asarray(self.rows, dtype=np.float64))
            self.rows = []


def simulate(model: ChainModel, offer: Offer, seed: int) -> tuple[F64, SimStats]:
    """One trial's rows (``layout(model).columns`` plus the job index), sorted by job."""
    parts: list[F64] = []
    stats = ChainSim(model, offer, seed, parts.append).run()
    width = layout(model).width - 1
    rows = np.concatenate(parts) if parts else np.empty((0, width))
    return rows[np.argsort(rows[:, width - 1])], stats
