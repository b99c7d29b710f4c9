"""Spawning short-lived client programs cheaply: ``posix_spawn``, two pipes and a pidfd,
all watched by the running event loop.

asyncio's subprocess path costs the harness about 0.8-1.4 ms of CPU per call (Popen
encodes the environment in Python, a watcher thread is started per child, and each pipe
gets a transport and a protocol). This path costs about 0.3 ms (``bench/bench_spawn.py``).
On a small submit host that difference is the harness's own load: it decides whether
gridbench keeps pace with a shell loop of ``sbatch``.

Linux only (pidfds need kernel 5.3); :func:`available` says whether it can be used, and
callers fall back to asyncio's path otherwise and for children that change user.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import shutil
import signal
from collections.abc import Mapping, Sequence

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
    if _orphans:
        _reap_orphans()
    child = _start(argv, env)
    try:
        async with asyncio.timeout(timeout_s):
            await child.finished
        return child.reap(), b"".join(child.out), b"".join(child.err)
    except BaseException:
        await child.kill()
        raise
    finally:
        child.close()


def _start(argv: Sequence[str], env: Mapping[str, str]) -> _Child:
    """Spawn ``argv`` with its output on two fresh pipes. glibc's posix_spawn is a
    vfork: the loop waits only until the program is exec'd (or failed to be)."""
    path = _resolve(argv[0], env.get("PATH"))
    out_r, out_w = os.pipe()
    try:
        err_r, err_w = os.pipe()
    except BaseException:
        os.close(out_r)
        os.close(out_w)
        raise
    try:
        pid = os.posix_spawn(
            path,
            list(argv),
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
                *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()),
            ],
            setsigmask=(),
            setsigdef=_DEFAULT_SIGNALS,
        )
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return _Child(pid, out_r, err_r)


class _Child:
    """One spawned program, its output pipes and its pidfd, registered with the loop."""

    def __init__(self, pid: int, out_r: int, err_r: int) -> None:
        self._loop = asyncio.get_running_loop()
        self.pid = pid
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self._status: int | None = None
        self._open: dict[int, list[bytes]] = {out_r: self.out, err_r: self.err}
        self._pidfd = -1
        self._grace: asyncio.TimerHandle | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
            self._exited: asyncio.Future[None] = self._loop.create_future()
            self.finished: asyncio.Future[None] = self._loop.create_future()
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
                self._loop.add_reader(fd, self._read, fd)
            self._loop.add_reader(self._pidfd, self._on_exit)
        except BaseException:  # out of descriptors, say: leave nothing behind
            for fd in (out_r, err_r, self._pidfd):
                if fd >= 0:
                    self._loop.remove_reader(fd)
                    os.close(fd)
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            raise

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._open[fd].append(data)
            return
        self._close_pipe(fd)
        self._settle()

    def _close_pipe(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        os.close(fd)
        del self._open[fd]

    def _on_exit(self) -> None:
        self._loop.remove_reader(self._pidfd)
        if not self._exited.done():
            self._exited.set_result(None)
        if self._open:
            self._grace = self._loop.call_later(PIPE_GRACE_S, self._settle, True)
        self._settle()

    def _settle(self, grace_over: bool = False) -> None:
        # done when the program has exited and both pipes reached end-of-file (or their
        # grace after the exit is over)
        if self.finished.done() or not self._exited.done():
            return
        if grace_over:
            for fd in list(self._open):
                self._close_pipe(fd)
        if not self._open:
            self.finished.set_result(None)

    def reap(self) -> int:
        """Collect the exit status (the child has exited: its pidfd was readable)."""
        if self._status is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self._status = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status lost
                self._status = 255  # what asyncio reports in that case
        return self._status

    async def kill(self) -> None:
        """SIGKILL the child if it still runs, and reap it when it goes (bounded wait; a
        cancellation during the wait still propagates)."""
        if self._status is not None:
            return
        if not self._exited.done():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        try:
            async with asyncio.timeout(_KILL_GRACE_S):
                await asyncio.shield(self._exited)
        except TimeoutError:
            pass
        finally:
            if self._exited.done():
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
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
