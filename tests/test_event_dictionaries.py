"""The columnar log's growing dictionaries: the writer codes every batch against one
dictionary per column that only grows, the reader joins a group of such batches into one
chunk; logs with a dictionary per batch (written before) read the same."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from gridbench.jobflow.events import columnar
from gridbench.jobflow.events.columnar import ARROW_SCHEMA, ArrowEventLog, ColumnarScan
from gridbench.jobflow.events.log import Origin
from gridbench.jobflow.events.model import EVENT_SCHEMA

STAGES = ["intended", "submit", "ce_entry", "ce_done", "client_done"]


def _write_small_batches(path: Path, n: int) -> None:
    """``n`` jobs, a batch every 7 events (a live log at a low rate), stages and agents
    appearing one after another so the dictionaries grow mid-log."""
    with ArrowEventLog(path, batch_size=7) as log:
        for i in range(n):
            origin = Origin("ce" if i % 2 else "client", 1_000, f"agent-{(i // 40) % 4}", 0)
            for k, stage in enumerate(STAGES[: 1 + min(4, i // 25)]):
                log.append(f"job-{i:05d}", stage, 1_000 * i + k, origin)


def _read(path: Path, categorical: bool) -> pl.DataFrame:
    frames = list(ColumnarScan(path).frames(categorical=categorical))
    return pl.concat(frames).with_columns(pl.col(pl.Categorical).cast(pl.String))


def test_a_live_log_grows_one_dictionary(tmp_path: Path) -> None:
    path = tmp_path / "events.arrows"
    _write_small_batches(path, 200)
    with pa.memory_map(str(path)) as source:
        reader = pa.ipc.open_stream(source)
        batches = list(reader)
        stats = reader.stats
    assert len(batches) > 60
    # written again only when a value is new (5 stages, 2 sources, 4 agents: 11 at most)
    assert stats.num_dictionary_batches <= 11 + 3 and stats.num_dictionary_deltas == 0
    last = {name: batches[-1].column(name).dictionary for name in ("stage", "agent")}
    assert last["stage"].to_pylist() == STAGES
    for b in batches:
        for name, full in last.items():
            d = b.column(name).dictionary
            assert d.equals(full.slice(0, len(d)))  # a prefix: codes mean the same
    # the reader joins them into one chunk per column, and polars' own reader reads it
    frames = list(ColumnarScan(path).frames(categorical=True))
    assert len(frames) == 1 and all(s.n_chunks() == 1 for s in frames[0].iter_columns())
    plain = _read(path, categorical=False)
    assert _read(path, categorical=True).equals(plain)
    assert pl.read_ipc_stream(path).cast(dict(EVENT_SCHEMA)).equals(plain)
    assert plain.height == sum(1 + min(4, i // 25) for i in range(200))
    assert plain.filter(pl.col("job") == "job-00199")["stage"].to_list() == STAGES


def test_a_log_with_a_dictionary_per_batch_reads_the_same(tmp_path: Path) -> None:
    """A log written before the dictionaries grew: each batch its own dictionary."""
    frame = pl.DataFrame(
        {
            "job": [f"j{i}" for i in range(30)],
            "stage": [STAGES[(i * 7) % 5] for i in range(30)],
            "t_ns": list(range(30)),
            "source": ["client"] * 30,
            "precision_ns": [1_000] * 30,
            "agent": ["local" if i < 15 else "a1" for i in range(30)],
            "clock_offset_ns": [0] * 30,
            "attrs": [None] * 30,
        },
        schema=EVENT_SCHEMA,
    )
    path = tmp_path / "events.arrows"
    with path.open("wb") as fh, pa.ipc.new_stream(fh, ARROW_SCHEMA) as writer:
        for part in frame.iter_slices(4):
            writer.write_batch(columnar._to_batch(part))
    frames = list(ColumnarScan(path).frames(categorical=True))
    assert frames[0]["stage"].n_chunks() > 1  # read batch by batch
    assert _read(path, categorical=True).equals(frame)
    assert _read(path, categorical=False).equals(frame)


def test_a_null_stage_stays_null(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"job": ["a", "b"], "stage": ["submit", None], "t_ns": [1, 2], "source": ["c", "c"]},
        schema_overrides={"stage": pl.String},
    ).with_columns(
        pl.lit(1_000).alias("precision_ns"),
        pl.lit("local").alias("agent"),
        pl.lit(0).alias("clock_offset_ns"),
        pl.lit(None, pl.String).alias("attrs"),
    )
    path = tmp_path / "events.arrows"
    with ArrowEventLog(path) as log:
        log.write_frame(frame.cast(dict(EVENT_SCHEMA)))
        log.write_frame(
            frame.cast(dict(EVENT_SCHEMA)).with_columns(pl.lit("ce_done").alias("stage"))
        )
    got = _read(path, categorical=True)
    assert got["stage"].to_list() == ["submit", None, "ce_done", "ce_done"]
