"""A live ``gridbench serve`` subprocess for the web tests, and helpers to drive it.

The server runs on a free high loopback port with its own results root; it is stopped by
its pid (SIGINT, as Ctrl-C) and its log tail is shown when a test fails.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import BIN, cli_env

#: A fast spec against the embedded reference grid (about 10 s end to end). The lateness
#: limit is loose because CI machines are shared: a stalled submitter must not make
#: these runs invalid (validity has its own tests).
FAST_SPEC = """\
name: {name}
backend: {{type: reference, options: {{preset: batched}}}}
job: {{runtime: 0.5s}}
load: {{model: open, rate: {rate}, pool: 16, late_threshold: 1s}}
trials: 1
trial: {{duration: {duration}}}
timeouts: {{submit: 5s, status_interval: 0.2s, drain: 20s, settle: 1s}}
collectors: [{{type: edgi, reports: auto, poll: 0.5s}}]
thresholds: [{{metric: latency.overall.p99, op: "<", value: 60}}]
"""


def fast_spec(name: str, rate: str = "2/s", duration: str = "3s") -> str:
    return FAST_SPEC.format(name=name, rate=rate, duration=duration)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str
    root: Path
    log: Path

    def tail(self, n: int = 40) -> str:
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(lines[-n:])


@contextmanager
def serve(
    root: Path,
    log: Path,
    *,
    host: str = "127.0.0.1",
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    ready_headers: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Start ``gridbench serve`` and wait until it answers; stop it by pid afterwards."""
    port = free_port()
    argv = [str(BIN), "serve", "--host", host, "--port", str(port), "--results", str(root)]
    full_env = {**cli_env(root), **(env or {})}
    with log.open("w") as fh:
        proc = subprocess.Popen(
            argv + (extra or []), stdout=fh, stderr=subprocess.STDOUT, text=True, env=full_env
        )
    server = Server(proc, f"http://127.0.0.1:{port}", root, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"gridbench serve exited {proc.returncode}:\n{server.tail()}")
            try:
                r = httpx.get(server.url + "/static/dashboard.css", timeout=2)
                if r.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gridbench serve did not answer:\n{server.tail()}")
            time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)


def start_run(client: httpx.Client, spec: str, **form: str) -> str:
    """Start an experiment through the new-experiment form; returns its run id."""
    csrf = csrf_of(client.get("/new").text)
    r = client.post("/new", data={"csrf": csrf, "yaml": spec, "action": "start", **form})
    assert r.status_code == 303, r.text[-2000:]
    loc = r.headers["location"]
    assert loc.startswith("/experiments/")
    return loc.rsplit("/", 1)[1]


def read_events(client: httpx.Client, rid: str, timeout: float = 120) -> list[tuple[str, Any]]:
    """Every server-sent event of a run until its 'end' event."""
    import json

    out: list[tuple[str, Any]] = []
    kind = None
    with client.stream("GET", f"/experiments/{rid}/events", timeout=timeout) as s:
        assert s.status_code == 200
        assert s.headers["content-type"].startswith("text/event-stream")
        for line in s.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind is not None:
                out.append((kind, json.loads(line[5:])))
                if kind == "end":
                    break
    return out


#: Debian's chromium, which the browser tests drive through Playwright
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@contextmanager
def chromium(args: list[str] | None = None) -> Iterator[Any]:
    """A headless Chromium for a module's browser tests (failing, never skipping, when it
    is not installed)."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed (scripts/debian-packages.txt)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=args or CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
