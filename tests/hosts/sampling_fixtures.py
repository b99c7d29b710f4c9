"""Real daemons for the sampling tests: node_exporter (Debian's prometheus-node-exporter)
and an sshd on loopback with a throw-away key, each on a free port, stopped by pid after.
A daemon that cannot start fails the test with its log's tail."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from io_fixtures import free_port, stop, wait_port  # the suite's daemon helpers

EXPORTER = "prometheus-node-exporter"


@dataclass
class Exporter:
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        stop(self.proc)


def start_exporter(d: Path) -> Exporter:
    """node_exporter on 127.0.0.1:<free port>."""
    exe = shutil.which(EXPORTER)
    if exe is None:
        pytest.fail(f"{EXPORTER} is not installed (scripts/debian-packages.txt lists it)")
    d.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = d / f"exporter-{port}.log"
    with log.open("wb") as lf:
        proc = subprocess.Popen(
            [exe, f"--web.listen-address=127.0.0.1:{port}"], stdout=lf, stderr=subprocess.STDOUT
        )
    wait_port(port, proc, log)
    return Exporter(f"http://127.0.0.1:{port}/metrics", port, proc, log)


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Exporter]:
    e = start_exporter(tmp_path / "exporter")
    try:
        yield e
    finally:
        e.stop()


@dataclass
class Sshd:
    port: int
    key: Path
    log: Path

    def options(self) -> dict[str, Any]:
        """asyncssh connect options for this sshd."""
        return {
            "port": self.port,
            "username": "root",
            "client_keys": [str(self.key)],
            "known_hosts": None,
        }


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    """sshd on 127.0.0.1:<free port>, a throw-away host key and client key."""
    for tool in ("ssh-keygen",):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (openssh-client)")
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
        )
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    port = free_port()
    log = d / "sshd.log"
    cfg = d / "sshd_config"
    cfg.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "LogLevel VERBOSE\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    exe = shutil.which("sshd") or "/usr/sbin/sshd"
    with log.open("wb") as lf:
        proc = subprocess.Popen(
            [exe, "-D", "-e", "-f", str(cfg)], stdout=lf, stderr=subprocess.STDOUT
        )
    try:
        wait_port(port, proc, log)
        yield Sshd(port, d / "client", log)
    finally:
        stop(proc)


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    """A python busy loop (bounded: it ends itself after 120 s)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.time() + 120\nwhile time.time() < end: pass",
        ]
    )
    try:
        yield proc
    finally:
        stop(proc)


@pytest.fixture
def idle() -> Iterator[subprocess.Popen[bytes]]:
    """A process that sleeps (bounded: 120 s)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        stop(proc)


async def sample_for(sampler: Any, seconds: float) -> None:
    """Run ``sampler`` (a :class:`~gridbench.hosts.sampling.sampler.Sampler`) in this event
    loop for ``seconds``, then stop it and wait for it."""
    ev = asyncio.Event()
    task = asyncio.create_task(sampler.run(ev))
    await asyncio.sleep(seconds)
    ev.set()
    await asyncio.wait_for(task, 15)
