"""A command on an inventory host, as a local child process (docs/hosts.md, "Processes on
a host").

``python -m gridbench.hosts.remote --inventory FILE --host NAME -- ARGV...`` connects to the
host with its ``ssh`` options (asyncssh, as every SSH path of gridbench) and runs ARGV there
(quoted for the host's shell). Its stdin, stdout and stderr are this process's: the caller
gets an ordinary ``subprocess.Popen`` with pipes, records its pid to stop it after a kill
-9, and reads a peer's ``READY <port>`` line as from a local one.

Stopping: stdin's end of file is passed on (the remote command's lifeline, as every server
gridbench starts ends when its stdin closes); SIGTERM does the same, then closes the
connection after a grace period, which ends the remote command with it. The exit status is
the remote command's (255 when the host cannot be reached, as ssh's).

The inventory is named by file, never passed on the command line: ssh options may hold
secrets, and argv is public.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import sys
import threading
from pathlib import Path

from gridbench.errors import GridbenchError

#: what a remote command exits with when the host could not be reached (as OpenSSH's ssh)
UNREACHABLE = 255
#: after its stdin closed, how long the remote command gets before the connection closes
GRACE_S = 5.0
CONNECT_TIMEOUT_S = 15.0


def remote_argv(inventory: Path, host: str, argv: list[str]) -> list[str]:
    """The local command that runs ``argv`` on inventory host ``host``."""
    return [sys.executable, "-m", "gridbench.hosts.remote", "--inventory", str(inventory),
            "--host", host, "--", *argv]  # fmt: skip


async def _pump_in(proc: object, stop: asyncio.Event) -> None:
    """Local stdin to the remote command, then its end of file. stdin is read by a daemon
    thread, not the loop's executor: when the remote command ends on its own while stdin
    stays open, asyncio.run would otherwise wait at its end for that blocked read, and this
    process would outlive the command until its caller closed the pipe."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    def reader(fd: int) -> None:
        while True:
            chunk = _read(fd)
            try:
                loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            except RuntimeError:  # the loop has closed: nobody listens any more
                return
            if not chunk:
                return

    threading.Thread(
        target=reader, args=(sys.stdin.fileno(),), daemon=True, name="gridbench-remote-stdin"
    ).start()
    while not stop.is_set():
        chunk = await chunks.get()
        if not chunk:
            break
        proc.stdin.write(chunk)  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        proc.stdin.write_eof()  # type: ignore[attr-defined]


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


async def _pump_out(stream: object, fd: int) -> None:
    while True:
        chunk = await stream.read(65536)  # type: ignore[attr-defined]
        if not chunk:
            return
        with contextlib.suppress(OSError):
            os.write(fd, chunk)


async def run(address: str, ssh: dict[str, object], argv: list[str]) -> int:
    """Run ``argv`` on ``address``; the remote exit status."""
    import asyncssh

    try:
        conn = await asyncio.wait_for(asyncssh.connect(address, **ssh), CONNECT_TIMEOUT_S)
    except (OSError, asyncssh.Error, TimeoutError, ValueError, TypeError) as exc:
        print(f"cannot reach {address} over SSH: {type(exc).__name__}: {exc}", file=sys.stderr)
        return UNREACHABLE
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    try:
        proc = await conn.create_process(shlex.join(argv), encoding=None)
        pumps = [
            asyncio.create_task(_pump_out(proc.stdout, sys.stdout.fileno())),
            asyncio.create_task(_pump_out(proc.stderr, sys.stderr.fileno())),
        ]
        feeder = asyncio.create_task(_pump_in(proc, stop))
        ended = asyncio.create_task(proc.wait())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({ended, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not ended.done():  # SIGTERM: the lifeline first, then the connection
            with contextlib.suppress(Exception):
                proc.stdin.write_eof()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(ended), GRACE_S)
        for task in pumps:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(task, 2.0)
        feeder.cancel()
        stopped.cancel()
        if ended.done() and not ended.cancelled():
            status = proc.exit_status
            return int(status) if status is not None else 128 + signal.SIGTERM
        ended.cancel()
        return 128 + signal.SIGTERM
    except (OSError, asyncssh.Error) as exc:
        print(f"on {address}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return UNREACHABLE
    finally:
        conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.wait_closed(), 5.0)


def main(argv: list[str] | None = None) -> int:
    """Run a command on an inventory host (see the module's text)."""
    from gridbench.hosts.inventory import load_inventory

    ap = argparse.ArgumentParser(prog="python -m gridbench.hosts.remote", description=__doc__)
    ap.add_argument("--inventory", required=True, type=Path, help="the hosts file")
    ap.add_argument("--host", required=True, help="the host's name in it")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- ARGV...")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command after --")
    try:
        host = load_inventory(a.inventory).host(a.host, "--host")
    except (GridbenchError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return asyncio.run(run(host.address, dict(host.ssh), command))


if __name__ == "__main__":
    sys.exit(main())
