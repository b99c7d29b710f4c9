"""Real storage targets for the io tests: a tmpfs mount, an sshd on a high loopback port
with a throwaway key plus an sshfs mount through it, and ``fio --server`` instances.

Each fixture starts the real thing, stops it by pid / unmounts it afterwards, and fails
with the daemon's log tail when it cannot start. Tests run as root."""

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 15.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            pytest.fail(f"daemon exited with {proc.returncode}; log tail:\n{log_tail(log)}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"daemon did not listen on {port} within {timeout} s; log tail:\n{log_tail(log)}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def is_mount(path: Path) -> bool:
    return os.path.ismount(path)


@dataclass
class SshfsMount:
    proc: subprocess.Popen[bytes]
    mount: Path
    log: Path


def mount_sshfs(remote: str, mnt: Path, port: int, key: Path, log: Path) -> SshfsMount:
    """sshfs in the foreground, in its own session, so that teardown can stop it and its
    ssh child by process group (a daemonised sshfs would leave its ssh behind)."""
    with log.open("wb") as lf:
        proc = subprocess.Popen(
            [
                "sshfs",
                "-f",
                remote,
                str(mnt),
                "-p",
                str(port),
                "-o",
                f"IdentityFile={key},StrictHostKeyChecking=no,"
                "UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR",
            ],
            stdout=lf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    t0 = time.monotonic()
    while not is_mount(mnt):
        if proc.poll() is not None or time.monotonic() - t0 > 30:
            unmount_sshfs(SshfsMount(proc, mnt, log))
            pytest.fail(f"sshfs mount of {remote} failed; sshfs log:\n{log_tail(log)}")
        time.sleep(0.05)
    return SshfsMount(proc, mnt, log)


def unmount_sshfs(m: SshfsMount) -> None:
    if is_mount(m.mount):
        r = subprocess.run(["fusermount", "-u", str(m.mount)], check=False, capture_output=True)
        if r.returncode != 0:
            subprocess.run(
                ["fusermount", "-u", "-z", str(m.mount)], check=False, capture_output=True
            )
    if m.proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            m.proc.wait(5)
    # the session we created: sshfs and the ssh it started
    with contextlib.suppress(ProcessLookupError):
        os.killpg(m.proc.pid, signal.SIGTERM)
    try:
        m.proc.wait(5)
    except subprocess.TimeoutExpired:
        os.killpg(m.proc.pid, signal.SIGKILL)
        m.proc.wait(5)


@contextlib.contextmanager
def mounted_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mount's words: 64m, 384k) on the new directory ``mnt``, lazily
    unmounted afterwards; a mount that fails fails the test with mount's message."""
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.fail(f"mount -t tmpfs failed (root needed): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs mounted on a fresh directory."""
    with mounted_tmpfs(tmp_path / "tmpfs", "64m") as mnt:
        yield mnt


def small_tmpfs(base: Path, size: str) -> Path:
    mnt = base / f"tmpfs-{size}"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.fail(f"mount -t tmpfs failed: {r.stderr.strip()}")
    return mnt


@dataclass
class Sshfs:
    served: Path  # the directory sshd serves (the "server side" path)
    mount: Path  # the sshfs mount of it (the "client side" path)
    port: int
    log: Path


@contextlib.contextmanager
def served_sshfs(tmp_path: Path, *, own_mounts: bool = False) -> Iterator[Sshfs]:
    """sshd on 127.0.0.1:<free high port> with a throwaway key, and an sshfs mount of a
    served directory, under ``tmp_path``. Both are stopped/unmounted afterwards.

    ``own_mounts`` starts sshd in a mount namespace of its own, so the sshfs mount made
    after it is not visible to the server: an absolute symlink written through the mount
    (pjdfstest makes them) then cannot lead the single-threaded SFTP server back into
    its own client's mount, a loopback-only deadlock a remote server never has."""
    for tool in ("sshd", "sshfs", "ssh-keygen"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.fail(f"{tool} is not installed (scripts/debian-packages.txt lists it)")
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    served = tmp_path / "served"
    served.mkdir()
    mnt = tmp_path / "sshfs"
    mnt.mkdir()
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
        "Subsystem sftp internal-sftp\nLogLevel VERBOSE\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    with log.open("wb") as lf:
        ns = ["unshare", "--mount", "--propagation", "private"] if own_mounts else []
        proc = subprocess.Popen(
            [*ns, sshd, "-D", "-e", "-f", str(cfg)], stdout=lf, stderr=subprocess.STDOUT
        )
    try:
        wait_port(port, proc, log)
        m = mount_sshfs(f"root@127.0.0.1:{served}", mnt, port, d / "client", d / "sshfs.log")
        try:
            yield Sshfs(served, mnt, port, log)
        finally:
            unmount_sshfs(m)
    finally:
        stop(proc)


@pytest.fixture
def sshfs(tmp_path: Path) -> Iterator[Sshfs]:
    """sshd and an sshfs mount of a served directory, for one test (:func:`served_sshfs`)."""
    with served_sshfs(tmp_path) as m:
        yield m


@dataclass
class FioServer:
    address: str  # host,port as fio --client wants it
    proc: subprocess.Popen[bytes]
    log: Path


def start_fio_server(tmp: Path, index: int) -> FioServer:
    port = free_port()
    log = tmp / f"fio-server-{index}.log"
    with log.open("wb") as lf:
        proc = subprocess.Popen(
            ["fio", f"--server=ip:127.0.0.1,{port}"], stdout=lf, stderr=subprocess.STDOUT, cwd=tmp
        )
    wait_port(port, proc, log)
    return FioServer(f"127.0.0.1,{port}", proc, log)


@pytest.fixture
def fio_servers(tmp_path: Path) -> Iterator[list[FioServer]]:
    """Two ``fio --server`` instances on loopback ports."""
    servers: list[FioServer] = []
    try:
        for i in range(2):
            servers.append(start_fio_server(tmp_path, i))
        yield servers
    finally:
        for s in servers:
            stop(s.proc)


@dataclass
class DavServer:
    url: str
    root: Path
    log: Path


@pytest.fixture
def nginx_dav(tmp_path: Path) -> Iterator[DavServer]:
    """nginx with its WebDAV module (PUT/DELETE) on a free loopback port."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is not installed (scripts/debian-packages.txt lists nginx-light)")
    d = tmp_path / "nginx"
    root = d / "root"
    (root / "dav").mkdir(parents=True)
    port = free_port()
    log = d / "error.log"
    temps = "".join(
        f"{k}_temp_path {d / k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = d / "nginx.conf"
    conf.write_text(
        f"daemon off;\nuser root;\nworker_processes 1;\npid {d / 'nginx.pid'};\nerror_log "
        f"{log} info;\n"
        "events { worker_connections 64; }\n"
        "http "
        f"{{\n access_log off;\n{temps} server {{\n  listen 127.0.0.1:{port};\n  root {root};\n"
        "  client_max_body_size 0;\n  location /dav/ "
        "{ dav_methods PUT DELETE MKCOL; create_full_put_path on; }\n"
        # uploads over 1 MiB refused (413): the time to refusal of http_clients
        "  location /limited/ { client_max_body_size 1m; dav_methods PUT DELETE; }\n }\n}\n"
    )
    with (d / "stdout.log").open("wb") as lf:
        proc = subprocess.Popen(
            [nginx, "-e", str(log), "-c", str(conf), "-p", str(d)],
            stdout=lf,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_port(port, proc, log)
        yield DavServer(f"http://127.0.0.1:{port}/dav/", root / "dav", log)
    finally:
        stop(proc)
