"""The columnar event log: crash safety, torn batches, hostile files, and the same metrics
as the CSV log for the same events."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BIN, cli_env
from gridbench.errors import ResourceError, ResultsError
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.columnar_read import read_columnar
from gridbench.jobflow.events.export import export_events
from gridbench.jobflow.events.log import EventLog, Origin, read_events
from gridbench.jobflow.events.trial_log import (
    open_trial_log,
    read_trial_log,
    read_trial_log_counted,
    scan_trial_log,
)
from gridbench.jobflow.run.agent_collect import merge_logs
from io_fixtures import mounted_tmpfs

WRITER = r"""
import sys
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.log import Origin
log = ArrowEventLog(sys.argv[1], batch_size=100)
ce = Origin("ce", 1_000_000, "local", 0)
i = 0
while True:
    log.append(f"j{i}", "submit", 1_000 + i, attrs={"n": i} if i % 3 == 0 else None)
    log.append(f"j{i}", "ce_entry", 2_000 + i, ce)
    i += 1
    if log.count % 100 == 0:
        print(log.count, flush=True)  # the batch of these events is flushed by now
"""


def _torn_tail(path: Path) -> None:
    """Append the first half of a real batch, as a writer killed mid-write leaves it."""
    other = path.with_name("donor.arrows")
    with ArrowEventLog(other, batch_size=25) as log:
        for i in range(50):
            log.append(f"x{i}", "submit", i)
            if i == 24:
                first = other.stat().st_size  # the schema and the first batch
        second = other.stat().st_size
    batch = other.read_bytes()[first:second]  # the second batch, with its dictionaries
    other.unlink()
    with open(path, "ab") as fh:
        fh.write(batch[: len(batch) // 2])


def test_kill_9_keeps_every_flushed_batch_and_skips_a_torn_one(tmp_path: Path) -> None:
    path = tmp_path / "events.arrows"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    flushed = 0
    while flushed < 3000:
        line = proc.stdout.readline()
        assert line, "the writer died"
        flushed = int(line)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    read = read_columnar(path)
    ev = read.events
    assert ev.height >= flushed and ev.height % 100 == 0  # whole batches only
    n = ev.height // 2
    submits = ev.filter(pl.col("stage") == "submit")
    assert submits["job"].to_list() == [f"j{i}" for i in range(n)]
    assert submits["t_ns"].to_list() == [1_000 + i for i in range(n)]
    assert ev.filter(pl.col("stage") == "ce_entry")["precision_ns"].unique().to_list() == [10**6]
    assert submits["attrs"][3] == '{"n":3}' and submits["attrs"][1] is None

    _torn_tail(path)
    again = read_columnar(path)
    assert again.torn == 1 and again.events.equals(ev)
    with ArrowEventLog(path) as log:  # a writer after the crash starts the next segment
        log.append("late", "client_done", 99)
    assert (tmp_path / "events.1.arrows").exists()
    after = read_columnar(path)
    assert after.torn == 1 and after.events.height == ev.height + 1


SPEC = """\
name: colcrash
backend: {type: noop, options: {runtime_s: 30}}
load: {model: open, rate: 50/s}
trial: {duration: 60s, event_log: arrow}
timeouts: {status_interval: 0.2s}
"""


def test_kill_9_of_a_run_mid_trial_then_analyze(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    results = tmp_path / "results"
    env = cli_env(results)
    proc = subprocess.Popen(
        [str(BIN), "run", str(spec), "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        log = None
        while time.monotonic() < deadline:
            log = next(results.glob("*/trials/p00-t00/events.arrows"), None)
            if log is not None and log.stat().st_size > 8_000:
                break
            time.sleep(0.1)
        assert log is not None and log.stat().st_size > 8_000, "no events were flushed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = read_columnar(log).events
    _torn_tail(log)
    run = log.parents[2]
    a = subprocess.run(
        [str(BIN), "analyze", str(run), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert a.returncode in (0, 1), a.stderr
    trial = json.loads(a.stdout)["points"][0]["trials"][0]
    assert trial["events_torn"] == 1
    submitted = before.filter(pl.col("stage") == "submit")["job"].n_unique()
    assert submitted >= 20 and trial["jobs"]["submitted"] == submitted
    # cleanup appends its cancelled stamps as the next segment of the columnar log
    acked = before.filter(pl.col("stage") == "submit_ack")["job"].n_unique()
    c = subprocess.run(
        [str(BIN), "cleanup", str(run), "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert c.returncode == 0, c.stderr
    assert f"cancelled {acked} jobs" in c.stdout
    assert (log.parent / "events.1.arrows").exists()
    after, torn = read_trial_log_counted(log.parent)
    assert torn == 1 and after.filter(pl.col("stage") == "cancelled").height == acked


# --- the same events, CSV or columnar: identical metrics ---------------------------------

STAGES = ["submit", "submit_ack", "ce_entry", "client_done"]
CHAIN = {
    "stages": [
        {"name": "submit", "source": "client", "label": "", "precision_ns": 1000},
        {"name": "ce_entry", "source": "ce", "label": "", "precision_ns": 1000000},
        {"name": "client_done", "source": "client", "label": "", "precision_ns": 1000},
    ],
    "segments": [{"name": "ce", "start": "ce_entry", "end": "client_done", "component": True}],
}

job_st = st.tuples(
    st.integers(0, 10**9),  # intended offset
    st.lists(st.integers(1, 10**8), min_size=4, max_size=4),  # stage gaps
    st.sampled_from(["none", "job_failed", "submit_rejected", "lost_tail"]),
    st.sampled_from(["local", "agent-0", "agent-1"]),
)


def _write_trial(trial: Path, jobs: list[tuple[int, list[int], str, str]], columnar: bool) -> None:
    trial.mkdir(parents=True)
    t0 = 1_700_000_000_000_000_000
    offsets = {"local": 0, "agent-0": 1_500, "agent-1": -7_000}
    log = (
        ArrowEventLog(trial / "events.arrows", batch_size=7)
        if columnar
        else EventLog(trial / "events.csv", batch_size=7)
    )
    end = t0
    with log:
        for k, (start, gaps, fate, agent) in enumerate(jobs):
            job, t = f"j{k:04d}", t0 + start
            client = Origin("client", 1_000, agent, offsets[agent])
            log.append(job, "intended", t, client)
            for stage, gap in zip(STAGES, gaps, strict=True):
                t += gap
                if fate == "submit_rejected" and stage != "submit":
                    log.append(job, "failed", t, client, attrs={"kind": "submit_rejected"})
                    break
                if fate in ("job_failed", "lost_tail") and stage == "client_done":
                    if fate == "job_failed":
                        log.append(job, "failed", t, client, attrs={"kind": "job_failed"})
                    break
                origin = (
                    Origin("ce", 10**6, agent, offsets[agent]) if stage == "ce_entry" else client
                )
                attrs = {"backend_id": f"b{k}"} if stage == "submit_ack" else None
                log.append(job, stage, t, origin, attrs=attrs)
            end = max(end, t)
    info = {
        "trial_id": trial.name,
        "point_index": 0,
        "trial_index": 0,
        "point": {"rate": 10.0},
        "load_model": "open",
        "offered_rate_per_s": 10.0,
        "planned_jobs": len(jobs),
        "started_ns": t0,
        "submit_end_ns": t0 + 10**9,
        "ended_ns": end + 1,
        "status": "complete",
        "chain": CHAIN,
        "agents": {
            a: {"clock_offset_ns": o, "clock_uncertainty_ns": 100} for a, o in offsets.items()
        },
        "late_threshold_ns": 100_000_000,
    }
    (trial / "trial.json").write_text(json.dumps(info))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=st.lists(job_st, min_size=1, max_size=60))
def test_csv_and_columnar_runs_give_identical_metrics(
    tmp_path_factory: pytest.TempPathFactory, jobs: list[tuple[int, list[int], str, str]]
) -> None:
    base = tmp_path_factory.mktemp("runs")
    metrics = []
    for columnar in (False, True):
        run = base / ("arrow" if columnar else "csv")
        _write_trial(run / "trials" / "p00-t00", jobs, columnar)
        (run / "experiment.json").write_text(json.dumps({"name": "prop", "status": "complete"}))
        metrics.append(analyze_run(run, write=False))
    csv_ev = read_events(base / "csv" / "trials" / "p00-t00" / "events.csv")
    assert read_trial_log(base / "arrow" / "trials" / "p00-t00").equals(csv_ev)
    assert json.dumps(metrics[0], sort_keys=True) == json.dumps(metrics[1], sort_keys=True)
    # the metrics compared hold the trial's figures (warm-up may leave no job counted)
    assert isinstance(metrics[0]["points"][0]["trials"][0]["jobs"]["submitted"], int)


# --- agents' columnar logs merge into the trial ------------------------------------------


def _agent_log(path: Path, agent: str, offset: int, n: int) -> None:
    origin = Origin("client", 1_000, agent, offset)
    with ArrowEventLog(path, batch_size=16) as log:
        for i in range(n):
            log.append(f"{agent}-j{i}", "submit", 10_000 + i, origin)
            log.append(f"{agent}-j{i}", "client_done", 20_000 + i, origin, attrs={"ok": 1})


@pytest.mark.parametrize("trial_format", ["arrow", "csv"])
def test_agents_columnar_logs_merge_into_the_trial(tmp_path: Path, trial_format: str) -> None:
    trial = tmp_path / "trials" / "p00-t00"
    own = (
        ArrowEventLog(trial / "events.arrows")
        if trial_format == "arrow"
        else EventLog(trial / "events.csv")
    )
    with own:  # the controller already pulled agent-0's first job
        own.append("agent-0-j0", "submit", 10_000, Origin("client", 1_000, "agent-0", 500))
    logs = [tmp_path / "agents" / a / "p00-t00.events.arrows" for a in ("agent-0", "agent-1")]
    _agent_log(logs[0], "agent-0", 500, 40)
    _agent_log(logs[1], "agent-1", -300, 25)
    assert merge_logs(trial, logs) == 2 * 40 + 2 * 25 - 1
    assert merge_logs(trial, logs) == 0  # idempotent
    merged, torn = read_trial_log_counted(trial)
    assert torn == 0 and merged.height == 130
    assert (trial / "events.csv").exists() == (trial_format == "csv")
    by_agent = dict(merged.group_by("agent").agg(pl.col("clock_offset_ns").first()).iter_rows())
    assert by_agent == {"agent-0": 500, "agent-1": -300}
    assert merged.filter(pl.col("stage") == "client_done")["attrs"].unique().to_list() == [
        '{"ok":1}'
    ]


# --- hostile and truncated files ---------------------------------------------------------


def _valid(tmp_path: Path) -> bytes:
    p = tmp_path / "ok.arrows"
    with ArrowEventLog(p, batch_size=10) as log:
        for i in range(100):
            log.append(f"j{i}", "submit", i, attrs={"i": i})
    return p.read_bytes()


def _other_schema_stream() -> bytes:
    sink = pa.BufferOutputStream()
    schema = pa.schema([("job", pa.string()), ("x", pa.int64())])
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array(["a"]), pa.array([1])], schema=schema))
    return bytes(sink.getvalue())


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("garbage", os.urandom(4096), "not an Arrow IPC stream"),
        ("csv", b"job,stage,t_ns\nj1,submit,1\n", "not an Arrow IPC stream"),
        ("huge-length", b"\xff\xff\xff\xff\xf0\xff\xff\x7f" + b"\0" * 64, None),
        ("huge-length-long", b"\xff\xff\xff\xff\xf0\xff\xff\x7f" + b"\0" * 8192, "readable"),
        ("other-schema", _other_schema_stream(), "marker"),
    ],
    # named ids: the random bytes must not be in them (pytest-xdist's workers each collect
    # and must agree on every test's id)
    ids=["garbage", "csv", "huge-length", "huge-length-long", "other-schema"],
)
def test_a_hostile_log_is_one_clear_error(
    tmp_path: Path, name: str, data: bytes, says: str | None
) -> None:
    p = tmp_path / "events.arrows"
    p.write_bytes(data)
    try:
        read = read_columnar(p)
    except ResultsError as exc:
        assert exc.where == str(p) and exc.fix
        if says:
            assert says in exc.message
    else:  # a length beyond the file is a torn schema: no events, counted
        assert says is None and read.events.height == 0 and read.torn == 1


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.arrows"
    target.write_bytes(_valid(tmp_path))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "events.arrows").symlink_to(target)
    with pytest.raises(ResultsError, match="link"):
        read_columnar(tmp_path / "t" / "events.arrows")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(0, 10**6),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6),
)
def test_truncated_or_damaged_logs_read_or_fail_clearly(
    tmp_path_factory: pytest.TempPathFactory, cut: int, flips: list[tuple[int, int]]
) -> None:
    d = tmp_path_factory.mktemp("dmg")
    raw = bytearray(_valid(d))
    for pos, byte in flips:
        raw[pos % len(raw)] = byte
    p = d / "events.arrows"
    p.write_bytes(bytes(raw[: cut % (len(raw) + 1)]))
    try:
        read = read_columnar(p)
    except ResultsError as exc:
        assert exc.where == str(p)
    else:
        assert read.events.height <= 100 and read.torn in (0, 1)
        if not flips:  # a clean cut: a prefix of whole batches, the rest counted torn
            assert read.events["job"].to_list() == [f"j{i}" for i in range(read.events.height)]


def test_export_gives_csv_and_parquet_from_either_format(tmp_path: Path) -> None:
    jobs = [(i * 1000, [5, 6, 7, 8], "none", "local") for i in range(30)]
    for fmt in ("csv", "arrow"):
        run = tmp_path / fmt
        _write_trial(run / "trials" / "p00-t00", jobs, fmt == "arrow")
    want = read_trial_log(tmp_path / "csv" / "trials" / "p00-t00")
    for fmt in ("csv", "arrow"):
        csv_out = export_events(tmp_path / fmt, "csv")[0]
        pq_out = export_events(tmp_path / fmt, "parquet")[0]
        assert csv_out.events == pq_out.events == want.height
        assert csv_out.path is not None and pq_out.path is not None
        assert read_events(csv_out.path, store=False).equals(want)
        assert pl.read_parquet(pq_out.path).equals(want)
    (tmp_path / "arrow" / "trials" / "p00-t01").mkdir()  # a trial that left no log
    done = export_events(tmp_path / "arrow", "csv")
    assert [(e.trial, e.path is None) for e in done] == [("p00-t00", False), ("p00-t01", True)]
    (tmp_path / "arrow" / "experiment.json").write_text('{"id": "arrow", "name": "x"}')
    p = subprocess.run(
        [str(BIN), "export", str(tmp_path / "arrow"), "--format", "csv"],
        env=cli_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0 and "p00-t01: no event log, skipped" in p.stderr, p.stderr
    csv_log = tmp_path / "arrow" / "trials" / "p00-t00" / "events.csv"
    csv_log.write_text("job,stage,t_ns,source,precision_ns,agent,clock_offset_ns,attrs\n")
    with pytest.raises(ResultsError, match=r"two event logs, events\.csv and events\.arrows"):
        read_trial_log(csv_log.parent)  # neither read over the other, silently
    csv_log.unlink()
    (tmp_path / "empty-run").mkdir()
    with pytest.raises(ResultsError, match="no trial"):
        export_events(tmp_path / "empty-run", "csv")


def test_a_full_disk_is_one_error_and_the_log_stays_readable(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "small", "384k") as mnt:
        path = mnt / "events.arrows"
        log = ArrowEventLog(path, batch_size=500)
        with pytest.raises(ResourceError) as err:
            for i in range(1_000_000):
                log.append(f"job-{i:08d}", "submit", i, attrs={"pad": "x" * 40})
        assert "No space left on device" in err.value.message and err.value.where == str(path)
        read = read_columnar(path)
        assert read.torn <= 1 and read.events.height >= 500
        assert read.events["job"].to_list() == [f"job-{i:08d}" for i in range(read.events.height)]


def test_a_trial_keeps_the_format_it_has(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    with EventLog(old / "events.csv") as log:
        log.append("j0", "submit", 1)
    for d in (old, new):
        w = open_trial_log(d, "arrow")
        w.append("j1", "submit", 2)
        w.close()
    assert not (old / "events.arrows").exists() and not (new / "events.csv").exists()
    assert read_trial_log(old)["job"].to_list() == ["j0", "j1"]
    assert read_trial_log(new)["job"].to_list() == ["j1"]
    assert read_trial_log(tmp_path / "none").height == 0


def test_reading_in_groups_gives_the_same_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridbench.jobflow.events import columnar_read

    path = tmp_path / "events.arrows"
    with ArrowEventLog(path, batch_size=10) as log:
        for i in range(95):
            origin = Origin("ce" if i % 2 else "client", 1_000, f"agent-{i % 3}", i % 3)
            log.append(f"j{i}", ["submit", "ce_entry", "client_done"][i % 3], i, origin)
    whole = read_columnar(path).events
    monkeypatch.setattr(columnar_read, "CONVERT_EVENTS", 25)
    grouped = read_columnar(path).events
    assert grouped.equals(whole) and grouped.n_chunks() > 1 and whole.height == 95
    assert grouped["agent"].to_list() == [f"agent-{i % 3}" for i in range(95)]
    # a chunk is the batches that reach CONVERT_EVENTS events (batches of 10: 30 events)
    sizes = [f.height for f in columnar_read.ColumnarScan(path).frames(categorical=True)]
    assert sizes == [30, 30, 30, 5]
    frames = list(columnar_read.ColumnarScan(path).frames(["stage", "agent"], categorical=True))
    assert isinstance(frames[0].schema["stage"], pl.Categorical)
    assert pl.concat(frames)["agent"].cast(pl.String).to_list() == grouped["agent"].to_list()


def test_export_command(tmp_path: Path) -> None:
    jobs = [(i * 1000, [5, 6, 7, 8], "none", "agent-0") for i in range(20)]
    run = tmp_path / "results" / "r1"
    _write_trial(run / "trials" / "p00-t00", jobs, True)
    (run / "experiment.json").write_text(json.dumps({"name": "x", "status": "complete"}))
    env = cli_env(tmp_path / "results")
    p = subprocess.run(
        [str(BIN), "export", str(run), "--format", "parquet", "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "p00-t00: 100 events" in p.stdout
    got = pl.read_parquet(tmp_path / "out" / "p00-t00.events.parquet")
    assert got.equals(read_trial_log(run / "trials" / "p00-t00"))
    (run / "trials" / "p00-t00" / "events.arrows").write_bytes(b"\xff\xff\xff\xff" + b"\x01" * 8192)
    bad = subprocess.run(
        [str(BIN), "export", str(run)], env=env, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "events.arrows" in bad.stderr and "fix" in bad.stderr.lower()


def test_writing_the_log_does_not_import_pandas(tmp_path: Path) -> None:
    # pa.array(list) would: ~0.5 s at the first flush, and longer collections afterwards
    code = (
        "import sys\n"
        "from gridbench.jobflow.events.columnar import ArrowEventLog\n"
        f"with ArrowEventLog({str(tmp_path / 'e.arrows')!r}, batch_size=100) as log:\n"
        "    for i in range(1000):\n"
        "        log.append(f'j{i}', 'submit', i, attrs={'k': i} if i % 2 else None)\n"
        "print('pandas' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert read_columnar(tmp_path / "e.arrows").events.height == 1000


def _log_with_bad_job_bytes(path: Path) -> None:
    """A log whose one batch holds a job id that is not UTF-8 (a writer never makes one;
    a damaged or hostile file may)."""
    from gridbench.jobflow.events.columnar import ARROW_SCHEMA
    from gridbench.jobflow.events.dictionaries import strings_array

    good = pa.array(["ok-1", "ok-2"], pa.string())
    bad = pa.StringArray.from_buffers(2, good.buffers()[1], pa.py_buffer(b"ok-1ok-\xff"), None, 0)
    stages = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), strings_array(["s"]))
    ints = pa.array([1, 2], pa.int64())
    batch = pa.RecordBatch.from_arrays(
        [bad, stages, ints, stages, ints, stages, ints, pa.nulls(2, pa.string())],
        schema=ARROW_SCHEMA,
    )
    with pa.OSFile(str(path), "wb") as fh, pa.ipc.new_stream(fh, ARROW_SCHEMA) as w:
        w.write_batch(batch)


def test_a_column_that_is_not_utf8_is_one_error_when_read(tmp_path: Path) -> None:
    """Columns are validated as they are read: the damaged job column is one error naming
    the file, while a reader of other columns gets its events."""
    p = tmp_path / "events.arrows"
    _log_with_bad_job_bytes(p)
    with pytest.raises(ResultsError, match="damaged event batch") as err:
        read_columnar(p)
    assert err.value.where == str(p) and err.value.fix
    times = read_columnar(p, columns=["stage", "t_ns"]).events
    assert times["t_ns"].to_list() == [1, 2] and times["stage"].to_list() == ["s", "s"]


@pytest.mark.parametrize(
    "body",
    [
        b"a,b,c\n1,2,3\n",  # another tool's CSV
        b"p00-t00-000001,submit,1,client,1000,local,0,\n",  # no header
        bytes(range(256)) * 40 + b"\n",  # random bytes
    ],
)
def test_a_csv_log_polars_cannot_read_is_one_short_error(tmp_path: Path, body: bytes) -> None:
    """Every polars failure on a CSV log (another header: a SchemaError, once an internal
    error) is one ResultsError naming the file, with polars' reason cut to 200 characters,
    by both readers (whole and chunked)."""
    trial = tmp_path / "trials" / "p00-t00"
    trial.mkdir(parents=True)
    (trial / "events.csv").write_bytes(body)
    with pytest.raises(ResultsError) as whole:
        read_events(trial / "events.csv")
    with pytest.raises(ResultsError) as chunked, scan_trial_log(trial) as scan:
        assert scan is not None
        list(scan.chunks(["job", "stage", "t_ns"]))
    for err in (whole.value, chunked.value):
        assert err.message.startswith("event log is not valid CSV: "), err.message
        assert len(err.message) <= len("event log is not valid CSV: ") + 200
        assert err.where == str(trial / "events.csv") and "job,stage,t_ns" in (err.fix or "")
