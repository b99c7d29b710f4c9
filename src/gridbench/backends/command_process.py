"""Runs client programs (no shell) and measures what each one cost.

Every call is timed (wall, from spawn to exit) and its CPU is read from the kernel's
resource usage of the reaped child (``os.wait4``: user + system, including any children it
waited for, such as the JVM behind a wrapper script). The totals per operation let a run
show when the client tools, not the system under test, were the heavy part (the UNICORE
UCC finding, METHODS 1.5).

Each client runs in its own session, so a time-out or a cancelled call kills the whole
process group. A grandchild that keeps the output pipes open (a detached job) cannot hold
a call open: once the client has exited, reading stops after a short grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 8 * 1024 * 1024  # bytes kept per stream; the rest is read and dropped
PIPE_GRACE_S = 1.0  # how long to wait for EOF after the client exited


@dataclass(frozen=True, slots=True)
class CallResult:
    """What one client call printed and returned."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float


class ClientStartError(Exception):
    """The client program could not be started (missing, not executable, bad argv)."""

    def __init__(self, argv: Sequence[str], reason: str) -> None:
        super().__init__(f"cannot start {argv[0]!r}: {reason}")
        self.argv = tuple(argv)
        self.reason = reason


class ClientTimeout(Exception):
    """The client did not exit within its time-out and was killed."""

    def __init__(self, argv: Sequence[str], timeout_s: float, stdout: bytes, stderr: bytes):
        super().__init__(f"{argv[0]!r} did not exit within {timeout_s:g}s and was killed")
        self.argv = tuple(argv)
        self.timeout_s = timeout_s
        self.stdout = stdout
        self.stderr = stderr


@dataclass(slots=True)
class OpCost:
    """Counters of one operation type."""

    calls: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_wall_s: float = 0.0
    nonzero_exits: int = 0
    timeouts: int = 0
    start_errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "wall_s": round(self.wall_s, 6),
            "cpu_s": round(self.cpu_s, 6),
            "max_wall_s": round(self.max_wall_s, 6),
            "nonzero_exits": self.nonzero_exits,
            "timeouts": self.timeouts,
            "start_errors": self.start_errors,
        }


@dataclass(slots=True)
class ClientCost:
    """Client-process counters per operation, plus peaks over all of them."""

    by_op: dict[str, OpCost] = field(default_factory=dict)
    max_rss_bytes: int = 0
    max_parallel: int = 0

    def op(self, name: str) -> OpCost:
        return self.by_op.setdefault(name, OpCost())

    def record(self, op: str, wall_s: float, ru: resource.struct_rusage, exit_code: int) -> None:
        c = self.op(op)
        c.calls += 1
        c.wall_s += wall_s
        c.cpu_s += ru.ru_utime + ru.ru_stime
        c.max_wall_s = max(c.max_wall_s, wall_s)
        if exit_code != 0:
            c.nonzero_exits += 1
        self.max_rss_bytes = max(self.max_rss_bytes, ru.ru_maxrss * 1024)  # Linux: KiB

    def to_dict(self) -> dict[str, Any]:
        """``{"calls", "wall_s", "cpu_s", "max_rss_bytes", "max_parallel", "by_op"}``."""
        ops = {k: v.to_dict() for k, v in sorted(self.by_op.items())}
        return {
            "calls": sum(v.calls for v in self.by_op.values()),
            "wall_s": round(sum(v.wall_s for v in self.by_op.values()), 6),
            "cpu_s": round(sum(v.cpu_s for v in self.by_op.values()), 6),
            "max_rss_bytes": self.max_rss_bytes,
            "max_parallel": self.max_parallel,
            "by_op": ops,
        }


class _Collect(asyncio.Protocol):
    """Keeps up to ``limit`` bytes of a pipe and notes its end."""

    def __init__(self, limit: int, done: asyncio.Future[None]) -> None:
        self.buf = bytearray()
        self.limit = limit
        self.done = done

    def data_received(self, data: bytes) -> None:
        room = self.limit - len(self.buf)
        if room > 0:
            self.buf += data[:room]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _wait4(pid: int) -> tuple[int, resource.struct_rusage]:
    """Wait for ``pid`` to exit without blocking the loop; its wait status and usage."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # old kernel: a thread waits instead
        _, status, ru = await asyncio.to_thread(os.wait4, pid, 0)
        return status, ru
    ready: asyncio.Future[None] = loop.create_future()

    def _readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, _readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
        os.close(fd)
    _, status, ru = os.wait4(pid, 0)  # it has exited: returns at once
    return status, ru


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class ProcessRunner:
    """Spawns client calls with bounded parallelism and accounts their cost."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_processes: int = 64,
        output_limit: int = OUTPUT_LIMIT,
    ) -> None:
        self.env = {**os.environ, **env} if env else None
        self.cwd = cwd
        self.output_limit = output_limit
        self.cost = ClientCost()
        self._window = ClientCost()
        self._sem = asyncio.Semaphore(max_processes)
        self._running = 0
        self._reapers: set[asyncio.Task[tuple[int, resource.struct_rusage]]] = set()

    def take_window(self) -> dict[str, Any]:
        """The counters since the previous call (then start a new window)."""
        w, self._window = self._window, ClientCost()
        return w.to_dict()

    async def run(
        self, op: str, argv: Sequence[str], *, stdin: bytes | None = None, timeout_s: float
    ) -> CallResult:
        """Run ``argv`` (no shell) and return its output; raise ClientStartError/Timeout."""
        async with self._sem:
            return await self._run(op, tuple(argv), stdin, timeout_s)

    async def _run(
        self, op: str, argv: tuple[str, ...], stdin: bytes | None, timeout_s: float
    ) -> CallResult:
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError) as exc:
            for c in (self.cost, self._window):
                c.op(op).start_errors += 1
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ClientStartError(argv, reason) from None
        self._running += 1
        for c in (self.cost, self._window):
            c.max_parallel = max(c.max_parallel, self._running)
        reaper = asyncio.ensure_future(self._reap(proc, op, t0))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
        done_out: asyncio.Future[None] = loop.create_future()
        done_err: asyncio.Future[None] = loop.create_future()
        out = _Collect(self.output_limit, done_out)
        err = _Collect(self.output_limit, done_err)
        transports: list[asyncio.BaseTransport] = []
        try:
            assert proc.stdout is not None and proc.stderr is not None
            t_out, _ = await loop.connect_read_pipe(lambda: out, proc.stdout)
            t_err, _ = await loop.connect_read_pipe(lambda: err, proc.stderr)
            transports += [t_out, t_err]
            if proc.stdin is not None:
                t_in, _ = await loop.connect_write_pipe(asyncio.Protocol, proc.stdin)
                transports.append(t_in)
                assert isinstance(t_in, asyncio.WriteTransport)
                t_in.write(stdin or b"")
                t_in.close()
            try:
                async with asyncio.timeout(timeout_s):
                    status, ru = await asyncio.shield(reaper)
            except TimeoutError:
                if not reaper.done():
                    _killpg(proc.pid)
                for c in (self.cost, self._window):
                    c.op(op).timeouts += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(reaper), timeout=5)
                raise ClientTimeout(argv, timeout_s, bytes(out.buf), bytes(err.buf)) from None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(done_out, done_err), PIPE_GRACE_S)
        except BaseException:
            if not reaper.done():  # cancelled or failed: the reaper still accounts the call
                _killpg(proc.pid)
            raise
        finally:
            for t in transports:
                t.close()
        return CallResult(
            argv,
            os.waitstatus_to_exitcode(status),
            bytes(out.buf),
            bytes(err.buf),
            time.perf_counter() - t0,
            ru.ru_utime + ru.ru_stime,
        )

    async def _reap(
        self, proc: subprocess.Popen[bytes], op: str, t0: float
    ) -> tuple[int, resource.struct_rusage]:
        try:
            status, ru = await _wait4(proc.pid)
        finally:
            self._running -= 1
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # reaped here: Popen must never wait for this pid again
        wall = time.perf_counter() - t0
        for c in (self.cost, self._window):
            c.record(op, wall, ru, code)
        return status, ru

    async def close(self, timeout_s: float = 10.0) -> None:
        """Wait for every client still running to be reaped (they were already killed)."""
        if self._reapers:
            await asyncio.wait(list(self._reapers), timeout=timeout_s)
