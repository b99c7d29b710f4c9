"""Cancelling jobs a crashed or killed run left behind, by job id (never by pattern)."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import psutil

from gridbench.backends.registry import create_backend
from gridbench.events.clock import AnchoredClock
from gridbench.events.log import EVENTS_FILE, EventLog, read_events
from gridbench.events.model import (
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_SUBMIT_ACK,
)
from gridbench.spec.load import load_spec
from gridbench.store.layout import RunDir, now_iso, read_json, write_json


def outstanding_jobs(events: pl.DataFrame) -> pl.DataFrame:
    """(job, backend_id) of jobs acknowledged but never seen to end, fail or be cancelled."""
    acked = events.filter(pl.col("stage") == STAGE_SUBMIT_ACK).select(
        "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("backend_id")
    )
    ended = (
        events.filter(pl.col("stage").is_in([STAGE_CLIENT_DONE, STAGE_FAILED, STAGE_CANCELLED]))
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


async def cleanup_run(run: RunDir, *, dry_run: bool = False) -> CleanupReport:
    """Cancel every outstanding job of ``run`` through its backend and record it."""
    report = CleanupReport()
    todo = find_outstanding(run)
    exp = run.read_experiment()
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
