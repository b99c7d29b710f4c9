"""gridbench's own TCP forwarder, for the ``relay`` environment.

``python -m gridbench.messaging.relay --listen HOST:PORT --to HOST:PORT [--delay S]``

Accepts any number of connections on ``--listen`` (port 0: any free port) and forwards
each, as a byte stream without any framing, to ``--to``. With ``--delay S`` every chunk is
held ``S`` seconds in each direction before it is passed on, as a delay line: chunks keep
flowing while earlier ones wait, so a round trip grows by ``2 S`` while the throughput
is not cut. Follows the peer protocol: prints ``READY <port>`` once listening, and stops
on SIGTERM or when its stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time

from gridbench.lifeline import on_stdin_eof

CHUNK = 65536
#: chunks waiting in one direction's delay line before reading pauses (back pressure)
QUEUE_CHUNKS = 512


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy one direction; with a delay, through a queue of (due time, chunk)."""
    if delay <= 0:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    else:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUE_CHUNKS)

        async def feed() -> None:
            while chunk := await reader.read(CHUNK):
                await queue.put((time.monotonic() + delay, chunk))
            await queue.put((0.0, b""))

        feeder = asyncio.create_task(feed())
        try:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(chunk)
                await writer.drain()
        finally:
            feeder.cancel()
    # pass the half-close on, so request/response peers see end of stream
    with contextlib.suppress(OSError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()


async def _connection(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    target: tuple[str, int],
    delay: float,
) -> None:
    try:
        server_r, server_w = await asyncio.open_connection(*target)
    except OSError as exc:
        print(f"relay: cannot reach {target[0]}:{target[1]}: {exc}", file=sys.stderr)
        client_w.close()
        return
    pumps = [
        asyncio.create_task(_pump(client_r, server_w, delay)),
        asyncio.create_task(_pump(server_r, client_w, delay)),
    ]
    try:
        await asyncio.gather(*pumps)
    except (OSError, asyncio.IncompleteReadError):
        pass  # one end reset: close both
    finally:
        for task in pumps:
            task.cancel()
        for w in (client_w, server_w):
            w.close()


async def serve(listen: tuple[str, int], target: tuple[str, int], delay: float) -> None:
    """Forward until SIGTERM or stdin closes; print ``READY <port>`` once listening."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # the connection tasks are held here: Python 3.11's start_server keeps only a weak
    # reference to a coroutine callback's task, and the collector may destroy it mid-stream
    tasks: set[asyncio.Task[None]] = set()

    def accepted(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        task = loop.create_task(_connection(r, w, target, delay))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(accepted, listen[0], listen[1])
    port = server.sockets[0].getsockname()[1]
    print(f"READY {port}", flush=True)
    # stop when stdin closes (the runner died or let go of us)
    on_stdin_eof(lambda: loop.call_soon_threadsafe(stop.set))
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m gridbench.messaging.relay``."""
    ap = argparse.ArgumentParser(prog="python -m gridbench.messaging.relay", description=__doc__)
    ap.add_argument("--listen", type=_host_port, required=True, help="HOST:PORT (0: any)")
    ap.add_argument("--to", type=_host_port, required=True, help="HOST:PORT to forward to")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds held per chunk")
    args = ap.parse_args(argv)
    if not 0 <= args.delay <= 10:
        ap.error("--delay must be between 0 and 10 seconds")
    try:
        asyncio.run(serve(args.listen, args.to, args.delay))
    except OSError as exc:
        print(f"relay: cannot listen on {args.listen[0]}:{args.listen[1]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
