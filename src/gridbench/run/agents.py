"""The controller's side of remote load: agents on Dask (``load.agents`` as a block).

Per trial the controller starts or connects the cluster (:class:`AgentPool`: a
``LocalCluster`` of N one-thread processes, an ``SSHCluster`` over the hosts with their
venv's python, or a running scheduler), checks gridbench's version on every worker, then

1. estimates each agent's clock offset (:func:`gridbench.run.clock_sync.measure` over
   ``client.run(agent_half)`` exchanges);
2. splits the schedule as the in-process agents do (``split_for_agents``) and sends each
   agent its share with one common start time, converted to its clock;
3. pulls new lines of every agent's own log as they are written (:func:`read_log`, which is
   also the heartbeat) and appends them to the trial's events.csv;
4. estimates the offsets again, and records offset, bound, drift and start skew per agent.

An agent whose worker vanishes mid-trial is recorded as lost; the jobs it had submitted and
not seen end are cancelled through the controller's backend and recorded as lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

import gridbench
from gridbench.errors import GridbenchError
from gridbench.events.log import EventLog
from gridbench.events.model import (
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT_ACK,
)
from gridbench.run import clock_sync
from gridbench.run.agent_live import merge_live
from gridbench.run.agent_worker import (
    AgentTask,
    agent_identity,
    host_clock_state,
    read_log,
    run_agent,
    stop_agent,
)
from gridbench.store.layout import RunDir

if TYPE_CHECKING:
    from gridbench.jobflow.loads.base import AgentsBlock, TrialContext

log = logging.getLogger(__name__)
T = TypeVar("T")
PULL_S = 0.2  # how often the controller pulls agents' logs (and so its heartbeat)
LOST_AFTER = 3  # failed pulls in a row: the agent is gone
END_STAGES = (STAGE_CLIENT_DONE, STAGE_FAILED, STAGE_CANCELLED)


class AgentPool:
    """The Dask cluster of one trial's agents and its asynchronous client."""

    def __init__(self, block: AgentsBlock) -> None:
        self.block = block
        self.cluster: Any = None
        self.client: Any = None  # distributed.Client, asynchronous
        self.addresses: list[str] = []
        self.identity: dict[str, dict[str, Any]] = {}

    async def __aenter__(self) -> AgentPool:
        import distributed

        dd: Any = distributed  # its constructors are untyped (awaitable when asynchronous)
        b = self.block
        try:
            if b.processes:
                self.cluster = await dd.LocalCluster(
                    n_workers=b.processes,
                    processes=True,
                    threads_per_worker=1,
                    dashboard_address=None,
                    asynchronous=True,
                    silence_logs=logging.ERROR,
                )
                address = self.cluster.scheduler_address
            elif b.hosts:
                self.cluster = await dd.SSHCluster(
                    [b.hosts[0], *b.hosts],
                    connect_options=dict(b.ssh_options),
                    worker_options={"nthreads": 1},
                    scheduler_options={"dashboard_address": None},
                    remote_python=f"{b.venv}/bin/python",
                    asynchronous=True,
                )
                address = self.cluster.scheduler_address
            else:
                address = str(b.scheduler)
            self.client = await dd.Client(address, asynchronous=True, timeout="20s")
            await self.client.wait_for_workers(b.processes or len(b.hosts or ()) or 1)
        except GridbenchError:
            raise
        except Exception as exc:
            await self.__aexit__()
            raise GridbenchError(
                f"cannot start or reach the agents' Dask cluster: {type(exc).__name__}: {exc}",
                where="load.agents",
                fix="check the hosts (ssh reachable, venv path), or that the scheduler "
                "address is right and its workers are up",
            ) from None
        self.addresses = sorted(self.client.scheduler_info()["workers"])
        await self._check_versions()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()

    async def _check_versions(self) -> None:
        assert self.client is not None
        try:
            ids = await self.client.run(agent_identity)
        except Exception as exc:  # e.g. gridbench is not importable on a worker
            raise GridbenchError(
                f"an agent cannot run gridbench: {type(exc).__name__}: {exc}",
                where="load.agents",
                fix=f"install gridbench {gridbench.__version__} into the venv the agents run",
            ) from None
        for addr, ident in sorted(ids.items()):
            if ident.get("version") != gridbench.__version__:
                raise GridbenchError(
                    f"the agent on {ident.get('host')} ({addr}) runs gridbench "
                    f"{ident.get('version')}, the controller {gridbench.__version__}",
                    where=f"load.agents ({ident.get('host')})",
                    fix=f"install gridbench {gridbench.__version__} into {ident.get('python')}'s "
                    "venv on that host (pip install gridbench==" + gridbench.__version__ + ")",
                )
        self.identity = ids

    async def call(self, addr: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the event loop of the worker at ``addr``."""
        assert self.client is not None
        out = await self.client.run(fn, *args, workers=[addr], on_error="raise")
        result: T = out[addr]
        return result

    async def offset(self, addr: str, probes: int = clock_sync.DEFAULT_PROBES) -> Any:
        """The NTP-style offset estimate of the agent at ``addr``."""

        async def exchange() -> tuple[int, int]:
            return await self.call(addr, clock_sync.agent_half)

        return await clock_sync.measure(exchange, probes)


def log_path(block: AgentsBlock, run_dir: Path, name: str, trial_id: str) -> str:
    """Where agent ``name`` keeps its log of ``trial_id``: under the run for local
    processes, under ``workdir`` in the agent's home otherwise."""
    if block.processes:
        return str(run_dir / "agents" / name / f"{trial_id}.events.csv")
    return f"{block.workdir}/{run_dir.name}/{name}/{trial_id}.events.csv"


class _Merger:
    """Appends an agent's pulled log lines to the trial's event log; tracks its open jobs."""

    def __init__(self, elog: EventLog) -> None:
        self.elog = elog
        self.open: dict[str, str] = {}  # job -> backend id, acknowledged and not ended
        self.events = 0

    def add(self, data: bytes) -> None:
        for row in csv.reader(io.StringIO(data.decode("utf-8", "replace"))):
            if len(row) != 8 or row[0] == "job":
                continue  # the header, or a line this version cannot read
            job, stage, t, source, prec, agent, off, attrs = row
            self.elog.append(
                job,
                stage,
                int(t),
                source=source,
                precision_ns=int(prec),
                agent=agent,
                clock_offset_ns=int(off),
                attrs=attrs,
            )
            self.events += 1
            if stage == STAGE_SUBMIT_ACK:
                with contextlib.suppress(ValueError, TypeError):
                    self.open[job] = str(json.loads(attrs)["backend_id"])
            elif stage in END_STAGES:
                self.open.pop(job, None)


async def run_remote_open(
    ctx: TrialContext, block: AgentsBlock, offsets: npt.NDArray[np.int64]
) -> None:
    """Run an open-model trial's schedule on the agents of ``block``."""
    from gridbench.jobflow.loads.open import OpenLoad, split_for_agents

    load = ctx.spec.load
    assert isinstance(load, OpenLoad) and ctx.trial_dir is not None
    run_dir = ctx.trial_dir.parent.parent
    elog = ctx.recorders[0].log
    async with AgentPool(block) as pool:
        assert pool.client is not None
        addrs = pool.addresses
        names = [f"agent-{k}" for k in range(len(addrs))]
        before = {a: await pool.offset(a) for a in addrs}
        sync = {a: await pool.call(a, host_clock_state) for a in addrs}
        parts = split_for_agents(offsets, len(addrs))
        idx = split_for_agents(np.arange(len(offsets), dtype=np.int64), len(addrs))
        lead_ns = int((1.0 if block.processes else 2.0) * 1e9)
        start_ns = time.time_ns() + lead_ns  # one start, controller clock
        run_key = uuid.uuid4().hex[:8]
        tasks = [
            AgentTask(
                key=f"{run_key}-{ctx.trial_id}-{name}",
                name=name,
                trial_id=ctx.trial_id,
                spec=ctx.spec,
                offsets_ns=parts[k],
                indices=idx[k],
                n_total=len(offsets),
                seed=ctx.seed,
                start_ns=start_ns + before[a].offset_ns,
                clock_offset_ns=before[a].offset_ns,
                log_path=log_path(block, run_dir, name, ctx.trial_id),
                heartbeat_s=block.heartbeat,
                cancel_on_loss=block.on_controller_loss == "cancel",
                pool=load.pool,
                max_lateness_s=load.max_lateness,
                late_threshold_s=load.late_threshold,
                env=dict(block.env.get(name, {})),
            )
            for k, (name, a) in enumerate(zip(names, addrs, strict=True))
        ]
        _record_logs(run_dir, block, tasks, addrs, pool.identity)
        futures = [
            pool.client.submit(run_agent, t, workers=[a], allow_other_workers=False, pure=False)
            for t, a in zip(tasks, addrs, strict=True)
        ]
        mergers = [_Merger(elog) for _ in tasks]
        results = await _stream(pool, ctx, tasks, addrs, futures, mergers)
        agents: dict[str, Any] = {}
        for k, (t, a) in enumerate(zip(tasks, addrs, strict=True)):
            res = results[k]
            after = None
            if "error" not in res:
                with contextlib.suppress(Exception):
                    after = await pool.offset(a)
            b = before[a]
            skew = res.get("actual_start_ns")
            agents[t.name] = {
                "clock_offset_ns": b.offset_ns,
                "clock_uncertainty_ns": b.bound_ns
                if after is None
                else max(b.bound_ns, after.bound_ns),
                "offset_before": b.to_dict(),
                "offset_after": after.to_dict() if after else None,
                "drift_ppm": clock_sync.drift_ppm(b, after) if after else None,
                "start_skew_ns": None if skew is None else int(skew) - t.start_ns,
                "host": pool.identity.get(a, {}).get("host"),
                "address": a,
                "sync": sync[a],
                "log": t.log_path,
                "events": mergers[k].events,
                **{k2: res.get(k2) for k2 in ("stopped", "late", "dropped", "submitted")},
                **({"lost": res["error"]} if "error" in res else {}),
            }
        ctx.info["agents"] = agents
        ctx.info["agents_start_ns"] = start_ns
        await _account_lost(ctx, tasks, results, mergers)
        ctx.write_info()


async def _stream(
    pool: AgentPool,
    ctx: TrialContext,
    tasks: list[AgentTask],
    addrs: list[str],
    futures: list[Any],
    mergers: list[_Merger],
) -> list[dict[str, Any]]:
    """Pull every agent's new log lines until all are done or gone; their results."""
    offsets = [0] * len(tasks)
    fails = [0] * len(tasks)
    live: dict[str, dict[str, Any]] = {}
    recent: list[tuple[float, bytes]] = []  # (when pulled, histogram): the last second's
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    stopped = False

    async def pull(k: int) -> None:
        t, a = tasks[k], addrs[k]
        while True:
            data, off, snap = await pool.call(a, read_log, t.log_path, offsets[k], t.key)
            offsets[k] = off
            if snap is not None:
                live[t.name] = snap
                if snap.get("hist"):
                    recent.append((time.monotonic(), snap["hist"]))
            if data:
                mergers[k].add(data)
            if len(data) < 1 << 20:  # caught up (a big backlog is read in several pulls)
                return

    while any(r is None for r in results):
        if ctx.stop.is_set() and not stopped:
            stopped = True
            for t, a in zip(tasks, addrs, strict=True):
                with contextlib.suppress(Exception):
                    await pool.call(a, stop_agent, t.key)
        for k, f in enumerate(futures):
            if results[k] is not None:
                continue
            try:
                await pull(k)
                fails[k] = 0
            except Exception as exc:
                fails[k] += 1
                if fails[k] >= LOST_AFTER:
                    results[k] = {"error": f"agent gone: {type(exc).__name__}: {exc}"[:300]}
                    with contextlib.suppress(Exception):
                        await f.cancel()
                    continue
            if f.done():
                try:
                    results[k] = await f
                except Exception as exc:  # the agent itself failed: its share is lost
                    results[k] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                with contextlib.suppress(Exception):
                    await pull(k)  # the lines written after the previous pull
        if live:
            recent[:] = [(w, h) for w, h in recent if w > time.monotonic() - 1.0]
            merge_live(ctx.progress, live, (h for _, h in recent))
        await asyncio.sleep(PULL_S)
    return [r or {} for r in results]


async def _account_lost(
    ctx: TrialContext,
    tasks: list[AgentTask],
    results: list[dict[str, Any]],
    mergers: list[_Merger],
) -> None:
    """Jobs of lost agents that never ended: cancelled through the controller's backend
    (never left queued) and stamped so on the controller's clock; if that fails, stamped
    lost, which 'gridbench cleanup' then cancels."""
    rec = ctx.recorders[0]
    for t, res, m in zip(tasks, results, mergers, strict=True):
        if "error" not in res or not m.open:
            continue
        ids = list(m.open.values())
        stage, note = STAGE_CANCELLED, {"by": "controller", "agent": t.name, "why": "agent lost"}
        try:
            await ctx.backend.cancel(ids)
        except Exception as exc:  # left for 'gridbench cleanup': recorded as lost
            stage = STAGE_FAILED
            note = {"kind": FAIL_LOST, "agent": t.name, "cancel_error": f"{exc}"[:300]}
        now = rec.clock.now_ns()
        for job in m.open:
            rec.stamp(job, stage, now, note)
        ctx.progress.failed += len(m.open)
        m.open.clear()


def _record_logs(
    run_dir: Path,
    block: AgentsBlock,
    tasks: list[AgentTask],
    addrs: list[str],
    identity: dict[str, dict[str, Any]],
) -> None:
    """experiment.json's ``agents``: where each agent's log of each trial is, for collect."""
    with contextlib.suppress(GridbenchError, OSError):
        run = RunDir.open(run_dir)
        known = run.read_experiment().get("agents") or {}
        logs = dict(known.get("logs") or {})
        for t, a in zip(tasks, addrs, strict=True):
            ident = identity.get(a, {})
            logs.setdefault(t.trial_id, {})[t.name] = {
                "path": t.log_path,
                "host": ident.get("host"),
                "home": ident.get("home"),
                "address": a,
            }
        run.update_experiment(
            agents={
                "kind": block.kind,
                "hosts": block.hosts,
                "ssh_options": block.ssh_options,
                "logs": logs,
            }
        )
