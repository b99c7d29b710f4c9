"""Plumbing shared by the live-site fixtures (arc_site, gram_site, sge_cluster, slurm_cluster).

Free loopback ports, log tails for failure messages, starting a daemon with its output in
a log file, waiting for readiness, stopping processes by pid (SIGTERM, a grace period,
then SIGKILL; never by name), failing (never skipping) a test whose site cannot start,
and running a site by hand. What a site is and how it tells it is ready stays in its own
module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import pytest


def free_port() -> int:
    """A TCP port on loopback that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, n: int = 30) -> str:
    """The last ``n`` lines of a log file (or a note that it is missing)."""
    if not path.exists():
        return f"({path} does not exist)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def log_tails(*paths: Path, n: int = 30) -> str:
    """Each log's tail under a ``--- path`` header, for a failure message."""
    return "\n".join(f"--- {p}\n{log_tail(p, n)}" for p in paths)


def run_client(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a client command (no shell) with ``env`` over this process's environment.

    Output is captured as text; the exit status is the caller's to judge (never raises on
    it, only ``TimeoutExpired``).
    """
    return subprocess.run(
        list(argv),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def spawn_logged(
    argv: Sequence[str], log: Path, *, env: Mapping[str, str], cwd: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout and stderr appended to ``log`` and stdin from /dev/null.

    ``env`` is the whole environment of the process (not merged with ours).
    """
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            cwd=cwd,
        )


def run_logged(
    argv: Sequence[str], log: Path, *, env: Mapping[str, str], cwd: Path, timeout: float
) -> int:
    """Run a daemon's start command (it forks into the background) to its exit status.

    Output goes to ``log`` as with :func:`spawn_logged`; on ``timeout`` the command is
    killed and ``subprocess.TimeoutExpired`` raised.
    """
    with spawn_logged(argv, log, env=env, cwd=cwd) as p:
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise


def wait_until(ready: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    """Poll ``ready`` until it is true (True) or ``timeout`` seconds have passed (False).

    An exception from ``ready`` (a daemon found dead, say) ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(interval)
    return False


def read_pid(pid_file: Path) -> int | None:
    """The pid a daemon wrote to ``pid_file`` (first word), or None if not (yet) there."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(pid_file.read_text().split()[0])
    return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (read from /proc)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def stop_pids(pids: Iterable[int], grace: float, *, then_kill: Iterable[int] = ()) -> None:
    """SIGTERM each live pid, wait up to ``grace`` seconds for all to end, then SIGKILL
    whatever is left of them and of ``then_kill`` (e.g. their children, which get no
    SIGTERM of their own)."""
    pids = list(pids)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not any(alive(p) for p in pids), grace, interval=0.05)
    for pid in [*pids, *then_kill]:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def scratch_dir(prefix: str, mode: int | None = None) -> Iterator[Path]:
    """A new temporary directory (``mode`` set if given), removed with all in it on exit."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    if mode is not None:
        os.chmod(tmp, mode)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Site(Protocol):
    """What :func:`started` needs of a test site."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Site)


@contextlib.contextmanager
def started(site: S, errors: tuple[type[BaseException], ...]) -> Iterator[S]:
    """``site.start()``, then the site; ``site.stop()`` on exit however it ends.

    A start that raises one of ``errors`` FAILS the test (never a skip) with the error's
    message, which carries the daemons' log tails.
    """
    try:
        try:
            site.start()
        except errors as exc:
            pytest.fail(str(exc), pytrace=False)
        yield site
    finally:
        site.stop()


T = TypeVar("T")


def serve_by_hand(
    running: contextlib.AbstractContextManager[T],
    env: Callable[[T], Mapping[str, str]],
    info: Callable[[T], str],
) -> None:
    """Start a site, print ``export`` lines for its client environment and ``info``, and
    keep it up until Ctrl-C or SIGTERM (then stop it as the tests do)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with running as site:
        for k, v in env(site).items():
            print(f"export {k}={v}")
        print(info(site), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
