"""A blocking httpx client whose requests end by a deadline, however the peer trickles.

httpx's timeouts bound each read, not the whole answer: an exporter that sends a byte a
second (its headers or its body) keeps a plain client reading for hours, and the
sampler's worker thread with it. Here every socket operation's timeout is cut to what is
left of the deadline set around the request (:func:`deadline`), so a request ends by then
(a ``httpx.TimeoutException``) whatever the peer does. The rest is httpx's own transport.
"""

from __future__ import annotations

import ssl
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpcore
import httpx

_END: ContextVar[float | None] = ContextVar("http_deadline_end", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Requests of a :func:`deadline_client` in this block end within ``seconds``."""
    token = _END.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _END.reset(token)


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    end = _END.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise exc("the answer did not end by its deadline")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Transport(httpx.HTTPTransport):
    """httpx's transport over :class:`_Backend` (no proxy: ``trust_env`` is off)."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            network_backend=_Backend(),
        )


def deadline_client() -> httpx.Client:
    """A blocking client whose requests inside :func:`deadline` end by it."""
    return httpx.Client(transport=_Transport(), trust_env=False)
