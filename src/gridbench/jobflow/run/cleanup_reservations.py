"""Deleting the advance reservations a crashed or killed probe run left behind.

The probe's reserve calls are in the event log (``op_start``/``op_end`` with ``op:
reserve`` and the ``reservation`` name, ``gridbench-<token>-<trial>-<n>``); a reservation
is outstanding when its reserve was started and did not fail, and no release of it
succeeded. Only names of that form are deleted, one by one (never by pattern), through the
backend's :class:`~gridbench.jobflow.backends.operations.Reserver`, and each deletion is logged as
a release ``op_end`` with ``by: cleanup`` so that a second cleanup does not repeat it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from gridbench.jobflow.backends.operations import Reserver
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.jobflow.events.trial_log import open_trial_log, read_event_log, trial_log_path
from gridbench.jobflow.run.closed_loop import STAGE_OP_END, STAGE_OP_START

if TYPE_CHECKING:
    from gridbench.jobflow.backends.base import Backend
    from gridbench.store.layout import RunDir

#: the names the probe gives its reservations (nothing else is ever deleted)
OURS = re.compile(r"gridbench-[0-9a-f]{8}-[\w.-]+-\d+")


def outstanding_reservations(events: pl.DataFrame) -> pl.DataFrame:
    """(job, reservation) of reservations started and not known failed or released."""
    a = pl.col("attrs")
    ev = events.select(
        "job",
        "stage",
        a.str.json_path_match("$.op").alias("op"),
        a.str.json_path_match("$.reservation").alias("reservation"),
        a.str.json_path_match("$.error").is_not_null().alias("error"),
    ).filter(pl.col("reservation").is_not_null())
    started = ev.filter((pl.col("op") == "reserve") & (pl.col("stage") == STAGE_OP_START))
    gone = ev.filter(
        (pl.col("stage") == STAGE_OP_END)
        & (
            ((pl.col("op") == "reserve") & pl.col("error"))
            | ((pl.col("op") == "release") & ~pl.col("error"))
        )
    )
    left = started.join(gone.select("reservation"), on="reservation", how="anti")
    return left.select("job", "reservation").unique("reservation", maintain_order=True)


def outstanding_per_trial(
    run: RunDir, outstanding: Callable[[pl.DataFrame], pl.DataFrame]
) -> dict[str, pl.DataFrame]:
    """``outstanding(events)`` of each trial that has an event log (empty ones left out)."""
    out = {}
    for tid in JobFlowRun.of(run).trial_ids():
        path = trial_log_path(JobFlowRun.of(run).trial_dir(tid))
        if path is not None:
            left = outstanding(read_event_log(path))
            if left.height:
                out[tid] = left
    return out


def find_reservations(run: RunDir) -> dict[str, pl.DataFrame]:
    """Each trial's outstanding reservations (trials without any are left out)."""
    return outstanding_per_trial(run, outstanding_reservations)


async def release_all(
    run: RunDir,
    backend: Backend,
    todo: dict[str, pl.DataFrame],
    plan: list[str],
    errors: list[str],
    *,
    dry_run: bool,
) -> int:
    """Delete (or plan to delete) the outstanding reservations; return how many went."""
    if not isinstance(backend, Reserver):
        errors.append(f"the {backend.name} backend cannot delete reservations: left alone")
        return 0
    clock = AnchoredClock()
    released = 0
    if not dry_run:
        await backend.open()
    try:
        for tid, left in todo.items():
            for job, name in left.select("job", "reservation").iter_rows():
                if not OURS.fullmatch(name):
                    plan.append(f"{tid}: reservation {name[:80]!r}: not gridbench's, left alone")
                    continue
                plan.append(f"{tid}: " + ("would delete" if dry_run else "deleting") + f" {name}")
                if dry_run:
                    continue
                try:
                    await backend.release(name)
                except Exception as exc:
                    errors.append(f"{tid}: deleting reservation {name} failed: {exc}")
                    continue
                released += 1
                log = open_trial_log(JobFlowRun.of(run).trial_dir(tid))
                try:
                    attrs = {"op": "release", "reservation": name, "by": "cleanup"}
                    log.append(job, STAGE_OP_END, clock.now_ns(), attrs=attrs)
                finally:
                    log.close()
    finally:
        if not dry_run:
            await backend.close()
    return released
