"""Hardening, round 3 (issue 41), job flow's foreign input, the real CLI where it matters:

- writers never follow a link planted in a run (``export``, ``ingest --force``, ``collect``):
  every file goes through the store's writer;
- a compressed Arrow IPC log (a decompression bomb) or a gzip'd CSV log is refused
  before anything is inflated, and so is an agent's pulled piece;
- every foreign stamp source has a deadline and reads regular files only: a query that
  never ends (a recursive CTE) and a FIFO among a glob's matches no longer hang a run, and
  Ctrl-C ends it;
- stamps at the int64 extremes never wrap into a small latency of a valid trial.

Each test failed on the code before the fix (noted per test)."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from conftest import BIN, cli_env
from gridbench.errors import ResultsError
from gridbench.jobflow.events.columnar import ARROW_SCHEMA, ArrowEventLog
from gridbench.jobflow.events.columnar_read import read_columnar
from gridbench.jobflow.events.ipc_pull import StreamPulls
from gridbench.jobflow.events.model import EVENT_SCHEMA
from gridbench.jobflow.events.stamps import readers
from gridbench.jobflow.events.stamps.collector import StampCollector
from gridbench.jobflow.events.stamps.kind import parse_plan
from gridbench.jobflow.events.trial_log import read_event_log
from test_ingest_helpers import T0_NS

SECRET = "outside the store: must never change\n"


def gb(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(tmp / "results"), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "internal error" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def frame(n: int, t0: int = T0_NS) -> pl.DataFrame:
    """``n`` jobs' submit and client_done events."""
    rows = [
        (f"j{j}", s, t0 + j * 10**9 + k * 10**8, "client", 1, "local", 0, None)
        for j in range(n)
        for k, s in enumerate(("submit", "client_done"))
    ]
    return pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")


def jsonl_events(tmp: Path, n: int) -> Path:
    src = tmp / f"ev{n}.jsonl"
    src.write_text("".join(
        json.dumps({"job": f"j{j}", "stage": s, "t": T0_NS + j * 10**9 + k * 10**8,
                    "source": "client"}) + "\n"
        for j in range(n) for k, s in enumerate(("submit", "client_done"))
    ))  # fmt: skip
    return src


def outside(tmp: Path) -> Path:
    victim = tmp / "victim.txt"
    victim.write_text(SECRET)
    return victim


# -- writers that follow planted links ---------------------------------------------------------
def test_export_never_writes_through_a_link_planted_in_the_run(tmp_path: Path) -> None:
    """Old code: export wrote ``OUT/<trial>.events.csv.tmp`` with a plain open(), through
    the link, and overwrote the victim with the events."""
    run = tmp_path / "results" / "r1"
    assert (
        gb(
            tmp_path, "ingest", "jsonl", str(jsonl_events(tmp_path, 5)), "--out", str(run)
        ).returncode
        == 0
    )
    victim = outside(tmp_path)
    export = run / "export"
    export.mkdir()
    for name in ("ingested.events.csv.tmp", "ingested.events.parquet.tmp"):
        (export / name).symlink_to(victim)
    for fmt in ("csv", "parquet"):
        p = gb(tmp_path, "export", str(run), "--format", fmt)
        assert p.returncode == 0, p.stderr
        assert victim.read_text() == SECRET
    assert pl.read_csv(export / "ingested.events.csv").height == 10
    # the file itself a link: refused with the place, the victim untouched
    (export / "ingested.events.csv").unlink()
    (export / "ingested.events.csv").symlink_to(victim)
    p = gb(tmp_path, "export", str(run))
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stderr
    assert victim.read_text() == SECRET
    # the export folder a link to a folder outside: nothing is written there
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (export / "ingested.events.csv").unlink()
    export.rename(tmp_path / "old-export")
    export.symlink_to(elsewhere)
    p = gb(tmp_path, "export", str(run))
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stderr
    assert list(elsewhere.iterdir()) == []


def test_ingest_force_never_writes_through_a_link_planted_in_the_run(tmp_path: Path) -> None:
    """Old code: ``ingest --force`` wrote ``ingest.json.tmp`` and the trial's
    ``trial.json.tmp`` with a plain write_text(), through the links."""
    run = tmp_path / "results" / "ing"
    assert (
        gb(
            tmp_path, "ingest", "jsonl", str(jsonl_events(tmp_path, 5)), "--out", str(run)
        ).returncode
        == 0
    )
    victim = outside(tmp_path)
    (run / "ingest.json.tmp").symlink_to(victim)
    (run / "trials" / "ingested" / "trial.json.tmp").symlink_to(victim)
    p = gb(
        tmp_path, "ingest", "jsonl", str(jsonl_events(tmp_path, 3)), "--out", str(run), "--force"
    )
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == SECRET
    assert json.loads((run / "trials" / "ingested" / "trial.json").read_text())
    assert read_event_log(run / "trials" / "ingested" / "events.arrows").height == 6


def test_appending_writers_refuse_a_planted_link(tmp_path: Path) -> None:
    """The trial's event logs append with O_NOFOLLOW (old code: a plain open(..., "a")
    followed a dangling link and created the file it names, outside the run)."""
    from gridbench.jobflow.events.log import EventLog

    trial = tmp_path / "run" / "trials" / "p00-t00"
    trial.mkdir(parents=True)
    for name, writer in (("events.arrows", ArrowEventLog), ("events.csv", EventLog)):
        target = tmp_path / f"made-{name}"
        (trial / name).symlink_to(target)
        with pytest.raises(ResultsError, match="symbolic link"):
            writer(trial / name)
        assert not target.exists()


# -- decompression bombs -------------------------------------------------------------------------
def compressed_log(path: Path, n: int, codec: str = "zstd") -> None:
    """``n`` events all alike: a few KB once compressed."""
    same = frame(1).head(1)
    table = pl.concat([same] * n).rechunk().to_arrow().cast(ARROW_SCHEMA).combine_chunks()
    with path.open("wb") as fh:
        w = pa.ipc.new_stream(fh, ARROW_SCHEMA, options=pa.ipc.IpcWriteOptions(compression=codec))
        w.write_table(table, max_chunksize=n)
        w.close()


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_compressed_arrow_log_is_refused_before_it_is_inflated(
    tmp_path: Path, codec: str
) -> None:
    """Old code: pyarrow inflated every batch (13 KB unpacked to 8 M events, 2.3 GB)."""
    log = tmp_path / "events.arrows"
    compressed_log(log, 1_000_000, codec)
    assert log.stat().st_size < 5_000_000  # 46 MB once inflated
    with pytest.raises(ResultsError, match="compressed Arrow record batch"):
        read_columnar(log)


def test_analyze_of_a_run_with_a_bomb_for_a_log_is_one_clear_error(tmp_path: Path) -> None:
    run = tmp_path / "results" / "bomb"
    assert (
        gb(
            tmp_path, "ingest", "jsonl", str(jsonl_events(tmp_path, 5)), "--out", str(run)
        ).returncode
        == 0
    )
    compressed_log(run / "trials" / "ingested" / "events.arrows", 100_000)
    p = gb(tmp_path, "analyze", str(run))
    assert p.returncode == 2 and "compressed Arrow record batch" in p.stderr, p.stdout + p.stderr


def test_a_gzipped_csv_log_is_refused_not_inflated(tmp_path: Path) -> None:
    """polars' CSV reader inflates gzip, zlib and zstd on its own (old code read the 8 MB of
    rows of this 30 KB file)."""
    trial = tmp_path / "run" / "trials" / "p00-t00"
    trial.mkdir(parents=True)
    (tmp_path / "run" / "experiment.json").write_text("{}")
    buf = io.BytesIO()
    frame(50_000).write_csv(buf)
    (trial / "events.csv").write_bytes(gzip.compress(buf.getvalue()))
    with pytest.raises(ResultsError, match="compressed file"):
        read_event_log(trial / "events.csv")


def test_an_agents_compressed_piece_is_refused(tmp_path: Path) -> None:
    sink = io.BytesIO()
    w = pa.ipc.new_stream(sink, ARROW_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd"))
    w.write_table(frame(1000).to_arrow().cast(ARROW_SCHEMA))
    w.close()
    with pytest.raises(ResultsError, match="compressed Arrow record batch"):
        StreamPulls("agent a1").decode(sink.getvalue())


def test_a_dictionary_value_that_would_repeat_into_gigabytes_is_refused(tmp_path: Path) -> None:
    """A dictionary column repeats its value in every row once cast to strings: a 1 MB
    agent name over 8-byte rows is the other bomb."""
    log = tmp_path / "events.arrows"
    with ArrowEventLog(log) as w:
        w.write_frame(frame(10).with_columns(pl.lit("a" * 100_000).alias("agent")))
    with pytest.raises(ResultsError, match="longer than 4096 bytes"):
        read_columnar(log)


# -- foreign sources without deadlines -------------------------------------------------------------
ENDLESS = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
    "SELECT n AS cursor, 'j' AS id, 'queued' AS stage, n AS time FROM c WHERE n > :after AND n < 0"
)


def endless_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    return path


def sqlite_plan(db: Path) -> object:
    return parse_plan(
        {"sources": [{"tier": "db", "kind": "sqlite", "path": str(db), "query": ENDLESS,
                      "time": {"format": "epoch"}, "stages": {"queued": "db_queued"}}]},
        "stamps",
    )  # fmt: skip


def test_a_query_that_never_ends_is_interrupted_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old code: the collector's read never returned (100% CPU)."""
    monkeypatch.setattr(readers, "READ_DEADLINE_S", 0.5, raising=False)
    c = StampCollector(sqlite_plan(endless_db(tmp_path / "a.db")), [str(tmp_path / "a.db")])  # type: ignore[arg-type]
    t0 = time.monotonic()
    assert c.collect(["j"]) == []
    assert time.monotonic() - t0 < 5
    (problem,) = c.problems.values()
    assert "longer than 0.5 s" in problem and "not read again" in problem
    t0 = time.monotonic()
    assert c.collect(["j"]) == [] and time.monotonic() - t0 < 0.5  # given up: not run again


def test_stopping_the_run_interrupts_a_query_at_once(tmp_path: Path) -> None:
    c = StampCollector(sqlite_plan(endless_db(tmp_path / "a.db")), [str(tmp_path / "a.db")])  # type: ignore[arg-type]
    threading.Timer(0.3, c.cancel).start()
    t0 = time.monotonic()
    c.collect(["j"])
    assert time.monotonic() - t0 < 3


def test_a_fifo_among_a_globs_matches_is_skipped_not_read(tmp_path: Path) -> None:
    """Old code: open() of the FIFO blocked the collector for ever."""
    d = tmp_path / "state"
    (d / "abc").mkdir(parents=True)
    (d / "abc" / "started").write_text(f"{T0_NS}\n")
    (d / "fff").mkdir()
    os.mkfifo(d / "fff" / "started")
    plan = parse_plan({"use": "demo"}, "stamps")
    c = StampCollector(plan, [f"{d}/*/started"])
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(c.collect(["abc", "fff"])), daemon=True)
    t.start()
    t.join(10)
    assert done, "the read hung on the FIFO"
    assert [e.job for e in done[0]] == ["abc"]  # type: ignore[attr-defined]
    assert "not a regular file" in " ".join(c.problems.values())


def test_a_fifo_for_a_log_or_a_database_is_not_opened(tmp_path: Path) -> None:
    from gridbench.jobflow.events.stamps.kinds.log import LogReader, LogSource

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    src = parse_plan({"use": "arc-slurm"}, "s").sources[2]
    assert isinstance(src, LogSource)
    done: list[str] = []
    readers = [
        LogReader(src, src.lines, str(fifo)),
        StampCollector(sqlite_plan(fifo), [str(fifo)]).readers[0],
    ]  # type: ignore[arg-type]
    for r in readers:
        t = threading.Thread(target=lambda r=r: done.append(r.read().problem), daemon=True)
        t.start()
        t.join(10)
    assert len(done) == 2 and all("regular file" in p for p in done), done


def test_ctrl_c_ends_a_run_whose_stamp_query_never_ends(tmp_path: Path) -> None:
    """The run's status polls read the endless query; SIGINT ends the run promptly, its
    folder marked aborted (old code: the run hung, and Ctrl-C did not end it)."""
    from test_command_runner import demo, spec

    db = endless_db(tmp_path / "a.db")
    source = {"tier": "db", "kind": "sqlite", "path": str(db), "query": ENDLESS,
              "time": {"format": "epoch"}, "stages": {"queued": "db_queued"}}  # fmt: skip
    stamps = {"sources": [source]}
    body = """
job: {command: [/bin/sleep, "30"]}
load: {model: open, rate: 5/s}
trial: {jobs: 5}
timeouts: {status_interval: 0.2s, drain: 60s}
"""
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(spec("endless-stamps", demo(tmp_path / "state", stamps=stamps), body))
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [str(BIN), "run", str(spec_file)], env=cli_env(results),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        t0 = time.monotonic()
        while not list(results.glob("*/trials/*/events.*")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - t0 < 60, "the run did not start"
            time.sleep(0.1)
        time.sleep(1.5)  # a status poll and its stamp read are under way
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - t0 < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in out + err
    assert proc.returncode == 130, out + err


# -- arithmetic ---------------------------------------------------------------------------
def test_stamps_at_the_int64_extremes_make_the_trial_invalid_not_a_tiny_latency(
    tmp_path: Path,
) -> None:
    """Old code: client_done at INT64_MAX after a submit at INT64_MIN wrapped to a
    latency of a few ns, and the trial stayed valid."""
    lo, hi = -(2**63), 2**63 - 1
    src = tmp_path / "ev.jsonl"
    lines = [
        {"job": "j0", "stage": "submit", "t": lo, "source": "client"},
        {"job": "j0", "stage": "client_done", "t": hi, "source": "client"},
    ]
    lines += [{"job": f"j{j}", "stage": s, "t": T0_NS + j * 10**9 + k * 10**8, "source": "client"}
              for j in range(1, 5) for k, s in enumerate(("submit", "client_done"))]  # fmt: skip
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = tmp_path / "results" / "ext"
    p = gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(run))
    assert p.returncode == 0, p.stderr
    gb(tmp_path, "analyze", str(run))
    metrics = json.loads((run / "metrics.json").read_text())
    (trial,) = metrics["points"][0]["trials"]
    assert trial["valid"] is False, trial["validity"]
    assert any("int64" in r for r in trial["validity"]["reasons"]), trial["validity"]
    for stats in trial["latency"].values():  # no wrapped difference became a figure
        assert stats["min"] is None or stats["min"] >= 0, trial["latency"]


# -- user patterns on the event loop ---------------------------------------------------------------
def test_a_backtracking_pattern_never_stalls_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command backend matches in a child with a deadline: the loop that times the run
    (and, in the dashboard, serves every page and Abort) keeps turning, and the match is one
    clear BackendError. Old code: the match ran on the loop and stalled it ~5 s."""
    import asyncio

    from gridbench.errors import BackendError
    from gridbench.jobflow.backends.command.backend import CommandBackend
    from test_command_runner import demo

    try:
        from gridbench.jobflow.backends.command import matching

        monkeypatch.setattr(matching, "MATCH_TIMEOUT_S", 1.5)
    except ImportError:  # the code before the fix: no matcher
        pass
    evil = "a" * 27 + "!"  # ^(a+)+b$ takes ~5 s on it in CPython's re
    opts = demo(tmp_path / "state", status={"argv": ["/bin/echo", evil],
                                            "pattern": r"^(?P<id>(a+)+)(?P<state>b)$"})  # fmt: skip

    async def main() -> tuple[float, BaseException | None]:
        b = CommandBackend.from_options(opts)
        await b.open()
        lag = 0.0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal lag
            last = time.monotonic()
            while not stop.is_set():
                await asyncio.sleep(0.02)
                now = time.monotonic()
                lag, last = max(lag, now - last), now

        tick = asyncio.create_task(ticker())
        err: BaseException | None = None
        try:
            await b.status(["x"])
        except BackendError as exc:
            err = exc
        finally:
            stop.set()
            await tick
            await b.close()
        return lag, err

    lag, err = asyncio.run(main())
    assert lag < 0.5, f"the event loop stalled {lag:.1f} s"
    assert err is not None and "took longer than 1.5 s" in str(err), err
