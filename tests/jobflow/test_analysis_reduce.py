"""The chunked reduction of a trial's events (analysis/reduce.py) against the in-memory
pivot (tests/timeline_oracle.py): same per-job table, precisions and clocks whatever the
chunk size, the merges between chunks and the hash collision path."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis import reduce
from gridbench.jobflow.analysis.clocks import to_controller_time
from gridbench.jobflow.analysis.reduce import frame_chunks, in_chunks, keep_expr, reduce_events
from gridbench.jobflow.analysis.timelines import timeline_stages
from timeline_oracle import build_timeline

STAGES = timeline_stages(["submit", "run", "done"])
AGENTS = {
    "a1": {"clock_offset_ns": 5_000, "clock_uncertainty_ns": 40_000, "address": "10.0.0.2"},
    "local": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0},
}


def _events(n_jobs: int, seed: int) -> pl.DataFrame:
    """Re-stamped stages, equal-time failures of several kinds, two clocks, statuses."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in rng.integers(0, n_jobs, 6 * n_jobs):
        stage = str(rng.choice(["intended", "submit", "run", "done", "failed", "other"]))
        row = {
            "job": f"j{i}",
            "stage": stage,
            "t": float(rng.integers(0, 50)),
            "precision_ns": int(rng.choice([1_000, 1_000_000, 0])),
            "agent": str(rng.choice(["local", "a1"])),
        }
        if stage == "failed":
            row["attrs"] = str(rng.choice(['{"kind":"a"}', '{"kind":"b"}', ""]))
        elif stage == "run" and rng.random() < 0.2:
            row["attrs"] = '{"status":"FAILED"}'
        rows.append(row)
    return to_controller_time(fx.frame(rows), AGENTS)


@pytest.mark.parametrize(("size", "merge_min", "exact"), [(7, 5, False), (64, 1, True)])
def test_chunks_give_the_in_memory_timeline(size: int, merge_min: int, exact: bool) -> None:
    ev = _events(120, seed=size)
    want = build_timeline(ev, STAGES)
    keep = keep_expr(["submit", "run", "done"], AGENTS, all_events=False, by_agent=False)
    chunks = list(frame_chunks(ev, size))
    if exact:  # the string-keyed path a hash collision takes
        table = reduce._Merged(STAGES, exact=True, merge_min=merge_min)
        got = reduce._reduce(iter(chunks), STAGES, keep, table)
    else:
        got = reduce_events(lambda _: chunks, STAGES, keep, merge_min=merge_min)
    tl, rest = got.take()
    assert got.events == ev.height
    assert tl.table.equals(want.table)  # same jobs in first-event order, times, failures
    assert tl.precision_ns == want.precision_ns
    assert tl.typical_precision_ns == want.typical_precision_ns
    assert tl.clocks == want.clocks and set(tl.clocks) == {"intended", "submit", "run", "done"}
    # rest: the failures, the status stamps and the remote agent's submits, in log order
    assert rest.equals(ev.filter(keep))
    assert (
        rest.filter(pl.col("stage") == "failed").height
        == ev.filter(pl.col("stage") == "failed").height
    )


def test_no_events() -> None:
    keep = keep_expr(["submit"], {}, all_events=False, by_agent=False)
    tl, rest = reduce_events(lambda _: [], STAGES, keep).take()
    assert tl.table.height == 0 and tl.table.columns == ["job", *STAGES, "failed"]
    assert rest.height == 0


def _held(s: pl.Series) -> int:
    """Bytes of the buffers a string column keeps alive (views share their chunk's)."""
    arrow = s.to_arrow(compat_level=pl.CompatLevel.newest())
    return sum(b.size for b in arrow.buffers() if b is not None)


def test_kept_rows_own_their_strings() -> None:
    """What the reduction keeps is copied out of its chunk: a filtered or grouped frame's
    strings are views into the chunk's buffers (for a columnar log, the mapped file),
    which would keep every chunk alive while the trial is read."""
    n, pad = 2000, "x" * 60
    rows = []
    for i in range(n):
        job = f"a-rather-long-job-name-{i:08d}"
        for k, stage in enumerate(["intended", "submit", "run", "done"]):
            rows.append({"job": job, "stage": stage, "t": i + k, "attrs": {"pad": pad}})
        if i % 100 == 0:
            rows.append({"job": job, "stage": "failed", "t": i + 5, "attrs": {"kind": pad}})
    ev = to_controller_time(fx.frame(rows), {})
    chunk_bytes = _held(ev["attrs"])
    keep = keep_expr(["submit", "run", "done"], {}, all_events=False, by_agent=False)
    tl, rest = reduce_events(in_chunks(ev, 5000), STAGES, keep).take()
    assert rest.height == n // 100 and tl.table.height == n
    assert _held(rest["attrs"]) < 20 * (16 + 90) + 1024 < chunk_bytes // 50
    # one copy of each job's id (a view and its bytes), not the events' buffers
    assert _held(tl.table["job"]) <= 2 * n * (16 + 32)
    assert _held(ev["job"]) > 4 * n * 32
