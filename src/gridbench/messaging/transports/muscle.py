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


def write_ymmsl(
    workdir: Path,
    driver_args: Sequence[str],
    mirror_args: Sequence[str],
    *,
    mirror_by_hand: bool = False,
) -> Path:
    """The yMMSL (v0.1) configuration of the pair; both run under this venv's python
    (``mirror_by_hand``: the manager starts the driver only, the mirror is started
    elsewhere: yMMSL v0.2 with the mirror's ``execution_model: manual``).

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
    if mirror_by_hand:
        text = _by_hand(py, args(driver_args), args(mirror_args))
    path = workdir / "pingpong.ymmsl"
    path.write_text(text, encoding="utf-8")
    return path


def _by_hand(py: str, driver_args: str, mirror_args: str) -> str:
    """The pair in yMMSL v0.2, whose ``execution_model: manual`` (v0.1 has none) makes
    ``--start-all`` start the driver only and wait for a mirror started by hand."""
    return (
        "ymmsl_version: v0.2\n"
        "description: gridbench net ping-pong, the mirror on another host\n"
        "models:\n"
        "  gridbench_pingpong:\n"
        "    description: a driver and a mirror\n"
        "    components:\n"
        "      driver:\n"
        "        description: sends and times each round trip\n"
        "        ports: {o_i: out, s: in}\n"
        "        implementation: gridbench_driver\n"
        "      mirror:\n"
        "        description: sends each message back\n"
        "        ports: {f_init: in, o_f: out}\n"
        "        implementation: gridbench_mirror\n"
        "    conduits:\n"
        "      driver.out: mirror.in\n"
        "      mirror.out: driver.in\n"
        "programs:\n"
        "  gridbench_driver:\n"
        "    description: the driver, started by the manager\n"
        f"    executable: {py}\n"
        f"    args: {driver_args}\n"
        "  gridbench_mirror:\n"
        "    description: the mirror, started by gridbench on its host\n"
        "    execution_model: manual\n"
        f"    executable: {py}\n"
        f"    args: {mirror_args}\n"
        "resources:\n"
        "  gridbench_pingpong.driver: {threads: 1}\n"
        "  gridbench_pingpong.mirror: {threads: 1}\n"
    )


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
    files += [workdir / "mirror.log"]
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


def _failed(size: int, test: int, error: str, env: str = "host") -> dict[str, Any]:
    return {
        "pattern": "pingpong",
        "transport": TRANSPORT,
        "env": env,
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
    env: str = "host",
    mirror_on: MirrorSpawn | None = None,
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
    arguments (tests use it to start a failing mirror).

    ``mirror_on`` starts the mirror on another host (net's ``remote`` environment): the
    mirror's program is then manual; the manager starts the driver here,
    writes its location to a file, and the mirror is started there, told where it is. The
    two instances reach each other at the addresses they register (every interface's), so
    their traffic takes the direct path between the hosts. ``env`` names the records'
    environment."""
    workdir = workdir.resolve()  # the manager runs in it: its paths must not be relative
    config = _prepare(plan, workdir, mirror_args, env, mirror_by_hand=mirror_on is not None)
    proc = _start_manager(workdir, config)
    register(proc, ROLE)
    instances: list[subprocess.Popen[bytes]] = []
    follower = _Follower(proc, _Lines(workdir / RECORDS), plan.expected(), timeout)
    try:
        if mirror_on is not None:
            instances = [_start_mirror(workdir, timeout, mirror_on, proc)]
        yield from follower.records()
    except MuscleStartError as exc:
        follower.error = str(exc)
    finally:
        if not follower.finished:
            _stop(proc)
            for p in instances:
                _stop(p)
    if follower.error is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
        return
    context = failure_context(workdir)
    message = f"muscle3: {follower.error}" + (f"\n{context}" if context else "")
    size, test = follower.expected[follower.done]
    yield _failed(size, test, message, env)
    for later in plan.sizes[plan.sizes.index(size) + 1 :]:
        yield _failed(later, 0, f"muscle3: not measured, the pair failed at {size} bytes", env)


class MuscleStartError(Exception):
    """The manager or an instance started by hand did not come up."""


#: starts the mirror on another host: (argv, role, log) -> the local process (an SSH one)
MirrorSpawn = Callable[[list[str], str, Path], "subprocess.Popen[bytes]"]
LOCATION_FILE: Final = "manager.location"


def _start_mirror(
    workdir: Path, timeout: float, mirror_on: MirrorSpawn, manager: subprocess.Popen[bytes]
) -> subprocess.Popen[bytes]:
    """The manager's location (from its file), then the mirror there, told where the
    manager is; its (local) process."""
    loc_file = workdir / LOCATION_FILE
    deadline = time.monotonic() + timeout
    location = ""
    while not location:
        with contextlib.suppress(OSError):
            location = loc_file.read_text(encoding="utf-8").strip()
        if manager.poll() is not None:
            raise MuscleStartError(f"muscle_manager exited with status {manager.returncode}")
        if not location and time.monotonic() > deadline:
            raise MuscleStartError(f"muscle_manager gave no location within {timeout:g} s")
        time.sleep(_POLL)
    mirror_argv = [sys.executable, "-m", _mirror_module(), "--muscle-instance=mirror"]
    try:
        return mirror_on([*mirror_argv, f"--muscle-manager={location}"], "muscle_mirror",
                         workdir / "mirror.log")  # fmt: skip
    except Exception as exc:  # the environment's error: the host could not start it
        raise MuscleStartError(f"the mirror could not start: {exc}") from None


def _prepare(
    plan: PingpongPlan,
    workdir: Path,
    mirror_args: Sequence[str] | None,
    env: str = "host",
    *,
    mirror_by_hand: bool = False,
) -> Path:
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
        "env": env,
    }
    (workdir / "plan.json").write_text(json.dumps(doc), encoding="utf-8")
    return write_ymmsl(
        workdir,
        ["-m", _driver_module(), str(workdir / "plan.json")],
        list(mirror_args) if mirror_args is not None else ["-m", _mirror_module()],
        mirror_by_hand=mirror_by_hand,
    )


def _start_manager(workdir: Path, config: Path) -> subprocess.Popen[bytes]:
    """``muscle_manager --start-all`` in its own session, output to muscle_manager.out, its
    location written to a file (for a mirror started by hand)."""
    (workdir / LOCATION_FILE).unlink(missing_ok=True)
    argv = [sys.executable, "-m", "muscle3.muscle_manager", "--start-all"]
    argv += ["--location-file", str(workdir / LOCATION_FILE)]
    argv += ["--run-dir", str(workdir / "run"), str(config)]
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
