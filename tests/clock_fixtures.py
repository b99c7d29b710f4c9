"""Live pieces of the clock tests: an agent process whose wall clock libfaketime moves
(tests/clock_agent.py), a stand-in server stamping on the real clock, and a private chronyd.

Nothing here skips: a piece that cannot start fails the test with its log tail.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from daemons import log_tail, spawn_logged, stop_pids, wait_until
from gridbench.jobflow.events.log import EventLog, Origin
from gridbench.jobflow.run.clock_sync import OffsetEstimate, measure

HERE = Path(__file__).resolve().parent
AGENT_SCRIPT = HERE / "clock_agent.py"


def libfaketime() -> str:
    """The path of libfaketime (Debian package faketime)."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        pytest.fail(
            "libfaketime.so.1 not found: install the Debian package faketime "
            "(scripts/debian-packages.txt)"
        )
    return found[0]


class FakeTimeAgent:
    """tests/clock_agent.py started under LD_PRELOAD=libfaketime with ``FAKETIME=spec``."""

    def __init__(self, workdir: Path, spec: str) -> None:
        self.workdir = workdir
        self.spec = spec
        self.log = workdir / "agent.log"
        self.port_file = workdir / "agent.port"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> None:
        env = dict(os.environ)
        env.update(
            LD_PRELOAD=libfaketime(),
            FAKETIME=self.spec,
            # the agent's event loop and AnchoredClock advance on the monotonic clock
            FAKETIME_DONT_FAKE_MONOTONIC="1",
            FAKETIME_NO_CACHE="1",
        )
        argv = [sys.executable, str(AGENT_SCRIPT), str(self.port_file)]
        self.proc = spawn_logged(argv, self.log, env=env, cwd=self.workdir)
        proc = self.proc

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError("agent exited")
            return self.port_file.is_file() and self.port_file.read_text().strip() != ""

        try:
            ok = wait_until(ready, 30)
        except RuntimeError:
            ok = False
        if not ok:
            self.stop()
            pytest.fail(f"the faketime'd agent did not start:\n{log_tail(self.log)}")
        self.port = int(self.port_file.read_text())

    def stop(self) -> None:
        if self.proc is not None:
            stop_pids([self.proc.pid], 5.0)
            self.proc.wait(timeout=10)

    async def estimate(self, probes: int = 32) -> OffsetEstimate:
        """clock_sync.measure over one TCP connection to the agent."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        async def exchange() -> tuple[int, int]:
            writer.write(b"P\n")
            await writer.drain()
            a, b = (await reader.readline()).decode().strip().split(",")
            return int(a), int(b)

        try:
            return await measure(exchange, probes)
        finally:
            writer.close()
            await writer.wait_closed()

    def command(self, line: str, timeout: float = 120.0) -> str:
        """Send one command line, return the answer line."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            f = s.makefile("rw", encoding="ascii", newline="\n")
            f.write(line + "\n")
            f.flush()
            answer = f.readline().strip()
        if not answer:
            pytest.fail(f"the agent gave no answer to {line!r}:\n{log_tail(self.log)}")
        return answer


class StampingServer:
    """A stand-in service on the controller's (real) clock: per ``SUB job`` line it waits
    ``queue_ms``, stamps ``queued``, answers ``ACK``, waits ``run_ms``, stamps ``finished``
    and answers ``DONE``. Its stamps go to ``events`` with agent ``local``, offset 0."""

    def __init__(self, events: Path, queue_ms: float, run_ms: float) -> None:
        self.log = EventLog(events)
        self.queue_s, self.run_s = queue_ms / 1e3, run_ms / 1e3
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = int(self.sock.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            f = conn.makefile("rw", encoding="ascii", newline="\n")
            for line in f:
                job = line.split()[1]
                time.sleep(self.queue_s)
                self.log.append(job, "queued", time.time_ns(), Origin(source="server"))
                f.write("ACK\n")
                f.flush()
                time.sleep(self.run_s)
                self.log.append(job, "finished", time.time_ns(), Origin(source="server"))
                f.write("DONE\n")
                f.flush()

    def close(self) -> None:
        self.thread.join(timeout=60)
        self.sock.close()
        self.log.close()


class PrivateChronyd:
    """chronyd with no sources and no control of the system clock (``-x``), answering
    chronyc on its own command socket only (``chronyc -h SOCKET``)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.socket = workdir / "chronyd.sock"
        self.log = workdir / "chronyd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = shutil.which("chronyd")
        if exe is None:
            pytest.fail("chronyd not found: install the Debian package chrony")
        os.chmod(self.dir, 0o700)  # chronyd refuses a socket directory others can enter
        conf = self.dir / "chrony.conf"
        conf.write_text(
            "local stratum 8\nport 0\ncmdport 0\n"
            f"bindcmdaddress {self.socket}\npidfile {self.dir / 'chronyd.pid'}\n"
        )
        argv = [exe, "-x", "-d", "-f", str(conf), "-u", "root"]
        self.proc = spawn_logged(argv, self.log, env=dict(os.environ), cwd=self.dir)
        if not wait_until(lambda: self.socket.exists(), 20):
            self.stop()
            pytest.fail(f"chronyd did not open its command socket:\n{log_tail(self.log)}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_pids([self.proc.pid], 5.0)
            self.proc.wait(timeout=10)
