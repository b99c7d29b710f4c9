"""A throw-away OpenSSH server for the scp transfers, on the peer side of an environment.

:func:`start_sshd` makes a host key and a client key (``ssh-keygen``) in the work
directory, then spawns this module as the peer (``python -m
gridbench.messaging.transports.sshd --bind HOST --dir DIR``): a small wrapper that honours
the READY protocol, since sshd itself prints nothing useful. The wrapper runs on the peer
side (maybe inside a network namespace), so it finds a free port where sshd will listen,
writes ``sshd_config`` for it, starts ``sshd -D -e`` (its log on the wrapper's stderr), and
prints ``READY <port>`` once the port accepts connections. It stops sshd on SIGTERM or when
its stdin closes.

Configuration (as tests/io_fixtures.py's sshd): key authentication only, ``UsePAM no``,
``StrictModes no``, ``PermitRootLogin prohibit-password``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import getpass
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from gridbench.errors import BackendError
from gridbench.lifeline import on_stdin_eof
from gridbench.messaging.transports.peer_process import PeerProcess, Spawn, start_peer

_PORT_TRIES = 5  # another process may take the free port between our look and sshd's bind


_SSHD_GRACE_S = 5.0  # the wrapper's wait for sshd after SIGTERM
#: how long the wrapper gets to stop sshd and exit: its own wait for sshd, plus a margin
_WRAPPER_GRACE_S = 12.0


@dataclass
class SshServer:
    """A running throw-away sshd; scp reaches ``user@host:port`` with ``identity``."""

    host: str
    port: int
    user: str
    identity: Path  # the client's private key
    directory: Path  # where uploaded payloads go (inside the work directory)
    peer: PeerProcess

    def close(self) -> None:
        """Stop the server (idempotent)."""
        # longer than the wrapper's own 5 s wait for sshd, or a slow sshd gets its wrapper
        # SIGKILLed (and sshd with it) before the wrapper could end it cleanly
        self.peer.close(timeout=_WRAPPER_GRACE_S)


def sshd_path() -> str | None:
    """The sshd binary, or None when openssh-server is not installed."""
    found = shutil.which("sshd") or "/usr/sbin/sshd"
    return found if Path(found).exists() else None


def _keygen(path: Path) -> None:
    if path.exists():
        return
    try:
        r = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gridbench", "-f", str(path)],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(
            f"cannot run ssh-keygen: {exc}",
            where="transfer.tools: scp",
            fix="apt-get install openssh-client",
        ) from None
    if r.returncode != 0:
        raise BackendError(
            f"ssh-keygen failed: {r.stderr.decode('utf-8', 'replace').strip()}",
            where=str(path),
            fix="check that the work directory is writable",
        )


def start_sshd(spawn: Spawn, bind_host: str, workdir: Path, timeout: float) -> SshServer:
    """Make the keys, start sshd on ``bind_host`` through ``spawn`` and wait until it
    accepts connections. BackendError when sshd or ssh-keygen is missing; PeerError (with
    sshd's log tail) when it does not come up within ``timeout`` seconds."""
    if sshd_path() is None:
        raise BackendError(
            "sshd is not installed",
            where="transfer.tools: scp",
            fix="apt-get install openssh-server, or name an ssh server in transfer.scp",
        )
    # sshd refuses relative key paths (it reads its config from /), and the default
    # results folder is relative
    workdir = workdir.resolve()
    keys = workdir / "keys"
    keys.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory = workdir / "scp"
    directory.mkdir(exist_ok=True)
    _keygen(keys / "host")
    _keygen(keys / "client")
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    argv = [sys.executable, "-m", "gridbench.messaging.transports.sshd"]
    argv += ["--bind", bind_host, "--dir", str(keys)]
    peer = start_peer(spawn, argv, "sshd", workdir / "sshd.log", timeout)
    return SshServer(bind_host, peer.port, getpass.getuser(), keys / "client", directory, peer)


# -- the wrapper, on the peer side ----------------------------------------------------------


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def write_config(keys: Path, host: str, port: int) -> Path:
    """sshd_config for ``host:port`` with the keys in ``keys``."""
    cfg = keys / "sshd_config"
    cfg.write_text(
        f"Port {port}\nListenAddress {host}\nHostKey {keys / 'host'}\n"
        f"PidFile {keys / 'sshd.pid'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "Subsystem sftp internal-sftp\nLogLevel INFO\n"
    )
    return cfg


def _accepts(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> None:
    """In the child before exec: the kernel kills sshd when this wrapper dies, even by
    SIGKILL (a root sshd with key login must never outlive the run that started it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def _start(keys: Path, host: str, deadline: float) -> tuple[subprocess.Popen[bytes], int]:
    sshd = sshd_path() or "sshd"
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    for _ in range(_PORT_TRIES):
        port = _free_port(host)
        cfg = write_config(keys, host, port)
        # stdout to our stderr: the READY line must be the only thing on stdout
        proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,
            preexec_fn=_die_with_parent,  # safe: no other thread runs yet
        )
        while proc.poll() is None and time.monotonic() < deadline:
            if _accepts(host, port):
                return proc, port
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            break
    raise SystemExit(f"sshd: it did not listen on {host}; see its log above")


def main(argv: list[str] | None = None) -> int:
    """Run sshd until SIGTERM or stdin EOF, printing READY <port> when it listens."""
    p = argparse.ArgumentParser(prog="gridbench-sshd")
    p.add_argument("--bind", required=True)
    p.add_argument("--dir", required=True, type=Path, help="keys and authorized_keys")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    stop = threading.Event()

    def _term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _term)

    try:
        proc, port = _start(args.dir, args.bind, time.monotonic() + args.timeout)
    except OSError as exc:
        print(f"sshd: cannot listen on {args.bind}: {exc}", file=sys.stderr)
        return 1
    on_stdin_eof(stop.set)
    print(f"READY {port}", flush=True)
    try:
        while not stop.wait(0.2):
            if proc.poll() is not None:
                print(f"sshd: exited with status {proc.returncode}", file=sys.stderr)
                return 1
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(_SSHD_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
