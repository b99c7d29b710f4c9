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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import simpy
from numpy.typing import NDArray

from gridbench.model.chain import stage_names, steps
from gridbench.model.fitdist import Draw, perturbed, sampler
from gridbench.model.spec import ChainModel, Duration, Step, durations
from gridbench.model.steps.base import Gate, step_kind

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
        self.col_of = col
        kinds = [step_kind(st.kind) for st in self.chain]
        self.holds = [kind.holds_job for kind in kinds]
        last = col["submit"]
        for st, holds in zip(self.chain, self.holds, strict=True):
            self.prev_col.append(last)
            if holds:
                last = col[st.stage]
        self.draws = [self._draw(st) for st in self.chain]
        #: the first bounded tier (it refuses submissions), the poll step and the step
        #: from which a job is on the poller's list: set by their kinds' runs
        self.gate: Gate | None = None
        self.poll_k = self.track_at = -1
        self.tracked: dict[int, list[float]] = {}  # on the poller's list, not yet seen
        self.finished: list[list[float]] = []  # for batched polling: ended, not yet seen
        self.runs = [kind.runner(self, k) for k, kind in enumerate(kinds)]
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

    def done(self, job: list[float], k: int) -> None:
        """Step ``k`` is over for ``job`` now: its stage stamped, the job handed on."""
        job[self.col[k]] = self.env.now
        self._after(job, k)

    def passed(self, job: list[float], k: int) -> None:
        """Step ``k`` is over for ``job`` (its stage stamped already): handed on."""
        self._after(job, k)

    def run(self) -> SimStats:
        env = self.env
        env.timeout(0.0).callbacks.append(self._arrive)
        for run in self.runs:
            if run is not None:
                run.start()
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
        first = self.runs[0]
        if first is not None and ahead > 0:  # the step may join the wait to its own
            job[self.STEP] = 0
            first.enter_after(job, ahead)
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
        while k < len(chain) and not self.holds[k]:  # stamps taken on the way
            job[self.col[k]] = job[self.prev_col[k]] + self.draws[k]()
            self.events += 1
            k += 1
        if k == len(chain):
            del self.inflight[int(job[self.IDX])]
            self._emit(job)
            return
        job[self.STEP] = k
        run = self.runs[k]
        assert run is not None  # a step that holds the job has a run
        run.enter(job)

    def _after(self, job: list[float], k: int) -> None:
        self.events += 1
        if k == self.track_at:
            self.tracked[int(job[self.IDX])] = job
        if self.chain[k].job:
            p = self.m.failures.job
            if p > 0 and self.rng.random() < p:
                job[self.OUT] = FAILED
        self._advance(job, k + 1)

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
