"""A real replicated file system for the io resilience tests: GlusterFS 10 with a
replica-3 volume on three local bricks, FUSE-mounted, on loopback.

glusterd keeps its state in a private working directory and answers the CLI on a private
socket (``option glusterd-sockfile``), so nothing under /var/lib/glusterd is touched; it
still listens on glusterd's port 24007 (the bricks it starts find it only there) and the
bricks log under /var/log/glusterfs. Everything lives under one fixed directory so that
the next session's fixture finds and stops what a killed test run left behind (the
bricks and the self-heal daemon are glusterd's children, daemonised: they cannot be tied
to the test process). If glusterd cannot start, the test fails with its log tail."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from io_fixtures import log_tail

STATE = Path("/tmp/gridbench-test-gluster")
VOLUME = "gbtest"
GLUSTERD_PORT = 24007


@dataclass
class GlusterVolume:
    volume: str
    cli: list[str]
    mount: Path
    bricks: list[Path]
    host: str

    def gluster(self, *args: str) -> str:
        done = subprocess.run(
            [*self.cli, "--mode=script", *args], capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            pytest.fail(f"gluster {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done.stdout


def _ours(pid: int) -> bool:
    """A process of this fixture: its command line names our state directory or volume."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return str(STATE).encode() in cmd or f"/{VOLUME}".encode() in cmd


def _stop_ours() -> None:
    """Unmount and stop every process of an earlier (maybe killed) run of this fixture."""
    mnt = STATE / "mnt"
    if os.path.ismount(mnt):
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    for pid in pids:
        if pid != os.getpid() and _ours(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)  # a brick left paused by a fault
                os.kill(pid, signal.SIGKILL)


def _port_busy(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _host() -> str:
    """The machine's name; gluster refuses 127.0.0.1 and localhost as brick hosts."""
    host = socket.gethostname()
    try:
        addr = socket.gethostbyname(host)
    except OSError:
        pytest.fail(f"host name {host!r} does not resolve; map it to 127.0.0.1 in /etc/hosts")
    if not addr.startswith("127."):
        pytest.fail(f"host name {host!r} resolves to {addr}, not loopback; map it in /etc/hosts")
    return host


def _wait_cli(cli: list[str], proc: subprocess.Popen[bytes], log: Path) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        if proc.poll() is not None:
            pytest.fail(f"glusterd exited with {proc.returncode}; log tail:\n{log_tail(log)}")
        done = subprocess.run([*cli, "--mode=script", "volume", "list"], capture_output=True)
        if done.returncode == 0:
            return
        time.sleep(0.2)
    pytest.fail(f"glusterd did not answer within 30 s; log tail:\n{log_tail(log)}")


@pytest.fixture(scope="session")
def gluster_volume() -> Iterator[GlusterVolume]:
    """A started replica-3 volume, mounted; stopped and unmounted at session end."""
    glusterd = shutil.which("glusterd") or "/usr/sbin/glusterd"
    if not Path(glusterd).exists():
        pytest.fail("glusterd is not installed (scripts/debian-packages.txt lists glusterfs)")
    _stop_ours()
    if _port_busy(GLUSTERD_PORT):
        pytest.fail(
            f"port {GLUSTERD_PORT} is taken by another glusterd; stop it (its bricks could "
            "not reach ours)"
        )
    shutil.rmtree(STATE, ignore_errors=True)
    wd, log = STATE / "wd", STATE / "glusterd.log"
    wd.mkdir(parents=True)
    for sub in ("groups", "hooks"):
        src = Path("/var/lib/glusterd") / sub
        if src.is_dir():
            shutil.copytree(src, wd / sub)
    sock = STATE / "cli.socket"
    vol = Path("/etc/glusterfs/glusterd.vol").read_text()
    vol = vol.replace("/var/lib/glusterd", str(wd)).replace(
        "end-volume", f"    option glusterd-sockfile {sock}\nend-volume"
    )
    (STATE / "glusterd.vol").write_text(vol)
    proc = subprocess.Popen(
        [glusterd, "-N", "-f", str(STATE / "glusterd.vol"), "-l", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    host = _host()
    bricks = [STATE / f"b{i}" for i in (1, 2, 3)]
    mnt = STATE / "mnt"
    for d in [*bricks, mnt]:
        d.mkdir()
    cli = ["gluster", f"--glusterd-sock={sock}"]
    v = GlusterVolume(VOLUME, cli, mnt, bricks, host)
    try:
        _wait_cli(cli, proc, log)
        v.gluster(
            "volume", "create", VOLUME, "replica", "3", *[f"{host}:{b}" for b in bricks], "force"
        )
        # a paused brick is given up after 2 s instead of 42 (the tests stay short)
        v.gluster("volume", "set", VOLUME, "network.ping-timeout", "2")
        v.gluster("volume", "start", VOLUME)
        done = subprocess.run(
            ["mount", "-t", "glusterfs", f"{host}:/{VOLUME}", str(mnt)], capture_output=True
        )
        if done.returncode != 0 or not os.path.ismount(mnt):
            pytest.fail(
                f"mount of the volume failed: {done.stderr!r}; glusterd log:\n{log_tail(log)}"
            )
        yield v
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
        subprocess.run(
            [*cli, "--mode=script", "volume", "stop", VOLUME, "force"],
            capture_output=True,
            check=False,
            timeout=60,
        )
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        _stop_ours()
