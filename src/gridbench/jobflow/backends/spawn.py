"""Spawning short-lived client programs cheaply: ``posix_spawn``, two pipes and a pidfd,
all watched by the running event loop.

asyncio's subprocess path costs the harness about 0.8-1.4 ms of CPU per call (Popen
encodes the environment in Python, a watcher thread is started per child, and each pipe
gets a transport and a protocol). This path costs about 0.3 ms (``bench/bench_spawn.py``).
On a small submit host that difference is the harness's own load: it decides whether
gridbench keeps pace with a shell loop of ``sbatch``.

Linux only (pidfds need kernel 5.3); :func:`available` says whether it can be used, and
callers fall back to asyncio's path otherwise and for children that change user.

Two callers: :func:`spawn_capture` (scheduler clients, through ``cli_run.run_cli``) and
:func:`start` for callers that need more of the child (the command backend's runner: data
on stdin, a working directory, a new session whose whole group is killed, bounded output
and the child's resource usage, read by ``os.wait4`` when it is reaped at its exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import resource
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import psutil

from gridbench.jobflow.backends import spawn_libc

_READ_CHUNK = 1 << 16
# signals Python ignores that a child must see with their default action, as Popen does
_DEFAULT_SIGNALS = tuple(
    s for s in (getattr(signal, "SIGPIPE", None), getattr(signal, "SIGXFSZ", None)) if s
)
# how long a killed child may take to go away before it is left to be reaped later
_KILL_GRACE_S = 5.0
# how long output pipes may stay open after the program exited (a grandchild it left
# behind holding them, say): then the call ends with what was read
PIPE_GRACE_S = 0.5
# children that did not go away within the kill grace: reaped at later calls
_orphans: set[int] = set()


@dataclass(frozen=True, slots=True)
class Exit:
    """How a child ended: its exit code (negative for a signal, as with Popen), its
    resource usage (None if it was reaped elsewhere) and when (``time.perf_counter``)."""

    code: int
    rusage: resource.struct_rusage | None
    at: float


def start_time(pid: int) -> float | None:
    """The kernel's start time of process ``pid`` (psutil's ``create_time``), recorded next
    to every pid gridbench writes down: ``gridbench cleanup`` signals a pid only while its
    start time is still this one (a pid alone may have been recycled, or planted). None
    when the process is already gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


@functools.cache
def available() -> bool:
    """True where posix_spawn and pidfds work (probed once, with a child of our own)."""
    if not (hasattr(os, "posix_spawn") and hasattr(os, "pidfd_open")):
        return False
    try:
        pid = os.posix_spawn("/bin/true", ["/bin/true"], {})
    except OSError:
        return False
    try:
        os.close(os.pidfd_open(pid))
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(ChildProcessError):  # SIGCHLD ignored: reaped already
            os.waitpid(pid, 0)


def _resolve(program: str, path: str | None) -> str:
    """The file ``program`` names, searched on the child's PATH as execvpe would (looked
    up on every call: a client reinstalled elsewhere on PATH is found, as with Popen)."""
    if "/" in program:
        return program
    found = shutil.which(program, path=path if path is not None else os.defpath)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)
    return found


def _inherited_fds() -> list[int]:
    """Descriptors above stderr that a child would inherit: posix_spawn closes nothing,
    so they are closed in the child, as Popen's ``close_fds`` does."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, now closed
                if os.get_inheritable(fd):
                    out.append(fd)
    return out


def _reap_orphans() -> None:
    for pid in list(_orphans):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _orphans.discard(pid)


async def spawn_capture(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with ``env``, stdin from /dev/null; return (exit code, stdout, stderr).

    The exit code is negative for a signal, as with Popen. On time-out (TimeoutError) or
    cancellation the child is killed first; a program that cannot be run is an OSError.
    Output still arriving :data:`PIPE_GRACE_S` after the program exited is not waited for.
    """
    child = start(argv, env)
    try:
        async with asyncio.timeout(timeout_s):
            await child.finished
        return child.reap(), b"".join(child.out), b"".join(child.err)
    except BaseException:
        await child.kill()
        raise
    finally:
        child.close()


def start(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    stdin: bytes | None = None,
    cwd: str | None = None,
    new_session: bool = False,
    output_limit: int | None = None,
    pipe_grace_s: float = PIPE_GRACE_S,
) -> Child:
    """Spawn ``argv`` (in the running loop) with its output on two fresh pipes.

    ``stdin``: bytes fed to it (else /dev/null); ``cwd``: its working directory;
    ``new_session``: it leads a new session, and :meth:`Child.kill` kills the whole
    process group; ``output_limit``: bytes kept per stream (the rest is read and dropped).
    A program that cannot be run is an OSError (a bad argument a ValueError). glibc's
    posix_spawn is a vfork: the loop waits only until the program is exec'd (or failed to
    be).
    """
    if _orphans:
        _reap_orphans()
    path = _resolve(argv[0], env.get("PATH"))
    fds: list[int] = []  # every pipe end made here, closed on failure
    try:
        out_r, out_w = _pipe(fds)
        err_r, err_w = _pipe(fds)
        in_r, in_w = _pipe(fds) if stdin is not None else (-1, -1)
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_DUP2, in_r, 0)
            if in_r >= 0
            else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()),
        ]
        if cwd is not None and not _is_cwd(cwd):
            pid = spawn_libc.posix_spawn_in(
                cwd,
                path,
                argv,
                env,
                file_actions=actions,
                setsigdef=_DEFAULT_SIGNALS,
                setsid=new_session,
            )
        else:
            pid = os.posix_spawn(
                path,
                list(argv),
                dict(env),
                file_actions=actions,
                setsigmask=(),
                setsigdef=_DEFAULT_SIGNALS,
                setsid=new_session,
            )
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    for fd in (out_w, err_w, in_r):  # the child's ends
        if fd >= 0:
            os.close(fd)
    feed = (in_w, stdin) if stdin is not None else None
    return Child(pid, out_r, err_r, feed, new_session, output_limit, pipe_grace_s)


def _pipe(fds: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    fds += (r, w)
    return r, w


def _is_cwd(path: str) -> bool:
    """Whether ``path`` is the current directory (then no chdir action is needed)."""
    try:
        return os.path.samefile(path, os.curdir)
    except OSError:
        return False  # the spawn's chdir reports why


class Child:
    """One spawned program, its pipes and its pidfd, registered with the loop.

    ``exited`` resolves with its :class:`Exit` as soon as it exits (it is reaped then);
    ``finished`` once, in addition, its output pipes reached end-of-file or their grace
    after the exit is over. Call :meth:`close` when done with it.
    """

    def __init__(
        self,
        pid: int,
        out_r: int,
        err_r: int,
        feed: tuple[int, bytes] | None = None,
        group: bool = False,
        output_limit: int | None = None,
        pipe_grace_s: float = PIPE_GRACE_S,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.pid = pid
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self._status: int | None = None
        self._open: dict[int, list[bytes]] = {out_r: self.out, err_r: self.err}
        self._kept = dict.fromkeys(self._open, 0)
        self._limit = output_limit
        self._group = group
        self._pipe_grace_s = pipe_grace_s
        self._in, self._pending = (feed[0], memoryview(feed[1])) if feed else (-1, memoryview(b""))
        self._pidfd = -1
        self._grace: asyncio.TimerHandle | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
            self.exited: asyncio.Future[Exit] = self._loop.create_future()
            self.finished: asyncio.Future[None] = self._loop.create_future()
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
                self._loop.add_reader(fd, self._read, fd)
            if self._in >= 0:
                os.set_blocking(self._in, False)
                self._loop.add_writer(self._in, self._write)
            self._loop.add_reader(self._pidfd, self._on_exit)
        except BaseException:  # out of descriptors, say: leave nothing behind
            for fd in (out_r, err_r, self._pidfd):
                if fd >= 0:
                    self._loop.remove_reader(fd)
                    os.close(fd)
            self._close_stdin()
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            raise

    @property
    def stdout(self) -> bytes:
        return b"".join(self.out)

    @property
    def stderr(self) -> bytes:
        return b"".join(self.err)

    def _write(self) -> None:
        """Feed stdin as the pipe takes it; close it when all is written (or the child
        stopped reading: its exit, say)."""
        try:
            n = os.write(self._in, self._pending[:_READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # EPIPE: the child does not read its stdin
            n = len(self._pending)
        self._pending = self._pending[n:]
        if not self._pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self._in >= 0:
            self._loop.remove_writer(self._in)
            os.close(self._in)
            self._in = -1

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            kept = self._kept[fd]
            room = len(data) if self._limit is None else self._limit - kept
            if room > 0:  # beyond the limit, output is read and dropped
                self._open[fd].append(data[:room])
                self._kept[fd] = kept + min(room, len(data))
            return
        self._close_pipe(fd)
        self._settle()

    def _close_pipe(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        os.close(fd)
        del self._open[fd]

    def _on_exit(self) -> None:
        self._loop.remove_reader(self._pidfd)
        if not self.exited.done():
            self.exited.set_result(self._reap_now())
        if self._open:
            self._grace = self._loop.call_later(self._pipe_grace_s, self._settle, True)
        self._settle()

    def _reap_now(self) -> Exit:
        """Collect the exit status and resource usage (it has exited: no wait)."""
        try:
            _, status, ru = os.wait4(self.pid, 0)
            self._status = os.waitstatus_to_exitcode(status)
            return Exit(self._status, ru, time.perf_counter())
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status lost
            self._status = 255  # what asyncio reports in that case
            return Exit(self._status, None, time.perf_counter())

    def _settle(self, grace_over: bool = False) -> None:
        # done when the program has exited and both pipes reached end-of-file (or their
        # grace after the exit is over)
        if self.finished.done() or not self.exited.done():
            return
        if grace_over:
            for fd in list(self._open):
                self._close_pipe(fd)
        if not self._open:
            self.finished.set_result(None)

    def reap(self) -> int:
        """The exit code (the child has exited: it was reaped when its pidfd was readable)."""
        if self._status is None:
            self._status = self._reap_now().code
        return self._status

    async def kill(self) -> None:
        """SIGKILL the child (its whole process group if it leads a new session) if it
        still runs, and wait for it to go (bounded wait; a cancellation during the wait
        still propagates)."""
        if self._status is not None:
            return
        if not self.exited.done():  # not reaped yet: the pid (and group id) is still ours
            if self._group:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            else:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        try:
            async with asyncio.timeout(_KILL_GRACE_S):
                await asyncio.shield(self.exited)
        except TimeoutError:
            pass
        finally:
            if self.exited.done():
                self.reap()
            else:  # stuck in the kernel (a dead NFS mount, say): reaped by a later call
                _orphans.add(self.pid)
                self._status = -signal.SIGKILL

    def close(self) -> None:
        """Unregister and close the pipes and the pidfd."""
        if self._grace is not None:
            self._grace.cancel()
        for fd in list(self._open):
            self._close_pipe(fd)
        self._close_stdin()
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
