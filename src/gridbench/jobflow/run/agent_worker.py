"""The agent's side of remote load: what runs inside a Dask worker (a process or a host).

The controller (:mod:`gridbench.jobflow.run.agents`) sends each agent one :class:`AgentTask` per
trial. The agent builds its own backend (configured for its host), keeps its share of the
intended schedule from one common start time given on its own clock, tracks and drains its
jobs, and writes every event to its own append-only log on its host. The controller pulls
new bytes of that log every few hundred milliseconds (:func:`read_log`), or reads it itself
when it is on its own disk (``processes``); each pull, or :func:`live_snapshot` call, is
also the controller's heartbeat. When the heartbeat stops for ``heartbeat_s`` the agent stops
submitting and, unless told to keep them, cancels the jobs it submitted: its log survives
for ``gridbench collect``.

Module-level state is per worker process: the functions the controller calls with
``client.run`` execute in the worker's event loop thread, the trial in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from gridbench import __version__
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog
from gridbench.jobflow.events.ipc_pull import complete_messages
from gridbench.jobflow.events.trial_log import open_log
from gridbench.jobflow.run.agent_live import LiveRecorder
from gridbench.jobflow.run.heap import frozen_heap
from gridbench.jobflow.run.host_clock import chrony_tracking
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.open_loop import OpenLoop, Submitter, run_open_loop
from gridbench.jobflow.run.requests import request_factory
from gridbench.jobflow.run.tracker import StatusTracker

if TYPE_CHECKING:
    from gridbench.jobflow.specbase.model import ExperimentBase

#: trial key -> time.monotonic() of the controller's last word (a pull or a probe)
_heard: dict[str, float] = {}
#: trial key -> set when the controller asks the agent to stop (Ctrl-C, abort)
_stops: dict[str, threading.Event] = {}
#: trial key -> (recorder, progress) of the running trial, for the live snapshot of a pull
_live: dict[str, tuple[LiveRecorder, TrialProgress]] = {}
READ_LIMIT = 8 << 20  # bytes of log one pull returns at most


@dataclass(frozen=True)
class AgentTask:
    """One agent's part of one trial, as sent by the controller."""

    key: str  # run id + trial id + agent: unique per worker
    name: str  # agent-0, agent-1, ...
    trial_id: str
    spec: ExperimentBase  # the point's spec (backend block, job, timeouts)
    offsets_ns: npt.NDArray[np.int64]  # its share of the intended offsets
    indices: npt.NDArray[np.int64]  # the job numbers of that share
    n_total: int  # jobs of the whole trial (sizes the request factory as the controller's)
    seed: int
    start_ns: int  # the common start, on this agent's clock
    clock_offset_ns: int  # the controller's estimate (agent − controller), for the events
    log_path: str  # its append-only log (relative: under the agent's home)
    heartbeat_s: float
    cancel_on_loss: bool
    pool: int  # the open model's submitters, lateness limits and time-outs
    max_lateness_s: float
    late_threshold_s: float
    env: dict[str, str] = field(default_factory=dict)


def agent_identity() -> dict[str, Any]:
    """What the controller checks at connect time: version, host, python, home. Also loads
    what a trial needs, so that the first trial's start is not late by its imports."""
    for module in (
        "gridbench.jobflow.spec.model",
        "gridbench.jobflow.loads",
        "gridbench.jobflow.run.trial",
    ):
        importlib.import_module(module)
    return {
        "version": __version__,
        "host": socket.gethostname(),
        "python": sys.executable,
        "pid": os.getpid(),
        "home": str(Path.home()),
    }


def resolve(path: str) -> Path:
    """A log path as the agent sees it: a relative one is under its home."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path.home() / p


def heard(key: str) -> None:
    """The controller spoke: push the heartbeat deadline back."""
    _heard[key] = time.monotonic()


def live_snapshot(key: str) -> dict[str, Any] | None:
    """The controller's heartbeat to trial ``key``, answered with that trial's live snapshot
    (counters, the submit-latency histogram since the previous one); None once it ended."""
    heard(key)
    running = _live.get(key)
    return running[0].snapshot(running[1]) if running is not None else None


def read_log(
    path: str, offset: int, key: str | None = None
) -> tuple[bytes, int, dict[str, Any] | None]:
    """The complete lines of the agent's log from ``offset`` on (at most :data:`READ_LIMIT`
    bytes), or of a columnar log its complete IPC messages up to its last whole record
    batch (:func:`complete_messages`), the offset after them and, given trial ``key``,
    :func:`live_snapshot`. Runs on the agent for a remote one; the controller calls it
    itself when the log is local."""
    live = live_snapshot(key) if key is not None else None
    columnar = path.endswith(ARROW_SUFFIX)
    try:
        with open(resolve(path), "rb") as fh:
            fh.seek(offset)
            data = fh.read(READ_LIMIT)
            end = complete_messages(data) if columnar else data.rfind(b"\n") + 1
            if columnar and not end and len(data) == READ_LIMIT:
                data += fh.read()  # one batch longer than a pull: read it whole
                end = complete_messages(data)
    except FileNotFoundError:
        return b"", offset, live
    # a torn last line, or a message being written, waits for the next pull
    return data[:end], offset + end, live


def stop_agent(key: str) -> bool:
    """Ask the agent running trial ``key`` to stop (it drains nothing more, then cancels)."""
    ev = _stops.get(key)
    if ev is not None:
        ev.set()
    return ev is not None


def host_clock_state() -> dict[str, Any]:
    """The agent host's own sync state (``chronyc -c tracking``; unavailable: why not)."""
    return chrony_tracking()


def run_agent(task: AgentTask) -> dict[str, Any]:
    """Run one agent's share of a trial to its end (a Dask task: blocks its worker thread)."""
    stop = threading.Event()
    _stops[task.key] = stop
    heard(task.key)
    try:
        with frozen_heap():
            return asyncio.run(_run(task, stop))
    finally:
        _stops.pop(task.key, None)
        _heard.pop(task.key, None)
        _live.pop(task.key, None)


async def _run(task: AgentTask, stop_flag: threading.Event) -> dict[str, Any]:
    os.environ.update(task.env)
    cpu0 = time.process_time()  # the agent's process is its own: its CPU is the client's
    spec = task.spec
    clock = AnchoredClock()
    # its suffix is its format (the trial log's); the watchdog flushes every 0.1 s, and
    # an Arrow batch has a fixed cost (~50 us), so a columnar log batches what 0.1 s brings
    columnar = task.log_path.endswith(ARROW_SUFFIX)
    elog = open_log(resolve(task.log_path), batch_size=ArrowEventLog.chunk if columnar else 64)
    rec = LiveRecorder(elog, clock, agent=task.name, clock_offset_ns=task.clock_offset_ns)
    backend = create_backend(spec.backend.type, spec.backend.options)
    progress = TrialProgress(task.trial_id, len(task.offsets_ns))
    _live[task.key] = (rec, progress)
    t = spec.timeouts
    tracker = StatusTracker(backend, rec, progress, t.status_interval, max_duty=t.status_max_duty)
    stop = asyncio.Event()
    reason: list[str] = []

    async def watchdog() -> None:
        while True:
            await asyncio.sleep(0.1)
            await elog.flush_soon()  # the controller pulls only complete, flushed lines
            if stop_flag.is_set() and not reason:
                reason.append("stopped")
            elif time.monotonic() - _heard.get(task.key, 0.0) > task.heartbeat_s and not reason:
                reason.append("controller_lost")
            if reason:
                stop.set()

    result: dict[str, Any] = {"agent": task.name, **agent_identity()}
    await backend.open()
    dog = asyncio.create_task(watchdog())
    done = asyncio.Event()
    tracking = asyncio.create_task(tracker.run_until(done))
    try:
        start_mono = clock.wall_to_mono(task.start_ns)
        with contextlib.suppress(TimeoutError):  # sleep to the common start, unless stopped
            await asyncio.wait_for(stop.wait(), max(0, start_mono - time.perf_counter_ns()) / 1e9)
        result["actual_start_ns"] = clock.now_ns()
        progress.phase = "submitting"  # the live page shows each agent's phase
        if not stop.is_set():
            await run_open_loop(
                Submitter(backend, rec, tracker, progress, t.submit),
                task.offsets_ns,
                task.indices,
                # the controller's exact job requests
                request_factory(spec, task.trial_id, task.n_total, task.seed),
                OpenLoop(task.pool, task.max_lateness_s, task.late_threshold_s),
                start_mono_ns=start_mono,
                stop=stop,
            )
        result["submit_end_ns"] = clock.now_ns()
        done.set()
        await tracking
        progress.phase = "draining"
        await tracker.drain(t.drain, stop)
    finally:
        done.set()
        with contextlib.suppress(BaseException):
            await tracking
        why = reason[0] if reason else None
        # past the drain: cancel; stopped (Ctrl-C): as safety.cancel_on_abort says; the
        # controller gone: as on_controller_loss says. Not cancelled: recorded lost.
        cancel = {"controller_lost": task.cancel_on_loss, "stopped": spec.safety.cancel_on_abort}
        n_left = len(tracker.inflight)
        cancelled, cancel_error = await tracker.give_up(cancel=cancel.get(why or "", True))
        dog.cancel()
        with contextlib.suppress(BaseException):
            await dog
        with contextlib.suppress(Exception):
            await backend.close()
        elog.close()
    result.update(
        stopped=reason[0] if reason else None,
        left_in_flight=n_left,
        cancelled=cancelled,
        cancel_error=cancel_error,
        late=progress.late,
        dropped=progress.dropped,
        submitted=progress.submitted,
        events=elog.count,
        log=str(resolve(task.log_path)),
        cpu_s=time.process_time() - cpu0,
    )
    return result
