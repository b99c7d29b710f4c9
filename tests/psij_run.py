"""Helpers for the psij backend tests: run a spec through the real runner, read a trial."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.backends.psij_backend import PsijBackend
from gridbench.backends.registry import create_backend
from gridbench.events.log import read_events
from gridbench.run.experiment import ExperimentOutcome, ExperimentRunner
from gridbench.spec import load_spec_text, make_plan

CHAIN = ["submit", "psij_queued", "psij_active", "psij_end", "client_done"]


def psij_backend(**options: object) -> PsijBackend:
    """A psij backend made through the registry, as a spec would."""
    b = create_backend("psij", dict(options))
    assert isinstance(b, PsijBackend)
    return b


def run_with(
    text: str, root: Path, backend: PsijBackend, *, abort_when_acked: int | None = None
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
    return read_events(d / "events.csv"), json.loads((d / "trial.json").read_text())


def failures(ev: pl.DataFrame) -> pl.DataFrame:
    """The failure events: job, kind, message."""
    return ev.filter(pl.col("stage") == "failed").select(
        "job",
        pl.col("attrs").str.json_path_match("$.kind").alias("kind"),
        pl.col("attrs").str.json_path_match("$.message").alias("message"),
    )


def assert_chain_ordered(ev: pl.DataFrame, jobs: int) -> pl.DataFrame:
    """Every job has every stage of the chain, once, in order; returns the wide table."""
    counts = dict(ev.filter(pl.col("stage").is_in(CHAIN)).group_by("stage").len().iter_rows())
    assert counts == dict.fromkeys(CHAIN, jobs)
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == jobs
    for a, b in itertools.pairwise(CHAIN):
        assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    return wide


def acked_ids(ev: pl.DataFrame) -> list[str]:
    """Backend ids of the acknowledged submissions."""
    acks = ev.filter(pl.col("stage") == "submit_ack")
    return [str(x) for x in acks["attrs"].str.json_path_match("$.backend_id").to_list()]
