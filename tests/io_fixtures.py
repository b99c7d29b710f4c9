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


@pytest.fixture
def sshfs(tmp_path: Path) -> Iterator[Sshfs]:
    """sshd on 127.0.0.1:<free high port> with a throwaway key, and an sshfs mount of a
    served directory. Both are stopped/unmounted afterwards."""
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
        proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(cfg)], stdout=lf, stderr=subprocess.STDOUT
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


@dataclass
class ShapedLinks:
    """sshfs mounts reached over veth pairs into a network namespace, each link shaped."""

    mounts: dict[str, Path]  # link name -> sshfs mount
    served: dict[str, Path]
    netns: str
    log: Path
    host_dev: dict[str, str]


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def shaped_links(tmp_path: Path, rates: dict[str, str]) -> Iterator[ShapedLinks]:
    """An sshd in a fresh network namespace, one veth pair per entry of ``rates`` (name ->
    tbf rate like '100mbit'), shaped both ways, and an sshfs mount over each link."""
    tag = f"{os.getpid() % 10000}"
    ns = f"gbio-{tag}"
    created: list[str] = []
    sshd_proc: subprocess.Popen[bytes] | None = None
    mounts: dict[str, SshfsMount] = {}
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    log = d / "sshd.log"
    try:
        r = _ip("netns", "add", ns)
        if r.returncode != 0:
            pytest.fail(f"ip netns add failed: {r.stderr.strip()}")
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        addrs: dict[str, str] = {}
        host_dev: dict[str, str] = {}
        for i, (name, rate) in enumerate(rates.items(), start=1):
            h, p = f"gbh{tag}{i}", f"gbp{tag}{i}"
            subnet = f"10.231.{i}"
            for args in (
                ["link", "add", h, "type", "veth", "peer", "name", p],
                ["link", "set", p, "netns", ns],
                ["addr", "add", f"{subnet}.1/24", "dev", h],
                ["link", "set", h, "up"],
                ["netns", "exec", ns, "ip", "addr", "add", f"{subnet}.2/24", "dev", p],
                ["netns", "exec", ns, "ip", "link", "set", p, "up"],
            ):
                r = _ip(*args)
                if r.returncode != 0:
                    pytest.fail(f"ip {' '.join(args)} failed: {r.stderr.strip()}")
                if args[:2] == ["link", "add"]:
                    created.append(h)
            tbf = ["root", "tbf", "rate", rate, "burst", "256kb", "latency", "100ms"]
            for cmd in (
                ["tc", "qdisc", "add", "dev", h, *tbf],
                ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", p, *tbf],
            ):
                r = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if r.returncode != 0:
                    pytest.fail(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
            addrs[name] = f"{subnet}.2"
            host_dev[name] = h
        for name in ("host", "client"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
            )
        (d / "authorized_keys").write_text((d / "client.pub").read_text())
        port = free_port()
        listen = "".join(f"ListenAddress {a}\n" for a in addrs.values())
        cfg = d / "sshd_config"
        cfg.write_text(
            f"Port {port}\n{listen}HostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "StrictModes no\nSubsystem sftp internal-sftp\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        with log.open("wb") as lf:
            sshd_proc = subprocess.Popen(
                ["ip", "netns", "exec", ns, sshd, "-D", "-e", "-f", str(cfg)],
                stdout=lf,
                stderr=subprocess.STDOUT,
            )
        served: dict[str, Path] = {}
        for name, addr in addrs.items():
            t0 = time.monotonic()
            while True:
                if sshd_proc.poll() is not None:
                    pytest.fail(f"sshd exited; log tail:\n{log_tail(log)}")
                with socket.socket() as s:
                    s.settimeout(1)
                    if s.connect_ex((addr, port)) == 0:
                        break
                if time.monotonic() - t0 > 15:
                    pytest.fail(f"sshd not reachable at {addr}:{port}; log tail:\n{log_tail(log)}")
                time.sleep(0.1)
            served[name] = tmp_path / f"served-{name}"
            served[name].mkdir()
            mnt = tmp_path / f"mnt-{name}"
            mnt.mkdir()
            mounts[name] = mount_sshfs(
                f"root@{addr}:{served[name]}", mnt, port, d / "client", d / f"sshfs-{name}.log"
            )

        yield ShapedLinks({k: m.mount for k, m in mounts.items()}, served, ns, log, host_dev)
    finally:
        for m in mounts.values():
            unmount_sshfs(m)
        if sshd_proc is not None:
            stop(sshd_proc)
        for h in created:
            _ip("link", "del", h)
        _ip("netns", "del", ns)
