"""Events recorded as rows and written a chunk at a time: the CSV lines formatted directly
are the csv module's, fields that need quoting round-trip, both formats read back the same
rows, and the open loop's inline call (an in-process backend) keeps its stamps and its
time-out when such a backend waits after all."""

from __future__ import annotations

import asyncio
import csv
import gc
import io
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gridbench.jobflow.backends.base import Capabilities
from gridbench.jobflow.backends.noop import NoopBackend, NoopOptions
from gridbench.jobflow.events.buffer import Origin
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.columnar_read import read_columnar
from gridbench.jobflow.events.log import EventLog, read_events
from gridbench.jobflow.events.model import EVENT_COLUMNS
from gridbench.jobflow.run.heap import GC_THRESHOLD, fewer_collections
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.open_loop import OpenLoop, Submitter, run_open_loop
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.requests import request_factory
from gridbench.jobflow.run.tracker import StatusTracker
from gridbench.jobflow.spec import load_spec_text

CLIENT = Origin("client", 1_000, "agent-0", 0)
OTHER = Origin("ce", 1_000_000, "agent-1", -42)


def _plain_rows(mixed: bool) -> list[tuple[str, str, int, Origin, str | None]]:
    out = []
    for i in range(300):
        attrs = f'{{"backend_id":"{i}"}}' if i % 4 == 2 else None
        origin = OTHER if mixed and i % 3 == 0 else CLIENT
        out.append((f"p00-t00-{i // 4:06d}", "submit_ack", 10**18 + i, origin, attrs))
    out.append(("p00-t00-000099", "ce_entry", 10**18 + 999, CLIENT, '{"a":"x,y"}'))
    return out


@pytest.mark.parametrize("mixed", [False, True], ids=["one-origin", "two-origins"])
def test_direct_lines_are_the_csv_modules(tmp_path: Path, mixed: bool) -> None:
    rows = _plain_rows(mixed)
    with EventLog(tmp_path / "events.csv") as log:
        for job, stage, t, origin, attrs in rows:
            log.append(job, stage, t, origin, attrs=attrs)
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(EVENT_COLUMNS)
    for job, stage, t, o, attrs in rows:
        writer.writerow(
            (job, stage, t, o.source, o.precision_ns, o.agent, o.clock_offset_ns, attrs)
        )
    assert (tmp_path / "events.csv").read_text() == expected.getvalue()


def test_fields_that_need_quoting_round_trip_in_both_formats(tmp_path: Path) -> None:
    odd = Origin('src,"q"', 7, "agent\nnew", 3)
    rows = [
        ("job,with,commas", "submit", 1, CLIENT, None),
        ('job "quoted"', "stage,odd", 2, odd, {"k": 'v "x"\n'}),
        ("plain", "submit", 3, odd, ""),
        ("plain\r\n", "done", 4, CLIENT, '{"a":1}'),
    ]
    frames = []
    for log in (EventLog(tmp_path / "events.csv"), ArrowEventLog(tmp_path / "events.arrows")):
        with log:
            for job, stage, t, origin, attrs in rows:
                log.append(job, stage, t, origin, attrs=attrs)
        frames.append(
            read_events(log.path) if isinstance(log, EventLog) else read_columnar(log.path).events
        )
    csv_frame, arrow_frame = frames
    assert csv_frame.equals(arrow_frame)
    assert csv_frame.select("job", "stage", "source", "agent").rows() == [
        (j, s, o.source, o.agent) for j, s, _, o, _ in rows
    ]
    assert csv_frame["attrs"].to_list() == [None, '{"k":"v \\"x\\"\\n"}', None, '{"a":1}']


def test_a_chunked_flush_keeps_the_order_and_counts(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.csv")
    rec = Recorder(log, AnchoredClock(), "agent-0")
    for i in range(2_500):
        rec.stamp(f"j{i:05d}", "submit", i)
    assert log.count == 2_500
    asyncio.run(log.flush_soon())  # 1,024 at a time, the loop turning in between
    assert log.count == 2_500 and not log.flush(10)
    log.close()
    ev = read_events(tmp_path / "events.csv")
    assert ev["t_ns"].to_list() == list(range(2_500))


class _WaitsAfterAll(NoopBackend):
    """The noop backend with a submit delay, yet declaring that it answers at once: the
    open loop calls it inline and must finish the call in its own task."""

    def capabilities(self) -> Capabilities:
        return Capabilities(fetch_output=False, submit_at_once=True)


def _open_loop(tmp_path: Path, delay_s: float, timeout_s: float, n: int) -> pl.DataFrame:
    spec, _ = load_spec_text(
        "name: x\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 5}\n"
    )
    backend = _WaitsAfterAll(NoopOptions(runtime_s=0.0, submit_delay_s=delay_s))
    log = EventLog(tmp_path / "events.csv")
    rec = Recorder(log, AnchoredClock(), "agent-0")
    progress = TrialProgress("t", n)
    tracker = StatusTracker(backend, rec, progress, 0.1)
    sub = Submitter(backend, rec, tracker, progress, timeout_s)
    offsets = np.arange(n, dtype=np.int64) * 5_000_000
    asyncio.run(
        run_open_loop(
            sub,
            offsets,
            np.arange(n, dtype=np.int64),
            request_factory(spec, "t", n, 1),
            OpenLoop(pool=4, max_lateness_s=10.0, late_threshold_s=1.0),
            start_mono_ns=time.perf_counter_ns(),
            stop=asyncio.Event(),
        )
    )
    log.close()
    return read_events(tmp_path / "events.csv")


def test_an_inline_call_that_waits_is_finished_with_its_stamps(tmp_path: Path) -> None:
    ev = _open_loop(tmp_path, delay_s=0.01, timeout_s=5.0, n=5)
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == 5
    assert ((wide["submit_ack"] - wide["submit"]) >= 10_000_000).all()
    assert (wide["submit"] >= wide["intended"]).all()


def test_an_inline_call_that_waits_past_the_time_out_fails(tmp_path: Path) -> None:
    ev = _open_loop(tmp_path, delay_s=1.0, timeout_s=0.02, n=2)
    failed = ev.filter(pl.col("stage") == "failed")
    assert failed.height == 2
    assert failed["attrs"].str.json_path_match("$.kind").to_list() == ["submit_timeout"] * 2
    assert ev.filter(pl.col("stage") == "submit_ack").height == 0


class _AwaitedAtOnce(NoopBackend):
    """The noop backend without its plain call: the open loop drives its coroutine."""

    def inline_submit(self) -> None:
        return None


def _inline_run(
    tmp_path: Path, backend: NoopBackend, n: int
) -> tuple[pl.DataFrame, dict[str, str]]:
    spec, _ = load_spec_text(
        "name: x\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 5}\n"
        "job: {fail_fraction: 0.3}\n"
    )
    log = EventLog(tmp_path / "events.csv")
    rec = Recorder(log, AnchoredClock(), "agent-0")
    progress = TrialProgress("t", n)
    tracker = StatusTracker(backend, rec, progress, 0.1)
    sub = Submitter(backend, rec, tracker, progress, 5.0)
    asyncio.run(
        run_open_loop(
            sub,
            np.arange(n, dtype=np.int64) * 100_000,
            np.arange(n, dtype=np.int64),
            request_factory(spec, "t", n, 1),
            OpenLoop(pool=4, max_lateness_s=10.0, late_threshold_s=1.0),
            start_mono_ns=time.perf_counter_ns(),
            stop=asyncio.Event(),
        )
    )
    assert (progress.submitted, progress.acknowledged, progress.in_flight) == (n, n - 2, n - 2)
    log.close()
    return read_events(tmp_path / "events.csv"), tracker.names


def test_the_plain_inline_call_records_what_the_awaited_one_does(tmp_path: Path) -> None:
    """The noop backend's plain call (``InlineSubmit``) and its coroutine give the same
    events, attrs, ids and tracked jobs; a rejected submission is one failed stamp."""
    runs = []
    for k, cls in enumerate((NoopBackend, _AwaitedAtOnce)):
        (tmp_path / str(k)).mkdir()
        backend = cls(NoopOptions(runtime_s=1.0, reject_above=48))
        runs.append(_inline_run(tmp_path / str(k), backend, 50))
    (plain, plain_names), (awaited, awaited_names) = runs
    cols = ["job", "stage", "source", "precision_ns", "agent", "clock_offset_ns", "attrs"]
    assert plain.select(cols).equals(awaited.select(cols))
    assert plain.height == 50 * 3  # intended, submit, and submit_ack or failed
    failed = plain.filter(pl.col("stage") == "failed")
    assert failed["job"].to_list() == ["t-000048", "t-000049"]
    assert failed["attrs"].str.json_path_match("$.kind").to_list() == ["submit_rejected"] * 2
    acks = plain.filter(pl.col("stage") == "submit_ack")
    assert acks["attrs"].to_list()[:2] == ['{"backend_id":"1"}', '{"backend_id":"2"}']
    assert plain_names == awaited_names == {str(i + 1): f"t-{i:06d}" for i in range(48)}
    wide = plain.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert (wide["submit"] >= wide["intended"]).all()
    assert (
        wide.drop_nulls("submit_ack")["submit_ack"] >= wide.drop_nulls("submit_ack")["submit"]
    ).all()


def test_noop_offers_its_plain_call_only_without_a_submit_delay() -> None:
    assert NoopBackend(NoopOptions()).inline_submit() is not None
    assert NoopBackend(NoopOptions(submit_delay_s=0.01)).inline_submit() is None


def _stopped_run(
    tmp_path: Path, offsets_ms: list[float], stop_after: int
) -> tuple[pl.DataFrame, TrialProgress, StatusTracker]:
    """The noop backend's plain loop over ``offsets_ms``, stopped once ``stop_after`` jobs
    are acknowledged (the time-out fails the test if a wait is not cut short)."""
    spec, _ = load_spec_text(
        "name: x\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 5}\n"
    )
    n = len(offsets_ms)
    backend = NoopBackend(NoopOptions(runtime_s=60.0))
    log = EventLog(tmp_path / "events.csv")
    rec = Recorder(log, AnchoredClock(), "agent-0")
    progress = TrialProgress("t", n)
    tracker = StatusTracker(backend, rec, progress, 0.1)
    sub = Submitter(backend, rec, tracker, progress, 5.0)

    async def main() -> None:
        stop = asyncio.Event()

        async def stopper() -> None:
            while progress.acknowledged < stop_after:
                await asyncio.sleep(0.001)
            stop.set()

        watcher = asyncio.create_task(stopper())
        await asyncio.wait_for(
            run_open_loop(
                sub,
                (np.array(offsets_ms) * 1e6).astype(np.int64),
                np.arange(n, dtype=np.int64),
                request_factory(spec, "t", n, 1),
                OpenLoop(pool=4, max_lateness_s=10.0, late_threshold_s=1.0),
                start_mono_ns=time.perf_counter_ns(),
                stop=stop,
            ),
            timeout=20.0,
        )
        watcher.cancel()

    asyncio.run(main())
    log.close()
    return read_events(tmp_path / "events.csv"), progress, tracker


def test_the_plain_loop_stops_at_its_next_wake(tmp_path: Path) -> None:
    """Stopped during a long wait (the 11th job is a minute away), the plain loop returns
    at once; every job it started has its three stamps, and the progress says so."""
    ev, progress, tracker = _stopped_run(tmp_path, [*range(10), 60_000.0], stop_after=10)
    assert ev.height == 30
    assert ev.group_by("stage").len().sort("stage").rows() == [
        ("intended", 10),
        ("submit", 10),
        ("submit_ack", 10),
    ]
    assert (progress.submitted, progress.acknowledged, progress.in_flight) == (10, 10, 10)
    assert sorted(tracker.names.values()) == [f"t-{i:06d}" for i in range(10)]
    assert gc.get_threshold()[0] < GC_THRESHOLD  # put back when the loop ended


def test_the_plain_loop_stopped_between_short_waits_leaves_no_job_half_stamped(
    tmp_path: Path,
) -> None:
    ev, progress, tracker = _stopped_run(tmp_path, [k * 0.5 for k in range(4_000)], 50)
    per_job = ev.group_by("job").agg(pl.col("stage").sort().alias("stages"))
    k = per_job.height
    assert 50 <= k < 4_000  # stopped at a wake after the 50th, long before the end
    assert per_job["stages"].to_list() == [["intended", "submit", "submit_ack"]] * k
    assert (progress.submitted, progress.acknowledged, progress.in_flight) == (k, k, k)
    assert len(tracker.names) == k


def test_open_loops_raise_the_collectors_threshold_and_put_it_back() -> None:
    """Two open loops at once (agents in one process) raise the first threshold once;
    it is put back when the last one ends, even if they end out of order."""
    before = gc.get_threshold()
    first = fewer_collections()
    second = fewer_collections()
    first.__enter__()
    assert gc.get_threshold() == (max(before[0], GC_THRESHOLD), *before[1:])
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == max(before[0], GC_THRESHOLD)
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before
