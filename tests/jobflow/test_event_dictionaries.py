"""The columnar log's growing dictionaries: the writer codes every batch against one
dictionary per column that only grows, the reader joins a group of such batches into one
chunk; logs with a dictionary per batch (written before) read the same."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from gridbench.jobflow.events import columnar
from gridbench.jobflow.events.columnar import ARROW_SCHEMA, ArrowEventLog
from gridbench.jobflow.events.columnar_read import ColumnarScan
from gridbench.jobflow.events.dictionaries import GrowingDictionaries
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


def _batch_of_its_own(
    rows: list[tuple[str, str, int, Origin]], origins: list[Origin]
) -> pa.RecordBatch:
    """The batch as the writer built it before coding against the growing dictionaries:
    ``stage`` coded in first-seen order, ``source`` and ``agent`` by one value per origin
    in origin order."""

    def coded(codes: list[int], values: list[str]) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(values))

    stages = list(dict.fromkeys(r[1] for r in rows))
    keys = [origins.index(r[3]) for r in rows]
    columns = []
    for field in ("source", "agent"):
        values = list(dict.fromkeys(getattr(o, field) for o in origins))
        columns.append(coded([values.index(getattr(origins[k], field)) for k in keys], values))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r[0] for r in rows]),
            coded([stages.index(r[1]) for r in rows], stages),
            pa.array([r[2] for r in rows], pa.int64()),
            columns[0],
            pa.array([r[3].precision_ns for r in rows], pa.int64()),
            columns[1],
            pa.array([r[3].clock_offset_ns for r in rows], pa.int64()),
            pa.array([None] * len(rows), pa.string()),
        ],
        schema=ARROW_SCHEMA,
    )


def test_rows_coded_as_they_are_built_equal_a_batch_recoded(tmp_path: Path) -> None:
    """The writer codes a batch's stage, source and agent against the growing dictionaries
    as it builds it: byte for byte the batches that re-coding a batch with dictionaries of
    its own gave, including an origin known to the writer but absent from a batch (its
    values join the dictionary only with a batch that uses them)."""
    a = Origin("client", 1_000, "agent-a", 0)
    b = Origin("ce", 1_000, "agent-b", 5)
    c = Origin("client", 1_000, "agent-c", -7)
    batches = [
        [("j1", "submit", 1, c), ("j1", "intended", 0, a), ("j2", "submit", 3, a)],
        [("j2", "ce_entry", 4, b), ("j3", "intended", 5, c), ("j2", "submit", 6, b)],
        [("j4", "client_done", 7, a), ("j4", "ce_entry", 8, c)],
    ]
    path = tmp_path / "events.arrows"
    with ArrowEventLog(path, batch_size=1_000) as log:
        origins = [a, b, c]
        for o in origins:
            log.origin_key(o)  # known from the start, as a recorder makes it
        for rows in batches:
            for job, stage, t, o in rows:
                log.append(job, stage, t, o)
            log.flush()
    expected = GrowingDictionaries(ARROW_SCHEMA)
    expected.encode(columnar._to_batch(columnar._ONE_ROW).slice(0, 0))
    with pa.memory_map(str(path)) as source:
        written = [x for x in pa.ipc.open_stream(source) if x.num_rows]
    assert len(written) == 3
    for got, rows in zip(written, batches, strict=True):
        want = expected.encode(_batch_of_its_own(rows, origins))
        assert got.equals(want)
        for name in ("stage", "source", "agent"):
            assert got.column(name).dictionary.equals(want.column(name).dictionary)
    assert written[0].column("source").dictionary.to_pylist() == ["client"]
    assert written[0].column("agent").dictionary.to_pylist() == ["agent-a", "agent-c"]
    assert written[2].column("stage").dictionary.to_pylist() == [
        "submit",
        "intended",
        "ce_entry",
        "client_done",
    ]
