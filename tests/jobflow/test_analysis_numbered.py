"""The per-job table keyed by the jobs' numbers (analysis/numbered.py) against the
in-memory pivot (tests/timeline_oracle.py), and the way back to the hash-keyed path when
a log's ids are not gridbench's own ``<trial>-<number>``, in bounded memory."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis import load, numbered, reduce
from gridbench.jobflow.analysis.clocks import to_controller_time
from gridbench.jobflow.analysis.numbered import NotNumbered, NumberedJobs
from gridbench.jobflow.analysis.reduce import (
    TIMELINE_KEEP,
    frame_chunks,
    in_chunks,
    keep_expr,
    reduce_events,
)
from gridbench.jobflow.analysis.timelines import timeline_stages
from gridbench.jobflow.events.job_numbers import with_job_numbers
from test_runner import run_spec
from timeline_oracle import build_timeline

STAGES = timeline_stages(["submit", "run", "done"])
PREFIX = "p00-t03-"
KEEP = keep_expr(["submit", "run", "done"], {}, all_events=False, by_agent=False)


def _events(
    n_jobs: int, seed: int, name: str = PREFIX + "{:06d}", *, untimed: float = 0.0
) -> pl.DataFrame:
    """Jobs in random order (some numbers unused), re-stamped stages, failures, stages
    outside the chain; ``untimed``: the share of stamps without a time."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in rng.integers(0, n_jobs, 6 * n_jobs):
        stage = str(rng.choice(["intended", "submit", "run", "done", "failed", "other"]))
        rows.append({"job": name.format(i), "stage": stage, "t": float(rng.integers(0, 50))})
        if stage == "failed":
            rows[-1]["attrs"] = {"kind": str(rng.choice(["a", "b"]))}
    ev = fx.frame(rows)
    none = pl.Series(rng.random(ev.height) < untimed)
    ev = ev.with_columns(pl.when(none).then(None).otherwise(pl.col("t_ns")).alias("t_ns"))
    return to_controller_time(ev, {})


def _numbered(chunks: list[pl.DataFrame]) -> reduce.ReducedEvents:
    """The numbered path alone, over ``chunks`` (events with their ``job`` ids)."""
    numbered = (with_job_numbers(c, PREFIX) for c in chunks)
    table = NumberedJobs(STAGES, PREFIX)
    return reduce._reduce(numbered, STAGES, KEEP, table, "number", PREFIX)


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
@pytest.mark.parametrize("fold", [5, numbered.FOLD_EVENTS])
def test_numbered_table_is_the_in_memory_timeline(
    size: int, fold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(numbered, "FOLD_EVENTS", fold)  # a chunk folded in slices of 5
    ev = _events(150, seed=size)
    want = build_timeline(ev, STAGES)
    tl, rest = _numbered(list(frame_chunks(ev, size))).take()
    assert tl.table.equals(want.table)  # the same jobs in first-event order, times, failures
    assert tl.table.height > 100 and tl.table["failed"].null_count() < tl.table.height
    assert rest.equals(ev.filter(KEEP))
    # and reduce_events takes this path for such a log: the same table
    got = reduce_events(in_chunks(ev, size), STAGES, KEEP, job_prefix=PREFIX)
    assert got.job_key == "number" and got.take()[0].table.equals(want.table)


@pytest.mark.parametrize(
    "odd",
    [
        "j{:d}",  # foreign ids (an ingested log)
        PREFIX + "{:07d}",  # zero-padded past the 6 digits: 0000042 and 000042 would be one job
        PREFIX + "{:d}",  # not padded
        PREFIX + "+{:05d}",
        " " + PREFIX + "{:06d}",
        "p00-t09-{:06d}",  # another trial's prefix
    ],
)
def test_other_ids_are_not_numbered_and_take_the_hash_path(odd: str) -> None:
    ev = _events(60, seed=3, name=odd)
    with pytest.raises(NotNumbered):
        _numbered([ev])
    want = build_timeline(ev, STAGES)
    got = reduce_events(in_chunks(ev, 50), STAGES, KEEP, job_prefix=PREFIX)
    assert got.job_key == "hash" and got.take()[0].table.equals(want.table)


def test_an_odd_id_after_numbered_chunks_restarts_on_the_hash_path() -> None:
    ev = _events(80, seed=5)
    odd = ev.head(1).with_columns(pl.lit("hand-made").alias("job"))
    mixed = pl.concat([ev, odd, ev.head(30)])
    got = reduce_events(in_chunks(mixed, 64), STAGES, KEEP, job_prefix=PREFIX)
    assert got.job_key == "hash"
    tl = got.take()[0]
    assert tl.table.equals(build_timeline(mixed, STAGES).table)
    assert "hand-made" in tl.table["job"].to_list()


def test_stamps_without_a_time_are_left_out_as_on_the_hash_path() -> None:
    ev = _events(150, seed=4, untimed=0.05)  # the oracle assumes every stamp has a time
    assert ev["t_ns"].null_count() > 0
    hashed = reduce._reduce(
        iter([ev]), STAGES, KEEP, reduce._Merged(STAGES, exact=True, merge_min=1)
    )
    got = _numbered(list(frame_chunks(ev, 9))).take()[0].table
    assert got.equals(hashed.take()[0].table)
    assert got.select(pl.col(STAGES).null_count()).sum_horizontal().item() > 0


def test_a_null_job_id_is_not_numbered() -> None:
    ev = _events(20, seed=8)
    ev = pl.concat([ev, ev.head(1).with_columns(pl.lit(None, pl.String).alias("job"))])
    with pytest.raises(NotNumbered):
        _numbered([ev])


def test_a_huge_number_costs_one_block_and_scattered_ones_take_the_hash_path() -> None:
    """Job 10^17 is one more block, not an array up to it; numbers scattered over more
    blocks than the events can fill give way to the hash path: memory bounded by the log."""
    ev = _events(40, seed=9)
    huge = ev.head(3).with_columns(pl.lit(PREFIX + "1" + "0" * 17).alias("job"))
    with_huge = pl.concat([ev, huge])
    scattered = ev.with_columns(
        (pl.lit(PREFIX) + (pl.int_range(pl.len()) * numbered.BLOCK).cast(pl.String)).alias("job")
    )
    tracemalloc.start()
    try:
        tl = _numbered([with_huge]).take()[0]
        with pytest.raises(NotNumbered):
            _numbered([scattered])
        got = reduce_events(in_chunks(scattered, 25), STAGES, KEEP, job_prefix=PREFIX)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tl.table.equals(build_timeline(with_huge, STAGES).table)
    assert PREFIX + "1" + "0" * 17 in tl.table["job"].to_list()
    assert got.job_key == "hash"
    assert got.take()[0].table.equals(build_timeline(scattered, STAGES).table)
    # numpy's arrays are traced (their virtual size): a few blocks at most
    assert peak < (numbered._SPARE + 1) * numbered.block_bytes(len(STAGES))


def test_a_real_runs_jobs_are_numbered(tmp_path: Path) -> None:
    """The runner's own names (three agents sharing the numbering) take the numbered path,
    and give the timeline the independent in-memory pivot gives."""
    out = run_spec(
        """
name: numbered
backend: {type: noop, options: {runtime_s: 0.05}}
job: {fail_fraction: 0.1}
load: {model: open, rate: 100/s, agents: 3}
trial: {duration: 2s}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    tdir = out.run.trial_dir("p00-t00")
    info = load.read_trial_info(tdir)
    stages = timeline_stages(info.chain.names())
    reduced, torn = load.reduce_trial_events(tdir, info, stages, TIMELINE_KEEP)
    assert torn == 0 and reduced.job_key == "number"
    tl = reduced.take()[0]
    events = load.read_trial_events(tdir, info)
    assert tl.table.height == 200
    assert tl.table.equals(build_timeline(events, stages).table)
