"""Starting a peer process and waiting for its ``READY <port>`` line.

Every peer gridbench starts (echo servers, transfer sinks, relays' targets) follows one
protocol: its first stdout line is ``READY <port>``; it serves until SIGTERM or until its
stdin closes. The environment decides where it runs (``Spawn``: a plain child, or one
inside a network namespace) and records it so ``gridbench cleanup`` can find it.
"""

from __future__ import annotations

import contextlib
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gridbench.messaging.transports.base import PeerError

#: Starts ``argv`` on the peer side with stdin and stdout as pipes, stderr to ``log``.
Spawn = Callable[[list[str], str, Path], "subprocess.Popen[bytes]"]


@dataclass
class PeerProcess:
    """A running peer and the port it listens on."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of its stderr log (for error messages)."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self, timeout: float = 5.0) -> None:
        """Close its stdin, then SIGTERM, then SIGKILL (idempotent)."""
        p = self.proc
        if p.stdin is not None:
            with contextlib.suppress(OSError):
                p.stdin.close()
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout)
        if p.stdout is not None:
            p.stdout.close()


def read_ready(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The port from the peer's ``READY <port>`` line; PeerError if it exits, prints
    something else or says nothing within ``timeout`` seconds."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise PeerError(f"the peer said nothing within {timeout:g} s")
            chunk = proc.stdout.read1(4096)  # type: ignore[attr-defined]
            if not chunk:
                raise PeerError(f"the peer exited with status {proc.wait(5)} before it was ready")
            buf += chunk
    finally:
        sel.close()
    line = buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    parts = line.split()
    if len(parts) != 2 or parts[0] != "READY" or not parts[1].isdigit():
        raise PeerError(f"the peer's first line is not 'READY <port>': {line[:200]!r}")
    return int(parts[1])


def start_peer(spawn: Spawn, argv: list[str], role: str, log: Path, timeout: float) -> PeerProcess:
    """Spawn a peer and wait until it listens; on failure it is stopped and the error
    carries its log tail."""
    proc = spawn(argv, role, log)
    try:
        port = read_ready(proc, timeout)
    except PeerError as exc:
        peer = PeerProcess(proc, 0, log)
        peer.close()
        tail = peer.log_tail()
        raise PeerError(f"{role}: {exc}" + (f"\n{tail}" if tail else "")) from None
    return PeerProcess(proc, port, log)
