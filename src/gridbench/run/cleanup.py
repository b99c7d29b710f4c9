"""Cancelling jobs a crashed or killed run left behind, by job id (never by pattern)."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import psutil

from gridbench.backends.base import OrphanStopper
from gridbench.backends.registry import create_backend
from gridbench.errors import GridbenchError
from gridbench.events.clock import AnchoredClock
from gridbench.events.log import EVENTS_FILE, EventLog, read_events
from gridbench.events.model import (
    FAIL_LOST,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT_ACK,
)
from gridbench.spec.load import load_spec
from gridbench.store.layout import RunDir, now_iso, read_json, write_json


def outstanding_jobs(events: pl.DataFrame) -> pl.DataFrame:
    """(job, backend_id) of jobs acknowledged but never seen to end or be cancelled.

    A job recorded as ``lost`` (still running when the run gave up on it) is outstanding.
    """
    acked = events.filter(pl.col("stage") == STAGE_SUBMIT_ACK).select(
        "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("backend_id")
    )
    kind = pl.col("attrs").str.json_path_match("$.kind")
    ended = (
        events.filter(
            pl.col("stage").is_in([STAGE_CLIENT_DONE, STAGE_CANCELLED])
            | ((pl.col("stage") == STAGE_FAILED) & (kind.is_null() | (kind != FAIL_LOST)))
        )
        .select("job")
        .unique()
    )
    return acked.join(ended, on="job", how="anti").drop_nulls("backend_id").unique("job")


@dataclass
class CleanupReport:
    per_trial: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    stopped_processes: list[int] = field(default_factory=list)

    @property
    def cancelled(self) -> int:
        return sum(self.per_trial.values())


def find_outstanding(run: RunDir) -> dict[str, pl.DataFrame]:
    out = {}
    for tid in run.trial_ids():
        path = run.trial_dir(tid) / EVENTS_FILE
        if path.exists():
            left = outstanding_jobs(read_events(path))
            if left.height:
                out[tid] = left
    return out


def runner_alive(exp: dict[str, Any]) -> int | None:
    """The pid of the process still running this experiment, if any (pid reuse checked)."""
    runner = exp.get("runner") or {}
    pid, created = runner.get("pid"), runner.get("create_time")
    if not isinstance(pid, int):
        return None
    try:
        proc = psutil.Process(pid)
        if created is not None and abs(proc.create_time() - float(created)) > 1.0:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return pid


async def cleanup_run(run: RunDir, *, dry_run: bool = False, force: bool = False) -> CleanupReport:
    """Cancel every outstanding job of ``run`` through its backend and record it."""
    report = CleanupReport()
    exp = run.read_experiment()
    live = runner_alive(exp)
    if live is not None and not force and not dry_run:
        raise GridbenchError(
            f"the run is still in progress (gridbench pid {live})",
            where=str(run.path),
            fix="stop it with Ctrl-C or 'kill -TERM' (it cancels its own jobs), "
            "or pass --force if that process is stuck",
        )
    todo = find_outstanding(run)
    runtime: dict[str, Any] = exp.get("backend_runtime") or {}
    if todo and not dry_run:
        spec, _ = load_spec(run.spec_file)
        options = {**spec.backend.options, **(runtime.get("options") or {})}
        backend = create_backend(spec.backend.type, options)
        await backend.open()
        clock = AnchoredClock()
        try:
            for tid, left in todo.items():
                ids = left["backend_id"].to_list()
                try:
                    if isinstance(backend, OrphanStopper):
                        # jobs of a dead client process (local backend): by their pids
                        pids = _started_pids(run, tid, left)
                        report.stopped_processes += backend.stop_orphans(pids)
                    else:
                        await backend.cancel(ids)
                except Exception as exc:
                    report.errors.append(f"{tid}: cancel of {len(ids)} jobs failed: {exc}")
                    continue
                with EventLog(run.trial_dir(tid) / EVENTS_FILE) as log:
                    now = clock.now_ns()
                    for job in left["job"].to_list():
                        log.append(job, STAGE_CANCELLED, now, attrs={"by": "cleanup"})
                report.per_trial[tid] = len(ids)
                _mark_trial(run, tid)
        finally:
            await backend.close()
    elif todo:
        report.per_trial = {tid: left.height for tid, left in todo.items()}
    if not dry_run:
        report.stopped_processes = _stop_orphans(runtime)
        if exp.get("status") in ("running", "created"):
            run.update_experiment(status="crashed", cleaned=now_iso())
    return report


def _started_pids(run: RunDir, tid: str, left: pl.DataFrame) -> list[int]:
    ev = read_events(run.trial_dir(tid) / EVENTS_FILE)
    pids = (
        ev.filter((pl.col("stage") == "local_start") & pl.col("job").is_in(left["job"]))
        .select(pl.col("attrs").str.json_path_match("$.pid").cast(pl.Int64, strict=False))
        .drop_nulls()
    )
    return [int(p) for p in pids.to_series().to_list()]


def _mark_trial(run: RunDir, tid: str) -> None:
    path = run.trial_dir(tid) / "trial.json"
    if path.exists():
        info = read_json(path)
        if info.get("status") == "running":
            info["status"] = "aborted"
            write_json(path, info)


def _stop_orphans(runtime: dict[str, Any]) -> list[int]:
    """Stop a helper process (an embedded grid) the crashed run started, if still alive."""
    pid = runtime.get("pid")
    marker = runtime.get("cmdline_marker")
    if not isinstance(pid, int) or not marker:
        return []
    try:
        proc = psutil.Process(pid)
        if marker not in " ".join(proc.cmdline()):
            return []  # the pid was reused by something else: leave it alone
        os.kill(pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (psutil.Error, ProcessLookupError):
        return []
    return [pid]


def describe(report: CleanupReport) -> str:
    return json.dumps(
        {
            "cancelled": report.per_trial,
            "errors": report.errors,
            "stopped_processes": report.stopped_processes,
        }
    )
