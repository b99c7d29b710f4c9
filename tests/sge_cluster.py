"""A live single-node Son of Grid Engine cell for tests: sge_qmaster and sge_execd.

It uses the cell the Debian packages create (``/var/lib/gridengine``, cell ``default``,
spool under ``/var/spool/gridengine``; scripts/debian-packages.txt and
scripts/preseed-gridengine) and installs nothing. It configures the cell as
docs REAL-SYSTEMS.md "Son of Grid Engine" says (host_aliases, root jobs, 1 s accounting
flush and scheduling, queue ``all.q`` with 8 slots), starts qmaster and execd as root on
free ports, waits until the queue is usable and stops both by pid at teardown. The
configuration is kept in the cell's spool, so only the first start pays the qmaster
restart that the reporting parameters need. A cell that cannot start FAILS the test
(never a skip) with the tail of its messages file.

Run it by hand: ``.venv/bin/python tests/sge_cluster.py`` prints the environment to
export and waits for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemons import (
    alive,
    free_port,
    log_tail,
    log_tails,
    read_pid,
    run_client,
    run_logged,
    scratch_dir,
    serve_by_hand,
    started,
    stop_pids,
    wait_until,
)

SGE_ROOT = Path("/var/lib/gridengine")
CELL = "default"
SPOOL = Path("/var/spool/gridengine")
HOST = "localhost"  # 127.0.0.1 reverse-resolves to localhost: the name SGE uses
QUEUE = "all.q"
SLOTS = 8
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
TOOLS = ("sge_qmaster", "sge_execd", "qsub", "qstat", "qconf", "qdel", "qmod")
GLOBAL = {
    "min_uid": "0",
    "min_gid": "0",
    "load_report_time": "00:00:02",
    "reporting_params": (
        "accounting=true reporting=true flush_time=00:00:01 joblog=true sharelog=00:00:00"
    ),
}
SCHEDULER = {"schedule_interval": "0:0:1", "flush_submit_sec": "1", "flush_finish_sec": "1"}
QUEUE_ATTRS = {
    "hostlist": HOST,
    "slots": str(SLOTS),
    "pe_list": "NONE",
    "load_thresholds": "NONE",  # a busy test machine must not put the queue in alarm
}


class CellError(RuntimeError):
    """The cell did not start; the message carries the tail of its messages file."""


def parse_conf(text: str) -> dict[str, str]:
    """A qconf listing (``key value``, backslash continuations) as a dict."""
    out: dict[str, str] = {}
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        key, _, value = line.partition(" ")
        out[key] = " ".join(value.split())
    return out


def render_conf(conf: dict[str, str]) -> str:
    return "".join(f"{k} {v}\n" for k, v in conf.items())


@dataclass
class SgeCell:
    """The test cell; ``env`` is what a backend (or a client call) needs to reach it."""

    root: Path  # scratch directory for configuration files and job output
    qmaster_port: int = field(default_factory=free_port)
    execd_port: int = field(default_factory=free_port)
    pids: dict[str, int] = field(default_factory=dict)
    restarted: bool = False

    @property
    def env(self) -> dict[str, str]:
        return {
            "SGE_ROOT": str(SGE_ROOT),
            "SGE_CELL": CELL,
            "SGE_QMASTER_PORT": str(self.qmaster_port),
            "SGE_EXECD_PORT": str(self.execd_port),
        }

    @property
    def accounting(self) -> Path:
        return SGE_ROOT / CELL / "common" / "accounting"

    @property
    def qmaster_messages(self) -> Path:
        return SPOOL / "qmaster" / "messages"

    @property
    def execd_messages(self) -> Path:
        return SPOOL / "execd" / HOST / "messages"

    # ---- commands -----------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 20) -> str:
        """Run a Grid Engine client against this cell; return its stdout."""
        p = run_client(argv, env=self.env, timeout=timeout, cwd=self.root)
        if check and p.returncode != 0:
            raise CellError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def job_ids(self) -> list[str]:
        """Ids of every job qstat still lists (anyone's)."""
        out = self.run("qstat", "-u", "*", check=False)
        return [ln.split()[0] for ln in out.splitlines() if re.match(r"^\s*\d+\s", ln)]

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Configure and start qmaster and execd; return once the queue takes jobs."""
        hostname = socket.gethostname()
        aliases = SGE_ROOT / CELL / "common" / "host_aliases"
        aliases.write_text(f"{HOST} {hostname}\n" if hostname != HOST else f"{HOST}\n")
        self.start_qmaster()
        if self.configure():
            self.stop_daemon("qmaster")  # reporting_params apply at the next start
            self.start_qmaster()
            self.restarted = True
        self.start_execd()

    def start_qmaster(self) -> None:
        pid_file = SPOOL / "qmaster" / "qmaster.pid"
        self._refuse_running(pid_file, "sge_qmaster")
        self._spawn("sge_qmaster")
        self._wait("qmaster", self._qmaster_up, self.qmaster_messages)
        self.pids["qmaster"] = int(pid_file.read_text().split()[0])

    def start_execd(self) -> None:
        pid_file = SPOOL / "execd" / HOST / "execd.pid"
        self._refuse_running(pid_file, "sge_execd")
        self._spawn("sge_execd")
        self._wait("execd", self._queue_usable, self.execd_messages)
        self.pids["execd"] = int(pid_file.read_text().split()[0])

    def configure(self) -> bool:
        """Global, scheduler, host and queue configuration; whether global changed."""
        changed = self._modify("global", ["qconf", "-sconf", "global"], "-Mconf", GLOBAL)
        self._modify("sched", ["qconf", "-ssconf"], "-Msconf", SCHEDULER)
        if HOST not in self.run("qconf", "-ss", check=False).split():
            self.run("qconf", "-as", HOST)
        queues = self.run("qconf", "-sql", check=False).split()
        if QUEUE in queues:
            self._modify(QUEUE, ["qconf", "-sq", QUEUE], "-Mq", QUEUE_ATTRS)
        else:
            self._add_queue()
        return changed

    def _modify(self, name: str, show: list[str], flag: str, want: dict[str, str]) -> bool:
        conf = parse_conf(self.run(*show))
        if all(conf.get(k) == v for k, v in want.items()):
            return False
        conf.update(want)
        path = self.root / name  # qconf -Mconf takes the configuration's name from the file
        path.write_text(render_conf(conf))
        self.run("qconf", flag, str(path))
        return True

    def _add_queue(self) -> None:
        """Add the queue from qconf's own template (an editor that copies it out)."""
        grab = self.root / "grab-template"
        template = self.root / "queue-template"
        grab.write_text(f'#!/bin/sh\ncat "$1" > {template}\n')
        grab.chmod(0o755)
        env = {**os.environ, **self.env, "EDITOR": str(grab)}
        subprocess.run(
            ["qconf", "-aq", QUEUE], env=env, capture_output=True, timeout=20, check=False
        )
        if not template.exists():
            raise CellError("qconf -aq did not show a queue template")
        conf = parse_conf(template.read_text())
        conf.update({"qname": QUEUE, **QUEUE_ATTRS})
        path = self.root / QUEUE
        path.write_text(render_conf(conf))
        self.run("qconf", "-Aq", str(path))

    def stop(self) -> None:
        """Delete leftover jobs by id, then stop execd and qmaster by pid."""
        if "qmaster" in self.pids:
            with contextlib.suppress(Exception):
                ids = self.job_ids()
                if ids:
                    self.run("qdel", *ids, check=False)
                    self._wait_quiet()
        for name in ("execd", "qmaster"):
            self.stop_daemon(name)

    def stop_daemon(self, name: str) -> None:
        pid = self.pids.pop(name, None)
        if pid is not None:
            stop_pids([pid], STOP_TIMEOUT_S)

    def _wait_quiet(self, timeout: float = 10.0) -> None:
        wait_until(lambda: not self.job_ids(), timeout)

    def _refuse_running(self, pid_file: Path, what: str) -> None:
        """A daemon of this cell that someone else started is never touched."""
        pid = read_pid(pid_file)
        if pid is None or not alive(pid):
            return
        with contextlib.suppress(OSError):
            if what in Path(f"/proc/{pid}/cmdline").read_text():
                raise CellError(
                    f"{what} of cell {CELL} already runs (pid {pid}); stop it first "
                    "(the tests start their own)"
                )

    def _spawn(self, daemon: str) -> None:
        """Start a daemon; it forks into the background and writes its pid file."""
        log = self.root / f"{daemon}.stderr"
        env = {**os.environ, **self.env}
        rc = run_logged([f"/usr/sbin/{daemon}"], log, env=env, cwd=self.root, timeout=30)
        if rc != 0:
            raise CellError(f"{daemon} exited {rc}\n{log_tail(log)}")

    def _wait(self, name: str, ready: Callable[[], bool], log: Path) -> None:
        if wait_until(ready, START_TIMEOUT_S):
            return
        raise CellError(
            f"sge_{name} is not ready after {START_TIMEOUT_S:g}s\n{log_tails(log)}\n"
            f"--- qstat -f\n{self.run('qstat', '-f', check=False)}"
        )

    def _qmaster_up(self) -> bool:
        try:
            out = self.run("qconf", "-sconf", "global", check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return False
        return "execd_spool_dir" in out

    def _queue_usable(self) -> bool:
        """The queue instance reports a load and has no state (u, E, a, d ...)."""
        try:
            out = self.run("qstat", "-f", "-q", QUEUE, check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return False
        for line in out.splitlines():
            if line.startswith(f"{QUEUE}@"):
                f = line.split()
                if len(f) >= 6 and "E" in f[5]:  # a job before min_uid: clear the error
                    self.run("qmod", "-cq", QUEUE, check=False)
                return len(f) == 5 and f[3] != "-NA-"
        return False


def have_sge() -> bool:
    """Whether the Debian packages are installed and the cell exists."""
    return (
        all(shutil.which(x) or Path(f"/usr/sbin/{x}").exists() for x in TOOLS)
        and (SGE_ROOT / CELL / "common" / "bootstrap").is_file()
    )


@contextlib.contextmanager
def running_cell() -> Iterator[SgeCell]:
    """A started cell, stopped (and its scratch directory removed) on exit."""
    if os.geteuid() != 0:
        pytest.fail("the Grid Engine test cell must run as root (it starts qmaster and execd)")
    if not have_sge():
        pytest.fail(
            "Grid Engine is not installed: scripts/preseed-gridengine, then apt-get install "
            "--no-install-recommends gridengine-master gridengine-exec gridengine-client "
            "(scripts/system-packages does both)"
        )
    with (
        scratch_dir("gb-sge-", 0o755) as tmp,
        started(SgeCell(tmp), (CellError, subprocess.TimeoutExpired)) as cell,
    ):
        yield cell


@pytest.fixture(scope="session", name="sge")
def sge_fixture() -> Iterator[SgeCell]:
    """One live cell shared by the Grid Engine tests of a session (registered in
    conftest.py; do not import it into test modules, which would make one per module)."""
    with running_cell() as c:
        yield c


if __name__ == "__main__":
    serve_by_hand(running_cell(), lambda c: c.env, lambda c: f"accounting: {c.accounting}")
