"""The MUSCLE3 ping-pong: a driver and a mirror coupled under ``muscle_manager
--start-all``, written into a work directory at run time (nothing is shipped).

Layout of ``workdir`` after a run::

    plan.json              what the driver measures (sizes, T, M, warm-up, records file)
    pingpong.ymmsl         the coupled pair: driver.out -> mirror.in, mirror.out -> driver.in
    records.jsonl          one pingpong record per test, appended and flushed by the driver
    muscle_manager.out     the manager's stdout and stderr
    run/                   MUSCLE3's run directory: muscle3_manager.log, instances/<name>/
                           stdout.txt, stderr.txt, performance.sqlite

The manager runs in its own session so a timeout (or ``gridbench cleanup``, through
``register``) stops it together with the agent and both instances it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

TRANSPORT: Final = "muscle3"
ROLE: Final = "muscle_manager"
RECORDS: Final = "records.jsonl"
_POLL = 0.02  # seconds between looks at the records file
_TAIL_LINES = 15

Register = Callable[["subprocess.Popen[bytes]", str], None]


def _driver_module() -> str:
    return "gridbench.messaging.transports.muscle_driver"


def _mirror_module() -> str:
    return "gridbench.messaging.transports.muscle_mirror"


def write_ymmsl(workdir: Path, driver_args: Sequence[str], mirror_args: Sequence[str]) -> Path:
    """The yMMSL (v0.1) configuration of the pair; both run under this venv's python.

    MUSCLE3 pastes executable and args unquoted into a bash ``run_script.sh``, so each is
    shell-quoted first; then written as JSON, which is YAML."""

    def args(a: Sequence[str]) -> str:
        return json.dumps([shlex.quote(x) for x in a])

    py = json.dumps(shlex.quote(sys.executable))
    text = (
        "ymmsl_version: v0.1\n"
        "model:\n"
        "  name: gridbench_pingpong\n"
        "  components:\n"
        "    driver:\n"
        "      implementation: gridbench_driver\n"
        "      ports:\n"
        "        o_i: [out]\n"
        "        s: [in]\n"
        "    mirror:\n"
        "      implementation: gridbench_mirror\n"
        "      ports:\n"
        "        f_init: [in]\n"
        "        o_f: [out]\n"
        "  conduits:\n"
        "    driver.out: mirror.in\n"
        "    mirror.out: driver.in\n"
        "implementations:\n"
        "  gridbench_driver:\n"
        f"    executable: {py}\n"
        f"    args: {args(driver_args)}\n"
        "  gridbench_mirror:\n"
        f"    executable: {py}\n"
        f"    args: {args(mirror_args)}\n"
        "resources:\n"
        "  driver:\n"
        "    threads: 1\n"
        "  mirror:\n"
        "    threads: 1\n"
    )
    path = workdir / "pingpong.ymmsl"
    path.write_text(text, encoding="utf-8")
    return path


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def failure_context(workdir: Path) -> str:
    """The tails of the manager's output and of each instance's stderr, for an error."""
    parts: list[str] = []
    files = [workdir / "muscle_manager.out", workdir / "run" / "muscle3_manager.log"]
    files += sorted((workdir / "run" / "instances").glob("*/stderr.txt"))
    for f in files:
        tail = _tail(f)
        if tail:
            parts.append(f"--- {f.relative_to(workdir)}\n{tail}")
    return "\n".join(parts)


def _stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM the manager's whole session (agent and instances too), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait(grace)


class _Lines:
    """Complete lines appended to a file since the last call."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._partial = b""

    def new(self) -> list[str]:
        try:
            with self._path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        return [ln.decode("utf-8", "replace") for ln in lines if ln.strip()]


def _failed(size: int, test: int, error: str) -> dict[str, Any]:
    return {
        "pattern": "pingpong",
        "transport": TRANSPORT,
        "env": "host",
        "size_bytes": size,
        "test": test,
        "ok": False,
        "error": error,
        "rtt_ns": [],
    }


@dataclass(frozen=True, slots=True)
class PingpongPlan:
    """What the driver measures: ``tests`` tests of ``round_trips`` round trips per size,
    each test after ``warmup`` unmeasured round trips."""

    sizes: tuple[int, ...]
    tests: int
    round_trips: int
    warmup: int = 1

    def expected(self) -> list[tuple[int, int]]:
        """(size, test) of every record, in the order the driver writes them."""
        return [(s, t) for s in self.sizes for t in range(self.tests)]


def muscle_pingpong(
    plan: PingpongPlan,
    workdir: Path,
    timeout: float,
    register: Register,
    *,
    mirror_args: Sequence[str] | None = None,
) -> Generator[dict[str, Any], None, None]:
    """Run the driver/mirror pair under ``muscle_manager --start-all`` and yield one
    ``pingpong`` record per test (size by size, T tests each, M round trips per test) as
    the driver writes it.

    ``timeout`` bounds the wait for each next record, the first one included (so it
    covers MUSCLE3's start-up, about 1-3 s here). When the manager or an instance fails,
    or the timeout passes, the pair is stopped and the test in progress becomes a record
    with ``ok: false`` and the error (with the tails of MUSCLE3's logs); each later size
    gets one such record (test 0) saying it was not measured. ``register(proc, role)`` is
    called with the manager's Popen at once. ``mirror_args`` replaces the mirror's python
    arguments (tests use it to start a failing mirror)."""
    config = _prepare(plan, workdir, mirror_args)
    proc = _start_manager(workdir, config)
    register(proc, ROLE)
    follower = _Follower(proc, _Lines(workdir / RECORDS), plan.expected(), timeout)
    try:
        yield from follower.records()
    finally:
        if not follower.finished:
            _stop(proc)
    if follower.error is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
        return
    context = failure_context(workdir)
    message = f"muscle3: {follower.error}" + (f"\n{context}" if context else "")
    size, test = follower.expected[follower.done]
    yield _failed(size, test, message)
    for later in plan.sizes[plan.sizes.index(size) + 1 :]:
        yield _failed(later, 0, f"muscle3: not measured, the pair failed at {size} bytes")


def _prepare(plan: PingpongPlan, workdir: Path, mirror_args: Sequence[str] | None) -> Path:
    """A clean work directory holding the plan and the yMMSL; returns the yMMSL path."""
    workdir.mkdir(parents=True, exist_ok=True)
    records = workdir / RECORDS
    records.unlink(missing_ok=True)
    rundir = workdir / "run"
    # MUSCLE3 refuses (and then hangs) when an instance directory already exists
    shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir()
    doc = {
        "sizes": list(plan.sizes),
        "tests": plan.tests,
        "round_trips": plan.round_trips,
        "warmup": plan.warmup,
        "out": str(records),
    }
    (workdir / "plan.json").write_text(json.dumps(doc), encoding="utf-8")
    return write_ymmsl(
        workdir,
        ["-m", _driver_module(), str(workdir / "plan.json")],
        list(mirror_args) if mirror_args is not None else ["-m", _mirror_module()],
    )


def _start_manager(workdir: Path, config: Path) -> subprocess.Popen[bytes]:
    """``muscle_manager --start-all`` in its own session, output to muscle_manager.out."""
    argv = [
        sys.executable,
        "-m",
        "muscle3.muscle_manager",
        "--start-all",
        "--run-dir",
        str(workdir / "run"),
        str(config),
    ]
    with (workdir / "muscle_manager.out").open("wb") as out:
        return subprocess.Popen(
            argv,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


class _Follower:
    """Reads the driver's records as they come; ends at the last one, a bad one, the
    manager's exit or the timeout (``error`` then says which)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        lines: _Lines,
        expected: list[tuple[int, int]],
        timeout: float,
    ) -> None:
        self.proc = proc
        self.lines = lines
        self.expected = expected
        self.timeout = timeout
        self.done = 0
        self.error: str | None = None

    @property
    def finished(self) -> bool:
        """Every record came and none was wrong."""
        return self.error is None and self.done == len(self.expected)

    def records(self) -> Generator[dict[str, Any], None, None]:
        deadline = time.monotonic() + self.timeout
        while self.done < len(self.expected):
            exited = self.proc.poll() is not None  # look before reading: no record is missed
            new = self.lines.new()
            for line in new:
                rec = self._check(line)
                if rec is None:
                    return
                self.done += 1
                yield rec
            if self.done == len(self.expected):
                return
            if new:
                deadline = time.monotonic() + self.timeout
            elif exited:
                self.error = f"muscle_manager exited with status {self.proc.returncode} early"
                return
            elif time.monotonic() > deadline:
                self.error = (
                    f"no result from the MUSCLE3 pair within {self.timeout:g} s; stopped it"
                )
                return
            else:
                time.sleep(_POLL)

    def _check(self, line: str) -> dict[str, Any] | None:
        """The record in ``line`` if it is the next expected one; else None and ``error``."""
        try:
            rec = json.loads(line)
        except ValueError:
            self.error = f"the driver wrote a line that is not JSON: {line[:200]!r}"
            return None
        if (
            not isinstance(rec, dict)
            or (rec.get("size_bytes"), rec.get("test")) != self.expected[self.done]
        ):
            self.error = f"the driver wrote an unexpected record: {line[:200]!r}"
            return None
        return rec
