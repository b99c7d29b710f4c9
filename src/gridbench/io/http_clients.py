"""N HTTP/WebDAV clients at once (DEISA's simultaneous transfer tests): for each client
count and repetition, every client PUTs its own file at the same moment, then every
client GETs its file back at the same moment (content checked by sha256). Each client
has its own connection. A refused upload is a result, not an error: the time from the
start of the PUT to the refusal is recorded with the status.

Every transfer reaches ``RUN/http_clients.jsonl`` as it ends: ``{clients, rep, client,
op (upload|download), t0, t1, seconds, bytes, status, ok, refused, detail}``, times in
seconds since the phase started (monotonic). Uploads are deleted afterwards."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from gridbench.errors import BackendError
from gridbench.io.http import CHUNK, Payload, PhaseLog, basic_auth, run_clients
from gridbench.io.resilience_model import HttpClientsSpec

RECORDS = "http_clients.jsonl"
#: Answers to a PUT that mean stored.
STORED = (200, 201, 204)


class _Round:
    """One client count, one repetition: ``n`` clients, a barrier before each phase."""

    def __init__(self, spec: HttpClientsSpec, n: int, rep: int, name: str, log: PhaseLog) -> None:
        self.spec, self.n, self.rep, self.name, self.log = spec, n, rep, name, log
        self.barrier = threading.Barrier(n)
        self.errors: list[str] = []

    def url(self, i: int) -> str:
        return f"{self.spec.url.rstrip('/')}/{self.name}-c{self.n}-r{self.rep}-{i}.bin"

    def client(self, i: int) -> None:
        spec, now = self.spec, self.log.now
        timeout = httpx.Timeout(spec.timeout)
        payload = Payload(spec.size)
        base = {"clients": self.n, "rep": self.rep, "client": i, "bytes": spec.size}
        with httpx.Client(timeout=timeout, auth=basic_auth(spec)) as c:
            try:
                self.barrier.wait()
                t0 = now()
                r = c.put(
                    self.url(i),
                    content=payload.chunks(),
                    headers={"Content-Length": str(spec.size)},
                )
                t1 = now()
                stored = r.status_code in STORED
                self.log(
                    {
                        **base,
                        "op": "upload",
                        "t0": t0,
                        "t1": t1,
                        "seconds": t1 - t0,
                        "status": r.status_code,
                        "ok": stored,
                        "refused": not stored,
                        "detail": "" if stored else f"refused: HTTP {r.status_code}",
                    }
                )
                self.barrier.wait()
                if stored:
                    self._download(c, i, payload.sha256, base)
            except threading.BrokenBarrierError:
                return
            except httpx.HTTPError as exc:
                self.errors.append(f"client {i}: {exc}")
                self.barrier.abort()
            finally:
                with contextlib.suppress(httpx.HTTPError):
                    c.delete(self.url(i))

    def _download(self, c: httpx.Client, i: int, want: str, base: dict[str, Any]) -> None:
        now = self.log.now
        h = hashlib.sha256()
        t0 = now()
        with c.stream("GET", self.url(i)) as resp:
            for b in resp.iter_bytes(CHUNK):
                h.update(b)
        t1 = now()
        same = resp.status_code == 200 and h.hexdigest() == want
        detail = (
            "content identical"
            if same
            else (f"HTTP {resp.status_code}" if resp.status_code != 200 else "content differs")
        )
        self.log(
            {
                **base,
                "op": "download",
                "t0": t0,
                "t1": t1,
                "seconds": t1 - t0,
                "status": resp.status_code,
                "ok": same,
                "refused": False,
                "detail": detail,
            }
        )


def run_http_clients(
    spec: HttpClientsSpec, run_id: str, run_path: Path, progress: Callable[[str], None]
) -> None:
    """Every client count, every repetition; a transport failure is one error naming
    the URL (the transfers already recorded stay)."""
    log = PhaseLog(run_path / RECORDS)
    for n in spec.clients:
        for rep in range(spec.repetitions):
            progress(f"HTTP: {n} client(s) at once, repetition {rep + 1}")
            rnd = _Round(spec, n, rep, f"gridbench-io-{run_id}", log)
            run_clients(rnd.client, n, "gridbench-http")
            if rnd.errors:
                raise BackendError(
                    f"HTTP transfer failed: {rnd.errors[0]}",
                    where=f"http_clients.url ({spec.url})",
                    fix="check the server is up, the URL and its connection limit",
                )
