"""A server that says nothing, made to speak the READY protocol (docs/hosts.md).

``python -m gridbench.hosts.launch --port P -- ARGV...`` starts ARGV (a sockperf or iperf3
server told to listen on P), waits until P listens in this host's network namespace, and
prints ``READY P``; from then on it keeps ARGV running until its own stdin closes or it gets
SIGTERM, then stops ARGV (SIGTERM, then SIGKILL). Without ``--port`` it says ``READY 0`` at
once: a process that listens to no stdin of its own (a MUSCLE3 instance) still ends with
its caller. ARGV's output goes to this process's
stderr: nothing fills a pipe, and over SSH it comes back into the caller's log.

It runs where the server runs, so that whoever started it (perhaps over SSH, on another
host) learns that the port listens without reaching into that host's /proc.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from gridbench.lifeline import on_stdin_eof

#: exit status when ARGV did not listen in time (its own status when it exited)
NOT_LISTENING = 3
GRACE_S = 3.0


def listening(port: int, pid: int | None = None) -> bool:
    """Whether ``port`` is in LISTEN state (TCP, v4 or v6) in the network namespace of
    process ``pid`` (None: this one's). Read from /proc, which does not use up a one-off
    server's single connection as a probe would (iperf3 -1)."""
    for table in ("tcp", "tcp6"):
        try:
            proc = "self" if pid is None else str(pid)
            lines = Path(f"/proc/{proc}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 3 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    """Start the server, print READY when it listens, stop it when told (module text)."""
    ap = argparse.ArgumentParser(prog="python -m gridbench.hosts.launch", description=__doc__)
    ap.add_argument("--port", type=int, help="the port ARGV listens on (none: READY 0 at once)")
    ap.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for it")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- ARGV...")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command after --")
    stop = threading.Event()

    def _term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _term)
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno())
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    try:
        deadline = time.monotonic() + a.timeout
        while a.port is not None and not listening(a.port):
            if proc.poll() is not None:
                return proc.returncode or NOT_LISTENING
            if time.monotonic() > deadline or stop.is_set():
                print(f"{command[0]} did not listen on {a.port} within {a.timeout:g} s",
                      file=sys.stderr)  # fmt: skip
                return NOT_LISTENING
            time.sleep(0.02)
        print(f"READY {a.port or 0}", flush=True)
        on_stdin_eof(stop.set)
        while not stop.wait(0.2):
            if proc.poll() is not None:
                return proc.returncode
        return 0
    finally:
        with contextlib.suppress(OSError):
            _stop(proc)


if __name__ == "__main__":
    sys.exit(main())
