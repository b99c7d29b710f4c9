"""One trial: submit per the load model, track, drain, collect server stamps, finalise.

What is common to every load model is here: trial.json, the event log, the recorders, the
status tracker, the resource monitor, the drain, cancelling on abort and the collectors.
How submissions are offered is the load model's runner (:mod:`gridbench.jobflow.loads`),
handed over by the experiment's runner in :class:`TrialEnv`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.errors import ResourceError
from gridbench.jobflow.backends.base import Backend, RuntimeStatsSource
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.model import STAGE_CLIENT_DONE
from gridbench.jobflow.events.trial_log import EventWriter, open_trial_log
from gridbench.jobflow.run.collect import Collector
from gridbench.jobflow.run.heap import frozen_heap
from gridbench.jobflow.run.host_clock import chrony_tracking
from gridbench.jobflow.run.load_model import LoadModel, TrialContext
from gridbench.jobflow.run.observer import Observer, TrialProgress
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.requests import request_factory
from gridbench.jobflow.run.resources import RESOURCES_FILE, ResourceMonitor
from gridbench.jobflow.run.server_resources import (
    SERVER_RESOURCES_FILE,
    ServerMonitor,
    Target,
    missing,
)
from gridbench.jobflow.run.tracker import StatusTracker
from gridbench.jobflow.specbase.model import ExperimentBase
from gridbench.store.layout import write_json

if TYPE_CHECKING:
    from gridbench.jobflow.run.agent_pool import AgentPools

log = logging.getLogger(__name__)
TRIAL_FILE = "trial.json"


@dataclass
class TrialOutcome:
    trial_id: str
    status: str  # complete | aborted | failed
    progress: TrialProgress
    error: str | None = None
    started_ns: int | None = None  # the recorded start (trial.json), the schedule's anchor


async def _queue_length(backend: Backend) -> int | None:
    if not backend.capabilities().queue_length:
        return None
    try:
        return await asyncio.wait_for(backend.queue_length(), timeout=10)
    except Exception as exc:
        log.warning("queue length unavailable: %s", exc)
        return None


def _runtime_stats(backend: Backend) -> dict[str, Any]:
    """Counters an optional ``backend.runtime_stats()`` gives since its previous call.

    The command backend returns ``{"client_processes": {...}}`` (calls, wall and CPU of the
    client programs it spawned); the keys go into trial.json as they are.
    """
    if not isinstance(backend, RuntimeStatsSource):
        return {}
    try:
        stats = backend.runtime_stats()
    except Exception as exc:
        log.warning("backend runtime stats unavailable: %s", exc)
        return {}
    return dict(stats) if isinstance(stats, dict) else {}


def _server_monitor(
    spec: ExperimentBase, trial_dir: Path, info: dict[str, Any]
) -> ServerMonitor | None:
    """The started sampler of the spec's ``server_processes`` (None without any); a
    target matching no process is a note in trial.json, not an error."""
    if not spec.server_processes:
        return None
    targets = [Target(p.shown, p.name, p.pid) for p in spec.server_processes]
    notes = missing(targets)
    if notes:
        info.setdefault("notes", []).extend(notes)
        for n in notes:
            log.warning("%s", n)
    server = ServerMonitor(trial_dir / SERVER_RESOURCES_FILE, targets)
    server.start()
    return server


def _first_leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@dataclass(frozen=True)
class TrialEnv:
    """One trial as the experiment's runner hands it over: which trial of which point, the
    point's backend and load model (the runner looks the model up; it knows every model),
    and what the experiment's trials share."""

    trial_id: str
    point_index: int
    trial_index: int
    values: dict[str, Any]  # the point's sweep values as written
    spec: ExperimentBase  # the point's spec (its sweep values applied)
    planned_jobs: int | None  # None: open-ended (closed loop)
    model: LoadModel
    backend: Backend  # the point's backend
    trial_dir: Path
    experiment: ExperimentBase  # the experiment's spec: safety, server processes
    clock: AnchoredClock
    collectors: Sequence[Collector]
    observer: Observer
    stop: asyncio.Event
    agent_pools: AgentPools | None = None  # the experiment's agents' clusters, kept


async def _start_info(env: TrialEnv) -> dict[str, Any]:
    """trial.json as the trial starts."""
    pspec, load, backend = env.spec, env.spec.load, env.backend
    return {
        "trial_id": env.trial_id,
        "point_index": env.point_index,
        "trial_index": env.trial_index,
        "point": env.values,
        "load_model": load.model,
        "offered_rate_per_s": None,
        "planned_jobs": env.planned_jobs,
        "started_ns": env.clock.now_ns(),
        "submit_end_ns": None,
        "ended_ns": None,
        "status": "running",
        # client_done is seen by polling: declared at the poll interval (events carry the
        # actual bracket between the two status answers, longer when a pause was stretched)
        "chain": backend.stage_chain()
        .polled(STAGE_CLIENT_DONE, int(pspec.timeouts.status_interval * 1e9))
        .to_dict(),
        "backend": backend.name,
        "agents": {
            f"agent-{k}": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0}
            for k in range(load.agent_count)
        }
        if load.remote_agents is None
        else {},
        "background_queue": {"start": await _queue_length(backend), "end": None},
        "cpu_count": os.cpu_count(),
        "late_threshold_ns": int(load.late_threshold * 1e9),
        "status_interval_ns": int(pspec.timeouts.status_interval * 1e9),
        "pid": os.getpid(),
        # the controller's own NTP state: how far corrected times may be from true time
        "clock_sync": await asyncio.to_thread(chrony_tracking),
    }


async def _give_up(env: TrialEnv, tracker: StatusTracker, info: dict[str, Any]) -> None:
    """Past the drain time-out, or aborted: cancel the jobs in flight unless the spec says
    otherwise, and say what became of them."""
    stop, tid = env.stop, env.trial_id
    cancel = env.experiment.safety.cancel_on_abort or not stop.is_set()
    n_left = len(tracker.inflight)
    n, cancel_error = await tracker.give_up(cancel=cancel)
    if cancel_error:
        env.observer.message(
            f"{tid}: {cancel_error}; {n_left} jobs recorded as lost "
            "(run 'gridbench cleanup' on this run)"
        )
        info["cancel_error"] = cancel_error
    elif n:
        env.observer.message(f"{tid}: cancelled {n} outstanding jobs")
    else:
        env.observer.message(
            f"{tid}: {n_left} jobs left running, recorded as lost "
            "(safety.cancel_on_abort is off; 'gridbench cleanup' cancels them)"
        )


async def _collect(
    env: TrialEnv, elog: EventWriter, tracker: StatusTracker, info: dict[str, Any]
) -> None:
    """The collectors' server-side stamps of this trial (a failure is noted, not raised)."""
    settle_s = 0.0 if env.stop.is_set() else env.spec.timeouts.settle
    for c in env.collectors:
        try:
            await c.collect(elog, tracker.names, final=True, settle_s=settle_s)
        except Exception as exc:
            env.observer.message(f"{env.trial_id}: collector {c.describe()} failed: {exc}")
            info.setdefault("collector_errors", []).append(str(exc)[:500])


def _end_info(info: dict[str, Any], tracker: StatusTracker, elog: EventWriter) -> None:
    """What the tracker and the event log counted, into trial.json."""
    info["status_calls"] = tracker.status_calls
    info["status_sweeps"] = tracker.sweeps
    info["status_pause_max_ns"] = int(tracker.longest_pause * 1e9)
    info["status_pauses_stretched"] = tracker.stretched
    # server stamps for ids this trial never acknowledged (e.g. a submit abandoned at
    # its time-out): not ours to attribute, but counted rather than silently lost
    info["server_stamps_unmatched"] = tracker.unmatched + tracker.unmatched_dropped
    info["events"] = elog.count


async def run_trial(env: TrialEnv) -> TrialOutcome:
    """Run one trial of a point; everything it learns is on disk when it returns."""
    with frozen_heap():
        return await _run_trial(env)


async def _run_trial(env: TrialEnv) -> TrialOutcome:
    pspec, load, backend, clock = env.spec, env.spec.load, env.backend, env.clock
    observer, stop, tid = env.observer, env.stop, env.trial_id
    trial_dir = env.trial_dir
    trial_dir.mkdir(parents=True, exist_ok=True)
    seed = load.seed * 100_003 + env.point_index * 1009 + env.trial_index
    progress = TrialProgress(tid, env.planned_jobs)
    info = await _start_info(env)

    def write_info() -> None:
        write_json(trial_dir / TRIAL_FILE, info)

    write_info()
    _runtime_stats(backend)  # start the backend's counters afresh for this trial
    elog = open_trial_log(trial_dir, pspec.trial.event_log)
    # remote agents stamp their own events; the controller's one recorder is the tracker's
    n_recs = load.agent_count if load.remote_agents is None else 1
    recs = [Recorder(elog, clock, f"agent-{k}") for k in range(n_recs)]
    tracker = StatusTracker(
        backend,
        recs[0],
        progress,
        pspec.timeouts.status_interval,
        max_duty=pspec.timeouts.status_max_duty,
    )
    monitor = ResourceMonitor(trial_dir / RESOURCES_FILE)
    monitor.start()
    server = _server_monitor(env.experiment, trial_dir, info)
    observer.trial_started(progress)
    submission_done = asyncio.Event()
    full: list[ResourceError] = []
    flusher = asyncio.create_task(_flush_and_report(elog, progress, observer, stop, full))
    tracking = asyncio.create_task(tracker.run_until(submission_done))
    status, error = "complete", None
    try:
        progress.phase = "submitting"
        await env.model.run(
            TrialContext(
                backend=backend,
                spec=pspec,
                trial_id=tid,
                seed=seed,
                recorders=recs,
                tracker=tracker,
                progress=progress,
                stop=stop,
                requests=lambda n: request_factory(pspec, tid, n, seed),
                info=info,
                write_info=write_info,
                trial_dir=trial_dir,
                agent_pools=env.agent_pools,
            )
        )
        info["submit_end_ns"] = clock.now_ns()
        submission_done.set()
        await tracking
        progress.phase = "draining"
        observer.trial_progress(progress)
        # without cancel_on_abort, an abort still lets the jobs drain (up to the time-out)
        cancel_on_abort = env.experiment.safety.cancel_on_abort
        await tracker.drain(pspec.timeouts.drain, stop if cancel_on_abort else None)
        if tracker.fatal:
            status, error = "failed", str(tracker.fatal)
    except Exception as exc:  # record, finalise, and let the experiment decide
        first = _first_leaf(exc)
        status, error = "failed", f"{type(first).__name__}: {first}"
        log.debug("trial %s failed", tid, exc_info=True)
    finally:
        submission_done.set()
        with contextlib.suppress(BaseException):
            await tracking
        if info["submit_end_ns"] is None:
            info["submit_end_ns"] = clock.now_ns()
        if stop.is_set():
            status = "aborted"
        if tracker.inflight:
            await _give_up(env, tracker, info)
        progress.phase = "collecting"
        observer.trial_progress(progress)
        await _collect(env, elog, tracker, info)
        info["background_queue"]["end"] = await _queue_length(backend)
        info["ended_ns"] = clock.now_ns()
        info["status"] = status
        info["error"] = error
        _end_info(info, tracker, elog)
        info.update(_runtime_stats(backend))
        flusher.cancel()
        with contextlib.suppress(BaseException):
            await flusher
        if full:  # what reached the disk stays; say which file, and stop here
            raise full[0]
        elog.close()
        monitor.stop()
        if server is not None:
            server.stop()
        write_json(trial_dir / TRIAL_FILE, info)
        progress.phase = status
        observer.trial_finished(progress)
    return TrialOutcome(tid, status, progress, error, info["started_ns"])


async def _flush_and_report(
    elog: EventWriter,
    progress: TrialProgress,
    observer: Observer,
    stop: asyncio.Event,
    failed: list[ResourceError],
) -> None:
    """Flush small batches often (bounded loss on kill -9) and publish progress; a disk
    that refuses the log stops the run (``stop``), its error kept in ``failed``."""
    while True:
        await asyncio.sleep(0.1)
        try:
            await elog.flush_soon()
        except ResourceError as exc:
            failed.append(exc)
            stop.set()
            return
        observer.trial_progress(progress)
