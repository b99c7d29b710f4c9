"""A live GridFTP server for tests: ``globus-gridftp-server`` (GCT 6.2) on loopback with
anonymous access mapped to ``nobody`` (docs REAL-SYSTEMS.md, GridFTP), its transfer log
at ``-log-level info,transfer`` (one "Transfer stats" line per file, µs start and end).

Two world-writable directories under one temporary directory: ``stage`` (inputs the
clients upload, which jobs read) and ``out`` (outputs jobs write, which the clients
download). The server runs in the foreground, forking a process per connection; teardown
stops it by pid. A server that does not answer FAILS the test with its log's tail.

Run it by hand: ``.venv/bin/python tests/gridftp_site.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemons import (
    free_port,
    log_tails,
    scratch_dir,
    serve_by_hand,
    spawn_logged,
    started,
    stop_pids,
    wait_until,
)

SERVER = "/usr/sbin/globus-gridftp-server"
START_TIMEOUT_S = 15.0


class SiteError(RuntimeError):
    """The server did not start; the message carries its logs' tails."""


@dataclass
class GridftpSite:
    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL prefix: an absolute path follows (``{url}/tmp/x``)."""
        return f"ftp://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / "transfer.log"

    @property
    def stage(self) -> Path:
        return self.root / "stage"

    @property
    def out(self) -> Path:
        return self.root / "out"

    def logs(self) -> str:
        return log_tails(self.log, self.root / "server.stdout")

    def start(self) -> None:
        for d in (self.stage, self.out):
            d.mkdir()
            os.chmod(d, 0o1777)  # nobody (the server) writes stage, the job account out
        argv = [
            SERVER, "-aa", "-anonymous-user", "nobody", "-anonymous-group", "nogroup",
            "-p", str(self.port), "-control-interface", "127.0.0.1",
            "-data-interface", "127.0.0.1", "-l", str(self.log),
            "-log-level", "info,transfer", "-s",
        ]  # fmt: skip
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
        self.proc = spawn_logged(argv, self.root / "server.stdout", env=env, cwd=self.root)

        def answers() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise SiteError(f"{SERVER} exited {self.proc.returncode}\n{self.logs()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=2) as s,
            ):
                return s.recv(64).startswith(b"220")
            return False

        if not wait_until(answers, START_TIMEOUT_S):
            raise SiteError(
                f"{SERVER} does not answer on port {self.port} after {START_TIMEOUT_S:g}s\n"
                f"{self.logs()}"
            )

    def stop(self) -> None:
        if self.proc is not None:
            stop_pids([self.proc.pid], 5.0)
            self.proc.wait(timeout=5)
            self.proc = None


@contextlib.contextmanager
def running_site() -> Iterator[GridftpSite]:
    if not (Path(SERVER).exists() and shutil.which("globus-url-copy")):
        pytest.fail(
            "GridFTP is not installed: scripts/system-packages (globus-gridftp-server-progs, "
            "globus-gass-copy-progs)"
        )
    # 0o755: the server (nobody) and the job's account reach stage/ and out/
    with (
        scratch_dir("gb-gridftp-", 0o755) as tmp,
        started(GridftpSite(tmp), (SiteError, OSError)) as site,
    ):
        yield site


@pytest.fixture(scope="session", name="gridftp")
def gridftp_fixture() -> Iterator[GridftpSite]:
    """One live GridFTP server shared by a session's tests."""
    with running_site() as s:
        yield s


if __name__ == "__main__":
    serve_by_hand(running_site(), lambda s: {}, lambda s: f"url: {s.url}\nlog: {s.log}")
