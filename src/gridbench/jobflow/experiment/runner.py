"""Runs every trial of a plan and records the experiment's status. Points share one
backend unless a sweep changes the ``backend:`` block (``backend.options.submit_via:
[sbatch, rest]``): then each distinct backend block gets its own backend, opened when its
first trial comes, all closed at the end."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.errors import GridbenchError
from gridbench.family import runner_identity
from gridbench.jobflow import loads as load_models
from gridbench.jobflow.backends.base import Backend, RuntimeInfoSource
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.jobflow.experiment.cleanup import final_state
from gridbench.jobflow.run.closed_loop import sleep_or_stop
from gridbench.jobflow.run.collect import Collector, Summarised
from gridbench.jobflow.run.collectors import build_collectors
from gridbench.jobflow.run.observer import NullObserver, Observer
from gridbench.jobflow.run.trial import TrialEnv, TrialOutcome, run_trial
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.jobflow.spec.plan import Plan, PlannedTrial
from gridbench.specload import dump_yaml
from gridbench.states import COMPLETE
from gridbench.store.layout import now_iso, write_json, write_text_atomic
from gridbench.store.spawned import mark_run

if TYPE_CHECKING:
    from collections.abc import Callable

    from gridbench.hosts.sampling.sampler import Sampler

log = logging.getLogger(__name__)


def _sampler(spec: ExperimentSpec) -> Callable[[Path], Sampler] | None:
    """A maker of the run's :class:`~gridbench.hosts.sampling.sampler.Sampler` from the
    spec's ``sampling:`` block (its hosts looked up now), or None without one."""
    if spec.sampling is None:
        return None
    from gridbench.hosts.sampling.sampler import SAMPLES_DIR, Sampler
    from gridbench.hosts.sampling.spec import load_targets  # imported only when sampling

    targets, interval = load_targets(spec.sampling), spec.sampling.interval
    return lambda run: Sampler(run / SAMPLES_DIR, targets, interval)


@dataclass
class ExperimentOutcome:
    run: JobFlowRun
    status: str  # complete | aborted | failed
    trials: list[TrialOutcome] = field(default_factory=list)
    error: str | None = None


async def _close_quietly(backend: Backend) -> None:
    try:
        await backend.close()
    except Exception as exc:
        log.warning("closing backend: %s", exc)


def backend_key(spec: ExperimentSpec) -> str:
    """Points whose ``backend:`` blocks are equal share one backend."""
    return json.dumps(spec.backend.model_dump(mode="json"), sort_keys=True, default=str)


def spec_hash(data: dict[str, Any]) -> str:
    return hashlib.sha256(dump_yaml(data).encode()).hexdigest()[:16]


class ExperimentRunner:
    """Owns the backend for the whole experiment; ``abort()`` stops it like Ctrl-C."""

    def __init__(
        self,
        plan: Plan,
        data: dict[str, Any],
        root: Path,
        *,
        observer: Observer | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.plan = plan
        self.data = data
        self.root = root
        self.observer = observer or NullObserver()
        self.backend = backend
        self.stop = asyncio.Event()
        self.run: JobFlowRun | None = None

    def abort(self) -> None:
        """Stop submitting, drain or cancel per the spec, and finalise what was recorded."""
        self.stop.set()

    def prepare(self) -> JobFlowRun:
        """Create the results directory with the spec as run and the plan."""
        spec = self.plan.spec
        run = JobFlowRun.create(self.root, spec.name)
        mark_run(run.path)  # every helper and job started from now on is provably this run's
        write_text_atomic(run.spec_file, dump_yaml(self.data))
        write_json(run.plan_file, self.plan.to_dict())
        run.update_experiment(
            id=run.id,
            name=spec.name,
            description=spec.description,
            backend=spec.backend.type,
            load_model=spec.load.model,
            status="created",
            created=now_iso(),
            spec_hash=spec_hash(self.data),
            trials_planned=len(self.plan.trials),
            trials_done=0,
        )
        self.run = run
        return run

    async def _wait_turn(
        self, planned: PlannedTrial, clock: AnchoredClock, first: int, last_end: int
    ) -> None:
        """Wait for the trial's turn under ``schedule``: ``pause`` after the previous
        trial's end, and not before its window slot counted from the first trial's
        recorded start; an abort ends the wait at once."""
        sched = self.plan.spec.schedule
        if sched is None:
            return
        until = max(last_end + sched.pause * 1e9, first + planned.not_before_s * 1e9)
        wait = (until - clock.now_ns()) / 1e9
        if wait <= 0:
            return
        self.observer.message(
            f"schedule: {planned.trial_id} starts in {wait:.0f} s "
            f"(pause {sched.pause:g} s" + (f", window {sched.window:g} s)" if sched.window else ")")
        )
        deadline = time.perf_counter() + wait
        while not self.stop.is_set() and time.perf_counter() < deadline:
            await sleep_or_stop(deadline - time.perf_counter(), self.stop, deadline)

    async def execute(self) -> ExperimentOutcome:
        spec = self.plan.spec
        # bad backend options (the base spec's, or a swept point's) fail before a results
        # directory exists
        backend = self.backend or create_backend(spec.backend.type, spec.backend.options)
        others: dict[str, Backend] = {}
        for point in self.plan.points:
            key = backend_key(point.spec)
            if key != backend_key(spec) and key not in others:
                bspec = point.spec.backend
                others[key] = create_backend(bspec.type, bspec.options)
        make_sampler = _sampler(spec)  # a host missing from its inventory: before the run
        run = self.run or self.prepare()
        outcome = ExperimentOutcome(run, "failed", error="interrupted while starting")
        run.update_experiment(status="running", started=now_iso(), runner=runner_identity())
        self.observer.experiment_started(str(run.path), len(self.plan.trials))
        try:
            await backend.open()
        except BaseException as exc:
            run.update_experiment(status="failed", error=str(exc), ended=now_iso())
            if not isinstance(exc, Exception):
                await _close_quietly(backend)
            raise
        outcome.status, outcome.error = COMPLETE, None
        if isinstance(backend, RuntimeInfoSource):
            run.update_experiment(backend_runtime=backend.runtime_info())
        clock = AnchoredClock()
        opened: dict[str, tuple[Backend, list[Collector]]] = {}
        pools = None  # remote agents' clusters: started once, kept for every trial
        if any(p.spec.load.remote_agents is not None for p in self.plan.points):
            from gridbench.jobflow.run.agent_pool import AgentPools  # Dask's side: only when asked

            pools = AgentPools()
        first: int | None = None  # the first trial's recorded start (clock ns)
        last_end = 0  # the previous trial's end (clock ns)
        sampler: Sampler | None = None
        try:
            if make_sampler is not None:  # RUN/samples/<host>.jsonl, every trial a phase
                sampler = make_sampler(run.path)
                sampler.start()
            opened[backend_key(spec)] = (backend, build_collectors(spec, backend))
            for planned in self.plan.trials:
                if first is not None:
                    await self._wait_turn(planned, clock, first, last_end)
                if self.stop.is_set():
                    outcome.status = "aborted"
                    break
                point = self.plan.points[planned.point_index]
                key = backend_key(point.spec)
                if key not in opened:
                    other = others[key]
                    self.observer.message(
                        f"opening the {point.spec.backend.type} backend of point "
                        f"{point.index + 1} (its sweep changes the backend block)"
                    )
                    opened[key] = (other, [])  # closed at the end even if it fails to open
                    await other.open()
                    opened[key] = (other, build_collectors(point.spec, other))
                point_backend, collectors = opened[key]
                res = await run_trial(
                    TrialEnv(
                        trial_id=planned.trial_id,
                        point_index=planned.point_index,
                        trial_index=planned.trial_index,
                        values=point.values,
                        spec=point.spec,
                        planned_jobs=point.jobs_per_trial,
                        model=load_models.get(point.spec.load.model),
                        backend=point_backend,
                        trial_dir=run.trial_dir(planned.trial_id),
                        experiment=spec,
                        clock=clock,
                        collectors=collectors,
                        observer=self.observer,
                        stop=self.stop,
                        agent_pools=pools,
                    )
                )
                last_end = clock.now_ns()
                if first is None:
                    first = res.started_ns if res.started_ns is not None else last_end
                outcome.trials.append(res)
                run.update_experiment(trials_done=len(outcome.trials))
                if res.status == "aborted":
                    outcome.status = "aborted"
                    break
                if res.status == "failed":
                    outcome.status, outcome.error = "failed", res.error
                    break
            for _, collectors in opened.values():
                for c in collectors:
                    self.observer.message(f"collecting server-side stamps ({c.describe()})")
                    try:
                        await c.finish(
                            run.path, 0.0 if self.stop.is_set() else spec.timeouts.settle
                        )
                    except Exception as exc:
                        self.observer.message(f"collector {c.describe()} failed: {exc}")
                    if isinstance(c, Summarised):
                        for line in c.summary():
                            self.observer.message(f"{c.describe()}: {line}")
        except GridbenchError as exc:
            outcome.status, outcome.error = "failed", str(exc)
            raise
        except BaseException:  # a second Ctrl-C, a bug: the record must not say complete
            outcome.status = "aborted" if self.stop.is_set() else "failed"
            raise
        finally:
            if sampler is not None:
                sampler.stop()
            if pools is not None:
                try:
                    await pools.close()
                except Exception as exc:
                    log.warning("closing the agents' clusters: %s", exc)
            for b in [b for b, _ in opened.values()] or [backend]:
                try:
                    await b.close()
                except Exception as exc:
                    log.warning("closing backend: %s", exc)
            try:  # an agent lost or jobs left: the status says cleanup is needed
                outcome.status = final_state(run, outcome.status)
            except GridbenchError as exc:  # a damaged trial folder: the run still ends
                log.warning("checking what the run left behind: %s", exc)
            run.update_experiment(status=outcome.status, ended=now_iso(), error=outcome.error)
        return outcome
