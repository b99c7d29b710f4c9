"""Running the storage-in-depth phases of an io spec: POSIX conformance (pjdfstest in
each target), trace replay (a fio I/O log replayed on each target over parallel streams,
with and without O_SYNC) and identity checks. Every result is appended to its record
file as it exists:

    RUN/conformance.jsonl    one line per (target, pjdfstest case)
    RUN/replay.jsonl         one line per (target, rep, streams, sync, stream, direction)
    RUN/identities.jsonl     one line per identity check
    RUN/raw/pjdfstest-*.toml, *.txt, RUN/raw/trace.iolog, the replays' fio files
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from gridbench.errors import BackendError
from gridbench.io.conformance import (
    config_text,
    parse_output,
    patterns,
    primary_groups,
    run_pjdfstest,
)
from gridbench.io.fio import FioJob
from gridbench.io.model import IoSpec
from gridbench.io.parse import JobResult
from gridbench.io.safety import TargetState
from gridbench.io.trace import TraceInfo, check_trace
from gridbench.store.layout import RunDir, write_text_atomic
from gridbench.store.records import append_record


class InDepthRunner(Protocol):
    """What the in-depth phases use of the run's runner (:class:`gridbench.io.runner.IoRunner`,
    which calls them): its spec, results folder, targets, progress line and fio."""

    @property
    def spec(self) -> IoSpec: ...
    @property
    def run(self) -> RunDir | None: ...
    @property
    def targets(self) -> list[TargetState]: ...
    @property
    def progress(self) -> Callable[[str], None]: ...

    def run_jobs(self, label: str, jobs: list[FioJob], bytes_moved: int) -> list[JobResult]:
        """One fio run, its job file and raw output kept in raw/."""
        ...


REPLAY_FILE = "gridbench-replay.dat"
RECORD_FILE = "gridbench-record.dat"


def searchable_note(workdir: Path) -> str | None:
    """A note when a directory above ``workdir`` is not searchable by other users: the
    conformance cases run as another user then fail for that reason, not the target's."""
    for d in [workdir, *workdir.parents]:
        try:
            if not os.stat(d).st_mode & 0o001:
                return (
                    f"{d} is not searchable by other users: pjdfstest's cases that switch "
                    "users fail there (chmod o+x, or put the target elsewhere)"
                )
        except OSError:
            return None
    return None


def check_in_depth(runner: InDepthRunner) -> None:
    """Spec problems only the machine can show, before anything runs: unknown users, a
    missing pjdfstest, a given trace that is not a trace."""
    spec = runner.spec
    if spec.conformance.enabled:
        primary_groups(spec.conformance.users, "conformance.users")
        if shutil.which(spec.conformance.pjdfstest) is None:
            raise BackendError(
                f"pjdfstest not found: {spec.conformance.pjdfstest}",
                where="conformance.pjdfstest",
                fix="install it with scripts/install-pjdfstest (cargo install pjdfstest "
                "--version 0.2.2), or give its path in conformance.pjdfstest",
            )
    if spec.replay.enabled and spec.replay.trace is not None:
        check_trace(Path(spec.replay.trace))
    if spec.identities is not None and spec.identities.enabled:
        from gridbench.io.identities import check_users

        check_users(spec.identities.users)


def conformance(runner: InDepthRunner, s: TargetState) -> None:
    """pjdfstest in a fresh directory of the target; one record per case."""
    assert runner.run is not None
    spec = runner.spec.conformance
    name = s.prepared.name
    raw = runner.run.path / "raw"
    cfg = raw / f"pjdfstest-{name}.toml"
    write_text_atomic(cfg, config_text(spec, primary_groups(spec.users, "conformance.users")))
    d = s.prepared.workdir / "pjdfstest"
    d.mkdir()
    d.chmod(0o755)  # cases run as the two users must reach their directories
    note = searchable_note(d)
    if note:
        s.notes.append(note)
    runner.progress(f"{name}: POSIX conformance (pjdfstest)")
    # pjdfstest binds Unix sockets under its path, and a socket's path must fit in 108
    # bytes: it runs through a short link in /tmp, its files land in the target
    short = Path(tempfile.mkdtemp(prefix="gb-", dir="/tmp"))
    try:
        short.chmod(0o755)
        (short / "t").symlink_to(d)
        text = run_pjdfstest(
            spec.pjdfstest, cfg, short / "t", spec.timeout, patterns(spec.syscalls)
        )
    finally:
        shutil.rmtree(short, ignore_errors=True)
    out = raw / f"pjdfstest-{name}.txt"
    write_text_atomic(out, text)
    for rec in parse_output(text, str(out)):
        if rec["syscall"] not in spec.syscalls:
            continue
        append_record(runner.run.path / "conformance.jsonl", {"target": name, **rec})
    shutil.rmtree(d, ignore_errors=True)


def record_trace(runner: InDepthRunner, s: TargetState) -> TraceInfo:
    """Record the replay's trace from the spec's fio workload on target ``s``."""
    assert runner.run is not None
    r = runner.spec.replay
    log = runner.run.path / "raw" / "trace.iolog"
    opts: dict[str, str | int | bool] = {
        "directory": str(s.prepared.workdir),
        "filename": RECORD_FILE,
        "rw": r.workload,
        "rwmixread": r.read_pct,
        "size": r.size,
        "bs": r.block_size,
        "write_iolog": str(log),
    }
    runner.progress(f"{s.prepared.name}: recording the replay trace ({r.workload})")
    runner.run_jobs(f"{s.prepared.name}-record", [FioJob("record", opts)], r.size)
    (s.prepared.workdir / RECORD_FILE).unlink(missing_ok=True)
    return check_trace(log)


def start_delays(spread_s: float, streams: int, key: str) -> list[int]:
    """Each stream's start in ms, drawn uniformly within ``spread_s`` (the seed's random
    start per concurrent IO stream); the same ``key`` draws the same starts, so a run can
    be repeated. Empty when the spread is 0: every stream starts at once."""
    if spread_s <= 0:
        return []
    rng = random.Random(key)
    return [round(rng.uniform(0.0, spread_s) * 1000) for _ in range(streams)]


def replay(runner: InDepthRunner, trace: TraceInfo, s: TargetState, rep: int) -> None:
    """The trace replayed on ``s`` for every (sync, streams) of the spec: all streams
    replay the same trace onto one shared file, as fast as fio can (no stalls)."""
    assert runner.run is not None
    r = runner.spec.replay
    wd = s.prepared.workdir
    size = max(trace.extent or r.size, r.block_size)
    layout: dict[str, str | int | bool] = {
        "directory": str(wd),
        "filename": REPLAY_FILE,
        "rw": "write",
        "size": size,
        "bs": r.block_size,
    }
    runner.run_jobs(f"{s.prepared.name}-replay-layout", [FioJob("layout", layout)], size)
    for sync in r.sync:
        for n in r.streams:
            tag = "osync" if sync else "nosync"
            runner.progress(f"{s.prepared.name} rep {rep + 1}: replay {n} streams {tag}")
            opts: dict[str, str | int | bool] = {
                "read_iolog": str(trace.path),
                "replay_redirect": str(wd / REPLAY_FILE),
                "replay_no_stall": True,
                "numjobs": n,
                "sync": sync,
                "direct": s.mode.used == "direct",
                "lat_percentiles": True,  # total latency with its bins, as the matrix
                "percentile_list": "50:90:99:99.9",
            }
            label = f"{s.prepared.name}-r{rep}-replay-{n}-{tag}"
            moved = n * (trace.extent or r.size)
            delays = start_delays(r.start_spread, n, f"{r.seed}/{s.prepared.name}/{rep}/{label}")
            jobs = [FioJob("replay", opts)]
            if delays:  # one job per stream, each with its own start
                jobs = [
                    FioJob(f"replay-{i}", {**opts, "numjobs": 1, "startdelay": f"{d_ms}ms"})
                    for i, d_ms in enumerate(delays)
                ]
            for res in runner.run_jobs(label, jobs, moved):
                name = res.job.rsplit(".", 1)[0]
                stream = int(name.rsplit("-", 1)[1]) if delays and "-" in name else None
                append_record(
                    runner.run.path / "replay.jsonl",
                    {
                        "target": s.prepared.name,
                        "rep": rep,
                        "streams": n,
                        "sync": sync,
                        "stream": res.client,
                        "direction": res.direction,
                        "kbps": res.kbps,
                        "iops": res.iops,
                        "bytes": res.bytes,
                        "runtime_s": res.runtime_s,
                        "hist": [res.hist.ns.tolist(), res.hist.counts.tolist()],
                        **(
                            {"start_delay_s": delays[stream] / 1000.0}
                            if delays and stream is not None
                            else {}
                        ),
                    },
                )
    (wd / REPLAY_FILE).unlink(missing_ok=True)


def run_in_depth(runner: InDepthRunner) -> None:
    """Every enabled in-depth phase, after the matrices: conformance per target, the
    trace (recorded on the baseline, else the first target) replayed per repetition and
    target, then the identity checks."""
    assert runner.run is not None
    spec = runner.spec
    if spec.conformance.enabled:
        for s in runner.targets:
            conformance(runner, s)
    if spec.replay.enabled:
        first = next(
            (t for t in runner.targets if t.prepared.name == spec.baseline), runner.targets[0]
        )
        if spec.replay.trace is not None:
            trace = check_trace(Path(spec.replay.trace))
        else:
            trace = record_trace(runner, first)
        runner.run.update_experiment(
            replay_trace={"path": str(trace.path), "format": trace.format, "ios": trace.ios}
        )
        for rep in range(spec.repetitions):
            for s in runner.targets:
                replay(runner, trace, s, rep)
    if spec.identities is not None and spec.identities.enabled:
        from gridbench.io.identities import run_identity_checks

        for s in runner.targets:
            runner.progress(f"{s.prepared.name}: identity checks")
            for res in run_identity_checks(spec.identities, s.prepared, s.peer):
                append_record(
                    runner.run.path / "identities.jsonl", {"target": s.prepared.name, **res}
                )
