"""A job-flow run in the dashboard: the runner its pages hand the dashboard's run manager
(:class:`JobFlowRun`, a :class:`~gridbench.family.dashboard.LiveRunner`), and its live
view, fed by the experiment runner's observer.

:class:`JobFlowLive` keeps counters per trial, a bounded history of chart samples (offered
against achieved submission rate, submit latency, failures, jobs per client-visible
stage, client CPU) and each agent's counters when the load runs on agents (``load.agents``
as a block). Every change goes at once to the dashboard's
:class:`~gridbench.family.dashboard.LiveSink`, which pushes it to each listener (the
server-sent-event streams); nothing polls. Everything here runs on the event loop of the
server, the same loop as the runner.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import numpy as np
import psutil

from gridbench.family.dashboard import LiveSink, MetricSample, RunEnd
from gridbench.jobflow.backends.base import (
    Backend,
    BulkSubmitter,
    Capabilities,
    JobRequest,
    JobStatus,
    OrphanStopper,
    ReportPublisher,
    RuntimeInfoSource,
    RuntimeStatsSource,
    SubmitError,
)
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.model import Event
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.spec.plan import Plan
from gridbench.jobflow.web.live_metrics import live_samples
from gridbench.store.layout import RunDir

#: Chart samples at most this often (s): rates over shorter windows are mostly noise.
SAMPLE_PERIOD_S = 0.5
#: Samples kept per experiment (about half an hour at the sample period).
MAX_SAMPLES = 3600


class MeasuringBackend:
    """Wraps a backend to time submit calls and count job states per status sweep.

    The Backend methods are forwarded explicitly; the optional hooks (``isinstance`` against
    the runtime-checkable protocols of :mod:`gridbench.jobflow.backends.base`, which on Python 3.12+
    ignore ``__getattr__``) only by the subclass :func:`measuring` builds for the inner
    backend, so the wrapper has exactly the hooks the wrapped backend has.
    """

    def __init__(self, inner: Backend) -> None:
        self._inner = inner
        self.submit_seconds: list[float] = []
        self.submit_errors = 0
        self.submitting = 0
        self.states: dict[str, int] = {}

    @property
    def name(self) -> str:
        return str(self._inner.name)

    def stage_chain(self) -> StageChain:
        return self._inner.stage_chain()

    def capabilities(self) -> Capabilities:
        return self._inner.capabilities()

    async def open(self) -> None:
        await self._inner.open()

    async def close(self) -> None:
        await self._inner.close()

    async def submit(self, job: JobRequest) -> str:
        self.submitting += 1
        t0 = time.perf_counter()
        try:
            return await self._inner.submit(job)
        except BaseException:
            self.submit_errors += 1
            raise
        finally:
            self.submitting -= 1
            self.submit_seconds.append(time.perf_counter() - t0)

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        res = await self._inner.status(ids)
        self.states = dict(Counter(st.state.value for st in res.values()))
        return res

    async def cancel(self, ids: Sequence[str]) -> None:
        await self._inner.cancel(ids)

    async def fetch_output(self, backend_id: str) -> bytes:
        return await self._inner.fetch_output(backend_id)

    async def server_events(self) -> list[Event]:
        return await self._inner.server_events()

    async def queue_length(self) -> int | None:
        return await self._inner.queue_length()

    def take_latencies(self) -> list[float]:
        out, self.submit_seconds = self.submit_seconds, []
        return out


# One forwarding mixin per optional hook; the inner backend is checked for each protocol.
class _Bulk(MeasuringBackend):
    async def submit_bulk(self, jobs: Sequence[JobRequest]) -> list[str | SubmitError]:
        assert isinstance(self._inner, BulkSubmitter)
        return await self._inner.submit_bulk(jobs)


class _Stats(MeasuringBackend):
    def runtime_stats(self) -> dict[str, Any]:
        assert isinstance(self._inner, RuntimeStatsSource)
        return self._inner.runtime_stats()


class _Info(MeasuringBackend):
    def runtime_info(self) -> dict[str, Any]:
        assert isinstance(self._inner, RuntimeInfoSource)
        return self._inner.runtime_info()


class _Orphans(MeasuringBackend):
    def stop_orphans(self, pids: Sequence[int]) -> list[int]:
        assert isinstance(self._inner, OrphanStopper)
        return self._inner.stop_orphans(pids)


class _Reports(MeasuringBackend):
    def report_sources(self) -> list[tuple[str, str]]:
        assert isinstance(self._inner, ReportPublisher)
        return self._inner.report_sources()


#: Each optional hook protocol and the mixin that forwards it.
HOOKS: tuple[tuple[type, type[MeasuringBackend]], ...] = (
    (BulkSubmitter, _Bulk),
    (RuntimeStatsSource, _Stats),
    (RuntimeInfoSource, _Info),
    (OrphanStopper, _Orphans),
    (ReportPublisher, _Reports),
)
_CLASSES: dict[tuple[type[MeasuringBackend], ...], type[MeasuringBackend]] = {}


def measuring(inner: Backend) -> MeasuringBackend:
    """``inner`` wrapped in a :class:`MeasuringBackend` with exactly its optional hooks."""
    mixins = tuple(m for proto, m in HOOKS if isinstance(inner, proto))
    cls = _CLASSES.get(mixins)
    if cls is None:
        name = "Measuring" + "".join(m.__name__.strip("_") for m in mixins)
        cls = _CLASSES[mixins] = (
            type(name, (*mixins, MeasuringBackend), {}) if mixins else MeasuringBackend
        )
    return cls(inner)


def _trial_rows(plan: Plan) -> list[dict[str, Any]]:
    rows = []
    for t in plan.trials:
        p = plan.points[t.point_index]
        rows.append(
            {
                "trial_id": t.trial_id,
                "point": ", ".join(f"{k}={v}" for k, v in p.values.items()) or "-",
                "offered_rate_per_s": p.peak_rate_per_s,
                "planned": p.jobs_per_trial,
                "status": "pending",
                "submitted": 0,
                "acknowledged": 0,
                "completed": 0,
                "failed": 0,
                "dropped": 0,
                "late": 0,
                "in_flight": 0,
                "phase": "pending",
                "started": None,
                "ended": None,
            }
        )
    return rows


class JobFlowLive:
    """Job flow's part of one experiment's live view; also the runner's Observer. Updates
    go to ``sink`` (the dashboard's, set when the run starts)."""

    def __init__(self, plan: Plan, backend: MeasuringBackend) -> None:
        self.backend_type = plan.spec.backend.type
        self.started: float | None = None
        self.trials = _trial_rows(plan)
        self._index = {r["trial_id"]: i for i, r in enumerate(self.trials)}
        self.current: str | None = None
        self.samples: deque[dict[str, Any]] = deque(maxlen=MAX_SAMPLES)
        self.backend = backend
        self.sink: LiveSink | None = None
        self._last: tuple[float, int, int, int, int] | None = None
        self._proc = psutil.Process()
        self._proc.cpu_percent(None)  # the first call only starts the measurement
        self.on_trial_finished: list[Callable[[TrialProgress], None]] = []

    def snapshot(self) -> dict[str, Any]:
        """Job flow's part of what a page needs to draw the live view from scratch."""
        done = sum(1 for t in self.trials if t["status"] not in ("pending", "running"))
        return {
            "backend": self.backend_type,
            "trials_done": done,
            "trials_total": len(self.trials),
            "current": self.current,
            "trials": self.trials,
            "samples": list(self.samples),
            "started": self.started,
        }

    def publish(self, kind: str, data: Any) -> None:
        if self.sink is not None:
            self.sink.publish(kind, data)

    # -- Observer ----------------------------------------------------------------------
    def experiment_started(self, run_dir: str, total_trials: int) -> None:
        self.started = time.time()
        if self.sink is not None:
            self.sink.set_status("running")

    def trial_started(self, progress: TrialProgress) -> None:
        self.current = progress.trial_id
        self._last = None
        row = self._update(progress, "running")
        row["started"] = time.time()
        self.publish("trial", row)

    def trial_progress(self, progress: TrialProgress) -> None:
        row = self._update(progress, "running")
        self.publish("progress", row)
        self._sample(progress)

    def trial_finished(self, progress: TrialProgress) -> None:
        row = self._update(progress, progress.phase)
        row["ended"] = time.time()
        self.publish("trial", row)
        for hook in self.on_trial_finished:
            hook(progress)

    def message(self, text: str) -> None:
        if self.sink is not None:
            self.sink.message(text)

    # -- internals -----------------------------------------------------------------------
    def _update(self, p: TrialProgress, status: str) -> dict[str, Any]:
        i = self._index.get(p.trial_id)
        if i is None:
            return {}
        row = self.trials[i]
        counters = asdict(p)
        extra = counters.pop("extra", None) or {}
        counters.pop("trial_id", None)
        row.update(counters)
        if "agents" in extra:  # agents on Dask (run.agent_live.merge_live): each one's counters
            row["agents"] = extra["agents"]
            row["submit_latency_ms"] = extra.get("submit_latency_ms")
        row["status"] = status
        return row

    def _sample(self, p: TrialProgress) -> None:
        now = time.monotonic()
        cur = (now, p.submitted + p.dropped, p.acknowledged, p.completed, p.failed)
        if self._last is None:
            self._last = cur
            return
        dt = now - self._last[0]
        if dt < SAMPLE_PERIOD_S:
            return
        lat = np.asarray(self.backend.take_latencies(), dtype=float)
        states = self.backend.states
        sample = {
            "t": round(time.time(), 3),
            "trial": p.trial_id,
            "offered_per_s": (cur[1] - self._last[1]) / dt,
            "achieved_per_s": (cur[2] - self._last[2]) / dt,
            "completed_per_s": (cur[3] - self._last[3]) / dt,
            "failures_per_s": (cur[4] - self._last[4]) / dt,
            "failed_total": p.failed,
            "submit_mean_s": float(lat.mean()) if lat.size else None,
            "submit_p95_s": float(np.percentile(lat, 95)) if lat.size else None,
            "submit_max_s": float(lat.max()) if lat.size else None,
            "submitting": self.backend.submitting,
            "queued": states.get("queued", 0),
            "running": states.get("running", 0),
            "in_flight": p.in_flight,
            "completed_total": p.completed,
            "client_cpu_percent": self._proc.cpu_percent(None),
        }
        self._last = cur
        self.samples.append(sample)
        self.publish("sample", sample)


class JobFlowRun:
    """A planned job-flow experiment as the dashboard's run manager drives it
    (:class:`~gridbench.family.dashboard.LiveRunner`): its results folder is made at once (so it has
    an id), its backend is wrapped to be measured, and the live view is its observer."""

    live_template = "jobflow_live.html"  # this package's templates/
    live_script = "/static/jobflow/live.js"  # this package's static/

    def __init__(self, plan: Plan, data: dict[str, Any], root: Path) -> None:
        spec = plan.spec
        inner = create_backend(spec.backend.type, spec.backend.options)  # bad options: now
        backend = measuring(inner)
        self.runner = ExperimentRunner(plan, data, root, backend=cast(Backend, backend))
        self.run: RunDir = self.runner.prepare()
        self.name = spec.name
        self.live = JobFlowLive(plan, backend)
        self.runner.observer = self.live
        self.live.on_trial_finished.append(self._after_trial)
        self._finish = False

    def snapshot(self) -> dict[str, Any]:
        return self.live.snapshot()

    def metric_samples(self, *, final: bool) -> list[MetricSample]:
        """Each started trial's job counters, and while the run goes on the latest chart
        sample's rates, for the dashboard's ``/metrics`` (``MetricSource``)."""
        samples = self.live.samples
        return live_samples(self.live.trials, samples[-1] if samples else None, final=final)

    async def execute(self, sink: LiveSink) -> RunEnd:
        """Run every trial (updates to ``sink``); analysed after when a trial ran."""
        self.live.sink = sink
        outcome = await self.runner.execute()
        return RunEnd(outcome.status, outcome.error, recorded=bool(outcome.trials))

    def abort(self) -> None:
        """As Ctrl-C: stop submitting, cancel the outstanding jobs, save the record."""
        self.runner.abort()

    def finish_current(self) -> None:
        """Let the running trial finish and start no more."""
        self._finish = True

    def _after_trial(self, progress: TrialProgress) -> None:
        if self._finish and progress.phase == "complete":
            self.runner.abort()  # checked before the next trial starts: none will
