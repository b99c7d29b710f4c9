"""What the runner asks of a transport. Implementations: tcp.py, zmq_transport.py,
grpc_echo.py (echo and burst), muscle.py (a ping-pong pair under muscle_manager),
transfer.py (scp, parallel TCP streams, ZeroMQ).

Servers run either in this process (a thread: the ``process`` environment and the echo
``inprocess`` config) or as a *peer process*: ``python -m gridbench.messaging.peer ...``
(argv from :func:`gridbench.messaging.transports.peer_argv`), started by the environment
on its peer side. A peer prints ``READY <port>`` as its first stdout line, serves until
SIGTERM or until its stdin closes, and exits 0.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class PeerError(Exception):
    """The other end failed: it died, timed out or broke the protocol. The runner records
    the test as failed with this message and goes on with the next size."""


@dataclass(frozen=True, slots=True)
class Address:
    """Where a client connects: a TCP host and port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A throw-away CA and a server certificate for ``host`` (PEM files), made at run time
    by :func:`gridbench.messaging.transports.tls.make_tls`; nothing is shipped."""

    ca: Path
    cert: Path
    key: Path
    host: str


@dataclass(frozen=True, slots=True)
class BurstTiming:
    """N asynchronous calls fired at once, timed from the first send (ns).

    ``enqueue_ns`` is wall time (``perf_counter_ns``); ``enqueue_cpu_ns`` is the CPU time
    the enqueuing thread spent in the same span (``thread_time_ns``): the client's own
    work, without the time a loaded machine gave to other processes meanwhile."""

    enqueue_ns: int  # until the last call was handed to the transport (wall)
    first_ns: int  # until the first response arrived
    arrival_ns: list[int] = field(default_factory=list)  # every response, in arrival order
    enqueue_cpu_ns: int | None = None  # the enqueuing thread's CPU time for the enqueue


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a burst's timed span, as ``timeit``
    pauses it: a burst allocates thousands of call objects, so collections would fall
    inside the enqueue at random (a third of gRPC's enqueue time on a 2-core host,
    bench/bench_grpc_burst.py) and the figure would time the collector, not the client
    handing calls to its transport. It runs again afterwards, outside the clock."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class PingPongClient(Protocol):
    """A connected client whose peer echoes each message back."""

    def round_trips(self, size: int, count: int, timeout: float) -> list[int]:
        """``count`` round trips of a ``size``-byte message; each RTT in ns. Raises
        :class:`PeerError` when the peer fails or ``timeout`` seconds pass."""
        ...

    def close(self) -> None:
        """Disconnect (idempotent)."""
        ...


class EchoClient(Protocol):
    """A connected client of an echo service (request/response)."""

    def calls(self, payload: bytes, count: int, timeout: float) -> list[int]:
        """``count`` sequential calls; each call's latency in ns."""
        ...

    def burst(self, payload: bytes, count: int, timeout: float) -> BurstTiming:
        """``count`` asynchronous calls fired at once."""
        ...

    def close(self) -> None:
        """Disconnect (idempotent)."""
        ...


class Server(Protocol):
    """A server running in a thread of this process."""

    @property
    def target(self) -> str:
        """What a client of this process connects to (``host:port``, or ``inproc://...``)."""
        ...

    def close(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        ...
