"""The controller's side of remote load: agents on Dask (``load.agents`` as a block).

At its first trial the controller starts or connects the cluster (:class:`AgentPool`: N
one-thread ``dask worker`` processes of its own, an ``SSHCluster`` over the hosts with their
venv's python, or a running scheduler) and checks gridbench's version on every worker; it
keeps the cluster for the next trials (:class:`AgentPools`). Per trial it

1. estimates each agent's clock offset (:func:`gridbench.jobflow.run.clock_sync.measure` over
   ``client.run(agent_half)`` exchanges);
2. splits the schedule as the in-process agents do (``split_for_agents``) and sends each
   agent its share with one common start time, converted to its clock;
3. pulls new lines of every agent's own log as they are written (:func:`read_log`, which is
   also the heartbeat; local agents' logs it reads from its own disk) and appends them to
   the trial's event log (an agent writes its log in the trial log's format: CSV lines
   appended as bytes to an events.csv; Arrow IPC messages decoded against the schema and
   dictionaries pulled before, :mod:`gridbench.jobflow.events.ipc_pull`, and appended as
   one record batch per pull to events.arrows);
4. estimates the offsets again, and records offset, bound, drift and start skew per agent.

An agent whose worker vanishes mid-trial is recorded as lost; the jobs it had submitted and
not seen end are cancelled through the controller's backend and recorded as lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from gridbench.errors import GridbenchError
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog
from gridbench.jobflow.events.model import (
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_FAILED,
)
from gridbench.jobflow.events.trial_log import read_event_log
from gridbench.jobflow.run import clock_sync
from gridbench.jobflow.run.agent_live import merge_live
from gridbench.jobflow.run.agent_merge import LogMerger
from gridbench.jobflow.run.agent_pool import AgentPool, AgentPools
from gridbench.jobflow.run.agent_worker import (
    AgentTask,
    host_clock_state,
    live_snapshot,
    read_log,
    run_agent,
    stop_agent,
)
from gridbench.jobflow.run.open_loop import OpenLoop, split_for_agents
from gridbench.jobflow.run.outstanding import outstanding_jobs
from gridbench.store.layout import RunDir

if TYPE_CHECKING:
    from gridbench.jobflow.run.load_model import TrialContext
    from gridbench.jobflow.specbase.load import AgentsBlock

log = logging.getLogger(__name__)
T = TypeVar("T")
PULL_S = 0.2  # how often the controller pulls agents' logs (and so its heartbeat)
TALK_S = 0.5  # how often it speaks to local agents, whose logs it reads itself
LOST_AFTER = 3  # failed pulls in a row: the agent is gone
PULL_TIMEOUT_S = 10.0  # one pull (a worker that does not answer counts as a failed pull)


def log_path(
    block: AgentsBlock, run_dir: Path, name: str, trial_id: str, columnar: bool = False
) -> str:
    """Where agent ``name`` keeps its log of ``trial_id``: under the run for local
    processes, under ``workdir`` in the agent's home otherwise; ``.events.arrows`` when
    the trial's own log is columnar, else ``.events.csv``."""
    file = f"{trial_id}.events{ARROW_SUFFIX if columnar else '.csv'}"
    if block.processes:
        return str(run_dir / "agents" / name / file)
    return f"{block.workdir}/{run_dir.name}/{name}/{file}"


async def run_remote_open(
    ctx: TrialContext, block: AgentsBlock, offsets: npt.NDArray[np.int64], loop: OpenLoop
) -> None:
    """Run an open-model trial's schedule on the agents of ``block``, each keeping its share
    as ``loop`` says (on the experiment's cluster of agents, :class:`AgentPools`, when the
    runner keeps one; else on one of its own)."""
    assert ctx.trial_dir is not None
    block = block.resolved()  # inventory names -> addresses (docs/hosts.md)
    run_dir = ctx.trial_dir.parent.parent
    log_dir = run_dir / "agents" if block.processes else None
    pools = ctx.agent_pools or AgentPools()
    try:
        pool = await pools.get(block, log_dir)
        try:
            await _run_on(pool, ctx, block, loop, offsets, run_dir)
        finally:
            pool.released = time.monotonic()
    finally:
        if ctx.agent_pools is None:
            await pools.close()


async def _run_on(
    pool: AgentPool,
    ctx: TrialContext,
    block: AgentsBlock,
    loop: OpenLoop,
    offsets: npt.NDArray[np.int64],
    run_dir: Path,
) -> None:
    elog = ctx.recorders[0].log
    columnar = isinstance(elog, ArrowEventLog)  # the agents write the trial log's format
    assert pool.client is not None
    addrs, names = pool.addresses, pool.names
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
            log_path=log_path(block, run_dir, name, ctx.trial_id, columnar),
            heartbeat_s=block.heartbeat,
            cancel_on_loss=block.on_controller_loss == "cancel",
            pool=loop.pool,
            max_lateness_s=loop.max_lateness_s,
            late_threshold_s=loop.late_threshold_s,
            env=dict(block.env.get(name, {})),
        )
        for k, (name, a) in enumerate(zip(names, addrs, strict=True))
    ]
    _record_logs(run_dir, block, tasks, addrs, pool)
    futures = [
        pool.client.submit(run_agent, t, workers=[a], allow_other_workers=False, pure=False)
        for t, a in zip(tasks, addrs, strict=True)
    ]
    mergers = [LogMerger(elog, f"{t.name}'s log {t.log_path}", columnar=columnar) for t in tasks]
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
        sub_end = res.get("submit_end_ns")
        agents[t.name] = {
            "clock_offset_ns": b.offset_ns,
            "clock_uncertainty_ns": b.bound_ns
            if after is None
            else max(b.bound_ns, after.bound_ns),
            "offset_before": b.to_dict(),
            "offset_after": after.to_dict() if after else None,
            "drift_ppm": clock_sync.drift_ppm(b, after) if after else None,
            "start_skew_ns": None if skew is None else int(skew) - t.start_ns,
            # its schedule's span on its own clock: start to its last submission
            "submit_span_ns": None if skew is None or sub_end is None else sub_end - skew,
            "host": pool.identity.get(a, {}).get("host"),
            "address": a,
            "sync": sync[a],
            "log": t.log_path,
            "events": mergers[k].events,
            **{k2: res.get(k2) for k2 in ("stopped", "late", "dropped", "submitted", "cpu_s")},
            **({"lost": res["error"]} if "error" in res else {}),
        }
    ctx.info["agents"] = agents
    ctx.info["agents_start_ns"] = start_ns
    for m in mergers:
        m.close()
    await _account_lost(ctx, tasks, results)
    ctx.write_info()


async def _stream(
    pool: AgentPool,
    ctx: TrialContext,
    tasks: list[AgentTask],
    addrs: list[str],
    futures: list[Any],
    mergers: list[LogMerger],
) -> list[dict[str, Any]]:
    """Pull every agent's new log lines until all are done or gone; their results.

    Local agents (``processes``) write their logs on the controller's disk: it reads them
    itself, and speaks to the agents (heartbeat, live snapshot) only every :data:`TALK_S`,
    so that the agents' cores go to their load rather than to shipping bytes through Dask."""
    local = pool.block.processes is not None
    offsets = [0] * len(tasks)
    fails = [0] * len(tasks)
    live: dict[str, dict[str, Any]] = {}
    recent: list[tuple[float, bytes]] = []  # (when pulled, histogram): the last second's
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    stopped = False
    last_talk = -float("inf")

    def take(k: int, data: bytes, off: int, snap: dict[str, Any] | None) -> None:
        if data:
            mergers[k].add(data, offsets[k] == 0)
        offsets[k] = off
        if snap is not None:
            live[tasks[k].name] = snap
            if snap.get("hist"):
                recent.append((time.monotonic(), snap["hist"]))

    async def pull(k: int, talk: bool) -> None:
        t, a = tasks[k], addrs[k]
        if local and talk:
            take(k, b"", offsets[k], await pool.call(a, live_snapshot, t.key))
        while True:  # a big backlog is read in several pulls
            if local:
                data, off, snap = read_log(t.log_path, offsets[k])
            else:
                data, off, snap = await pool.call(a, read_log, t.log_path, offsets[k], t.key)
            take(k, data, off, snap)
            if len(data) < 1 << 20:
                return

    while any(r is None for r in results):
        if ctx.stop.is_set() and not stopped:
            stopped = True
            for t, a in zip(tasks, addrs, strict=True):
                with contextlib.suppress(Exception):
                    await pool.call(a, stop_agent, t.key)
        talk = not local or time.monotonic() - last_talk >= TALK_S
        alive = set(addrs)
        if talk:
            last_talk = time.monotonic()
            # the workers the scheduler has now (its cached info is not kept up to date);
            # no answer: let the pulls decide
            with contextlib.suppress(Exception):
                alive = set(await pool.client.nthreads())
        for k, f in enumerate(futures):
            if results[k] is not None:
                continue
            gone = addrs[k] not in alive
            try:
                if gone:  # the scheduler saw it die: no point waiting on a connect time-out
                    raise ConnectionError(f"the scheduler lost worker {addrs[k]}")
                async with asyncio.timeout(PULL_TIMEOUT_S):
                    await pull(k, talk)
                if talk:
                    fails[k] = 0
            except Exception as exc:
                fails[k] += 1
                if gone or fails[k] >= LOST_AFTER:
                    results[k] = {"error": f"agent gone: {type(exc).__name__}: {exc}"[:300]}
                    if local:  # its log is on this disk: merge what it wrote before dying
                        with contextlib.suppress(Exception):
                            await pull(k, False)
                    with contextlib.suppress(Exception):
                        await f.cancel()
                    continue
            if f.done():
                try:
                    results[k] = await f
                except Exception as exc:  # the agent itself failed: its share is lost
                    results[k] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                with contextlib.suppress(Exception):
                    await pull(k, False)  # the lines written after the previous pull
        if live and talk:
            recent[:] = [(w, h) for w, h in recent if w > time.monotonic() - 1.0]
            merge_live(ctx.progress, live, (h for _, h in recent))
        await asyncio.sleep(PULL_S)
    return [r or {} for r in results]


async def _account_lost(
    ctx: TrialContext,
    tasks: list[AgentTask],
    results: list[dict[str, Any]],
) -> None:
    """Jobs of lost agents that never ended: cancelled through the controller's backend
    (never left queued) and stamped so on the controller's clock; if that fails, stamped
    lost, which 'gridbench cleanup' then cancels."""
    lost = [t.name for t, res in zip(tasks, results, strict=True) if "error" in res]
    if not lost:
        return
    rec = ctx.recorders[0]
    rec.log.flush()
    events = read_event_log(rec.log.path)
    for name in lost:
        left = outstanding_jobs(events.filter(pl.col("agent") == name))
        if not left.height:
            continue
        stage, note = STAGE_CANCELLED, {"by": "controller", "agent": name, "why": "agent lost"}
        try:
            await ctx.backend.cancel(left["backend_id"].to_list())
        except Exception as exc:  # left for 'gridbench cleanup': recorded as lost
            stage = STAGE_FAILED
            note = {"kind": FAIL_LOST, "agent": name, "cancel_error": f"{exc}"[:300]}
        now = rec.clock.now_ns()
        for job in left["job"].to_list():
            rec.stamp(job, stage, now, note)
        ctx.progress.failed += left.height


def _record_logs(
    run_dir: Path,
    block: AgentsBlock,
    tasks: list[AgentTask],
    addrs: list[str],
    pool: AgentPool,
) -> None:
    """experiment.json's ``agents``: where each agent's log of each trial is, for collect."""
    with contextlib.suppress(GridbenchError, OSError):
        run = RunDir.open(run_dir)
        known = run.read_experiment().get("agents") or {}
        logs = dict(known.get("logs") or {})
        for t, a in zip(tasks, addrs, strict=True):
            ident = pool.identity.get(a, {})
            logs.setdefault(t.trial_id, {})[t.name] = {
                "path": t.log_path,
                "host": ident.get("host"),
                "ssh_host": pool.ssh_host.get(a),
                "pid": ident.get("pid"),
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
