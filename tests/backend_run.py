"""Helpers shared by the live backend tests: run a spec with a given backend, read a trial."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from gridbench.jobflow.backends.base import Backend
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan


class Counting(Backend, Protocol):
    accepted: int  # jobs the backend accepted so far


def run_with(
    text: str, root: Path, backend: Counting, *, abort_when_acked: int | None = None
) -> ExperimentOutcome:
    """Run a spec with this backend; optionally abort once that many jobs were accepted."""
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root, backend=backend)

    async def main() -> ExperimentOutcome:
        task = asyncio.create_task(runner.execute())
        if abort_when_acked is not None:
            while backend.accepted < abort_when_acked and not task.done():
                await asyncio.sleep(0.05)
            runner.abort()
        return await task

    return asyncio.run(main())


def trial(out: ExperimentOutcome) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Events and trial.json of the first trial."""
    d = out.run.trial_dir("p00-t00")
    return read_trial_log(d), json.loads((d / "trial.json").read_text())


def failures(ev: pl.DataFrame) -> pl.DataFrame:
    """The failure events: job, kind, message."""
    return ev.filter(pl.col("stage") == "failed").select(
        "job",
        pl.col("attrs").str.json_path_match("$.kind").alias("kind"),
        pl.col("attrs").str.json_path_match("$.message").alias("message"),
    )


def submit_users(ev: pl.DataFrame) -> pl.DataFrame:
    """Each job's virtual user (the ``user`` attribute of its submit stamp): job, user."""
    return ev.filter(pl.col("stage") == "submit").select(
        "job", pl.col("attrs").str.json_path_match("$.user").alias("user")
    )


def backend_ids(ev: pl.DataFrame) -> list[str]:
    """The backend ids of the acknowledged jobs, in event order."""
    acks = ev.filter(pl.col("stage") == "submit_ack")
    return acks["attrs"].str.json_path_match("$.backend_id").to_list()
