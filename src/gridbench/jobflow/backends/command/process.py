"""Runs client programs (no shell) and measures what each one cost.

Every call is timed (wall, from spawn to exit) and its CPU is read from the kernel's
resource usage of the reaped child (``os.wait4``: user + system, including any children it
waited for, such as the JVM behind a wrapper script). The totals per operation let a run
show when the client tools, not the system under test, were the heavy part (the UNICORE
UCC finding, METHODS 1.5).

Each client runs in its own session, so a time-out or a cancelled call kills the whole
process group. A grandchild that keeps the output pipes open (a detached job) cannot hold
a call open: once the client has exited, reading stops after a short grace period.

The clients are spawned by :mod:`gridbench.jobflow.backends.spawn`, the runner of the scheduler
clients too (posix_spawn, a pidfd and the pipes watched by the event loop).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gridbench.jobflow.backends import spawn

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


#: a client call started but not awaited yet (the timed transfers await it themselves)
PendingCall = Coroutine[Any, Any, CallResult]


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

    def record(self, op: str, wall_s: float, ex: spawn.Exit) -> None:
        """Count one reaped client: its wall time (spawn to exit), CPU and peak memory."""
        c = self.op(op)
        c.calls += 1
        c.wall_s += wall_s
        c.cpu_s += _cpu_s(ex)
        c.max_wall_s = max(c.max_wall_s, wall_s)
        if ex.code != 0:
            c.nonzero_exits += 1
        if ex.rusage is not None:
            self.max_rss_bytes = max(self.max_rss_bytes, ex.rusage.ru_maxrss * 1024)  # KiB

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


def _cpu_s(ex: spawn.Exit) -> float:
    """User + system CPU of a reaped client (and of the children it waited for)."""
    return ex.rusage.ru_utime + ex.rusage.ru_stime if ex.rusage is not None else 0.0


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
        self._exits: set[asyncio.Future[spawn.Exit]] = set()  # of clients not reaped yet

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
        t0 = time.perf_counter()
        try:
            child = spawn.start(
                argv,
                self.env if self.env is not None else os.environ,
                stdin=stdin,
                cwd=self.cwd,
                new_session=True,  # a time-out kills the client's whole process group
                output_limit=self.output_limit,
                pipe_grace_s=PIPE_GRACE_S,
            )
        except (OSError, ValueError) as exc:
            for c in (self.cost, self._window):
                c.op(op).start_errors += 1
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ClientStartError(argv, reason) from None
        self._running += 1
        for c in (self.cost, self._window):
            c.max_parallel = max(c.max_parallel, self._running)
        # accounted when reaped, whatever became of the call (a cancelled one too)
        self._exits.add(child.exited)
        child.exited.add_done_callback(lambda f: self._reaped(op, t0, f))
        try:
            try:
                async with asyncio.timeout(timeout_s):
                    ex = await asyncio.shield(child.exited)
            except TimeoutError:
                for c in (self.cost, self._window):
                    c.op(op).timeouts += 1
                await child.kill()
                raise ClientTimeout(argv, timeout_s, child.stdout, child.stderr) from None
            await child.finished  # the pipes' end, at most PIPE_GRACE_S after the exit
        except BaseException:
            await child.kill()  # cancelled or failed: the group goes, the call is accounted
            raise
        finally:
            if not child.exited.done():  # stuck beyond the kill grace: never reaped here
                self._exits.discard(child.exited)
                self._running -= 1
            child.close()
        return CallResult(
            argv, ex.code, child.stdout, child.stderr, time.perf_counter() - t0, _cpu_s(ex)
        )

    def _reaped(self, op: str, t0: float, done: asyncio.Future[spawn.Exit]) -> None:
        self._exits.discard(done)
        self._running -= 1
        ex = done.result()
        for c in (self.cost, self._window):
            c.record(op, ex.at - t0, ex)

    async def close(self, timeout_s: float = 10.0) -> None:
        """Wait for every client still running to be reaped (they were already killed)."""
        if self._exits:
            await asyncio.wait(list(self._exits), timeout=timeout_s)
