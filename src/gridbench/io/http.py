"""HTTP transfer timing: PUT then GET files of given sizes to a WebDAV/HTTP endpoint,
repeated, next to the same copy through a file-system target (the seed's web-interface
test, 128 MB and 1.5 GB, 3 times, mean ± sd)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from gridbench.errors import BackendError, GridbenchError
from gridbench.io import cache
from gridbench.io.model import HttpSpec
from gridbench.io.resilience_model import HttpClientsSpec
from gridbench.io.safety import PreparedTarget, inside
from gridbench.io.service_model import ServiceSpec
from gridbench.store.records import append_record

CHUNK = 1024 * 1024


class Payload:
    """``size`` bytes made of one random block repeated: generated while sent, so no
    source file is written anywhere (the seed's 1.5 GB would otherwise land on disk)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.block = os.urandom(CHUNK)
        h = hashlib.sha256()
        for b in self.chunks():
            h.update(b)
        self.sha256 = h.hexdigest()

    def chunks(self) -> Iterator[bytes]:
        left = self.size
        while left > 0:
            b = self.block[: min(left, CHUNK)]
            yield b
            left -= len(b)


class PhaseLog:
    """A phase's record file (``RUN/<name>.jsonl``): each record appended as it comes, from
    any client thread, one at a time; :meth:`now` is the time in seconds since the phase
    started (monotonic), the ``t0``/``t1`` of every record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._start = time.monotonic()

    def __call__(self, rec: dict[str, Any]) -> None:
        with self._lock:
            append_record(self.path, rec)

    def now(self) -> float:
        return time.monotonic() - self._start


def run_clients(client: Callable[[int], None], n: int, name: str) -> None:
    """``client(i)`` for each of ``n`` clients on a thread of its own (``name`` + i), all
    started, then all joined (the clients meet at their own barrier)."""
    threads = [threading.Thread(target=client, args=(i,), name=f"{name}{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while b := fh.read(CHUNK):
            yield b


def _url(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def basic_auth(spec: HttpSpec | HttpClientsSpec | ServiceSpec) -> tuple[str, str] | None:
    """(user, password) from the environment variable ``spec.auth_env`` names (never from
    the URL: the spec, its copy and every message stay free of secrets)."""
    if spec.auth_env is None:
        return None
    value = os.environ.get(spec.auth_env)
    if not value or ":" not in value:
        raise GridbenchError(
            f"environment variable {spec.auth_env} is not set to USER:PASSWORD",
            where="spec field 'http.auth_env'",
            fix=f"export {spec.auth_env}=user:password before the run",
        )
    user, password = value.split(":", 1)
    return user, password


def run_http(spec: HttpSpec, run_id: str, compare: PreparedTarget | None) -> list[dict[str, Any]]:
    """Rows ``{size, rep, op (upload|download|fs_write:T|fs_read:T), seconds, mib_s, ok}``."""
    rows: list[dict[str, Any]] = []
    auth = basic_auth(spec)
    with httpx.Client(timeout=httpx.Timeout(60.0, read=600.0), auth=auth) as client:
        for size in spec.sizes:
            payload = Payload(size)
            name = f"gridbench-io-{run_id}-{size}.bin"
            url = _url(spec.url, name)
            try:
                for rep in range(spec.repetitions):
                    rows += _http_once(client, url, payload, rep)
                    if compare is not None:
                        rows += _fs_once(compare, payload, name, rep)
            finally:
                with contextlib.suppress(httpx.HTTPError):
                    client.delete(url)
    return rows


def _row(size: int, rep: int, op: str, secs: float, ok: bool, detail: str = "") -> dict[str, Any]:
    return {
        "size": size,
        "rep": rep,
        "op": op,
        "seconds": secs,
        # MiB/s (2**20 bytes), as every size in gridbench is binary
        "mib_s": size / 2**20 / secs if secs > 0 else None,
        "ok": ok,
        "detail": detail,
    }


def _http_once(client: httpx.Client, url: str, payload: Payload, rep: int) -> list[dict[str, Any]]:
    size, want = payload.size, payload.sha256
    try:
        t0 = time.perf_counter()
        r = client.put(url, content=payload.chunks(), headers={"Content-Length": str(size)})
        up = time.perf_counter() - t0
        if r.status_code not in (200, 201, 204):
            raise BackendError(
                f"upload refused: HTTP {r.status_code}",
                where=f"PUT {url}",
                fix="check the endpoint accepts PUT (WebDAV) and its size limit",
            )
        h = hashlib.sha256()
        t0 = time.perf_counter()
        with client.stream("GET", url) as resp:
            if resp.status_code != 200:
                raise BackendError(f"download failed: HTTP {resp.status_code}", where=f"GET {url}")
            for b in resp.iter_bytes(CHUNK):
                h.update(b)
        down = time.perf_counter() - t0
    except httpx.HTTPError as exc:
        raise BackendError(
            f"HTTP transfer failed: {exc}", where=url, fix="check the server is up and the URL"
        ) from None
    same = h.hexdigest() == want
    return [
        _row(size, rep, "upload", up, True),
        _row(size, rep, "download", down, same, "content identical" if same else "content differs"),
    ]


def _fs_once(t: PreparedTarget, payload: Payload, name: str, rep: int) -> list[dict[str, Any]]:
    size, want = payload.size, payload.sha256
    dst = inside(t.workdir / name, t.workdir)
    t0 = time.perf_counter()
    with dst.open("wb") as b:
        for chunk in payload.chunks():
            b.write(chunk)
        b.flush()
        os.fsync(b.fileno())
    w = time.perf_counter() - t0
    read_cache = evict(dst)
    h = hashlib.sha256()
    t0 = time.perf_counter()
    for b2 in _chunks(dst):
        h.update(b2)
    r = time.perf_counter() - t0
    dst.unlink()
    same = h.hexdigest() == want
    return [
        _row(size, rep, f"fs_write:{t.name}", w, True),
        _row(size, rep, f"fs_read:{t.name}", r, same, f"read after: {read_cache}"),
    ]


def evict(path: Path) -> str:
    """Get a just-written file out of the page cache before it is read back, so the read
    is timed from the storage: drop caches where allowed, else ask the kernel to drop
    this file's pages (fadvise; honoured by local file systems once the data is on disk).
    Returns the way used, recorded with the read figure."""
    if cache.can_drop_caches() and cache.drop_caches():
        return "caches dropped"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return "page cache left as is"
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        return "page cache left as is"
    finally:
        os.close(fd)
    return "fadvise DONTNEED"
