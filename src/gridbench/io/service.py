"""An HTTP/REST service's operations timed against payload size, concurrent clients and
connection reuse (the seeds' service-operation tables: latency against data size and
client count, throughput against sessions, with and without a kept connection).

For each size, client count and reuse mode (a *round*), every client starts at one
barrier and runs ``requests`` times its operations on its own object: PUT ``size`` bytes,
GET them back (sha256 checked), DELETE. With reuse each client keeps one connection
(HTTP keep-alive) for the round; without, every request opens its own. Each request
reaches ``RUN/service.jsonl`` as it ends: ``{size, clients, reuse, client, i, op, t0, t1,
seconds, status, ok, detail}``, times in seconds since the phase started (monotonic);
each round adds ``{op: "round", size, clients, reuse, t0, t1, requests}``."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from gridbench.errors import BackendError
from gridbench.io.http import CHUNK, Payload, PhaseLog, basic_auth, run_clients
from gridbench.io.service_model import ServiceSpec

RECORDS = "service.jsonl"
#: answers that mean the operation was done
DONE = {"put": (200, 201, 204), "get": (200,), "delete": (200, 204)}


class _Round:
    """One size, client count and reuse mode: ``n`` clients started at one barrier."""

    def __init__(
        self,
        spec: ServiceSpec,
        key: dict[str, Any],
        name: str,
        log: PhaseLog,
    ) -> None:
        self.spec, self.key, self.name, self.log, self.now = spec, key, name, log, log.now
        self.barrier = threading.Barrier(int(key["clients"]))
        self.payload = Payload(int(key["size"]))
        self.errors: list[str] = []
        self.done = 0
        self.lock = threading.Lock()

    def url(self, i: int) -> str:
        k = self.key
        tag = f"s{k['size']}-c{k['clients']}-{'keep' if k['reuse'] else 'new'}-{i}"
        return f"{self.spec.url.rstrip('/')}/{self.name}-{tag}.bin"

    @contextlib.contextmanager
    def _conn(self, kept: httpx.Client | None) -> Iterator[httpx.Client]:
        if kept is not None:
            yield kept
            return
        with httpx.Client(
            timeout=httpx.Timeout(self.spec.timeout), auth=basic_auth(self.spec)
        ) as c:
            yield c

    def client(self, i: int) -> None:
        spec = self.spec
        kept = (
            httpx.Client(timeout=httpx.Timeout(spec.timeout), auth=basic_auth(spec))
            if self.key["reuse"]
            else None
        )
        try:
            self.barrier.wait()
            for k in range(spec.requests):
                for op in spec.ops:
                    with self._conn(kept) as c:
                        self._one(c, op, i, k)
        except threading.BrokenBarrierError:
            return
        except httpx.HTTPError as exc:
            self.errors.append(f"client {i}: {type(exc).__name__}: {exc}")
            self.barrier.abort()
        finally:
            if kept is not None:
                kept.close()

    def _one(self, c: httpx.Client, op: str, i: int, k: int) -> None:
        url, size = self.url(i), int(self.key["size"])
        t0 = self.now()
        detail = ""
        if op == "put":
            r = c.put(url, content=self.payload.chunks(), headers={"Content-Length": str(size)})
        elif op == "get":
            h = hashlib.sha256()
            with c.stream("GET", url) as r:
                for b in r.iter_bytes(CHUNK):
                    h.update(b)
            if r.status_code == 200 and h.hexdigest() != self.payload.sha256:
                detail = "content differs"
        else:
            r = c.delete(url)
        t1 = self.now()
        ok = r.status_code in DONE[op] and not detail
        if not ok and not detail:
            detail = f"HTTP {r.status_code}"
        with self.lock:
            self.done += 1
        self.log(
            {
                **self.key,
                "client": i,
                "i": k,
                "op": op,
                "t0": t0,
                "t1": t1,
                "seconds": t1 - t0,
                "status": r.status_code,
                "ok": ok,
                "detail": detail,
            }
        )


def run_service(
    spec: ServiceSpec, run_id: str, run_path: Path, progress: Callable[[str], None]
) -> None:
    """Every size, client count and reuse mode; a transport failure is one error naming
    the URL (the requests already recorded stay)."""
    log = PhaseLog(run_path / RECORDS)
    for size in spec.sizes:
        for n in spec.clients:
            for reuse in spec.reuse:
                mode = "kept connections" if reuse else "a connection per request"
                progress(f"service: {size} B, {n} client(s), {mode}")
                key = {"size": size, "clients": n, "reuse": reuse}
                rnd = _Round(spec, key, f"gridbench-io-{run_id}", log)
                t0 = log.now()
                run_clients(rnd.client, n, "gridbench-svc")
                log({**key, "op": "round", "t0": t0, "t1": log.now(), "requests": rnd.done})
                if rnd.errors:
                    raise BackendError(
                        f"service request failed: {rnd.errors[0]}",
                        where=f"service.url ({spec.url})",
                        fix="check the service is up, the URL and its connection limit",
                    )
