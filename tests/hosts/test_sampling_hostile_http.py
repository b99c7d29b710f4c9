"""The adversarial pass over the samplers (issue 41), over HTTP: a real peer on loopback, in
a thread of this test, answers as a hostile or broken exporter would, and the real
scraping code and :class:`Sampler` read it. Each test failed on the code before the fix
(how is said in each)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import gzip
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pytest

from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.deadline_http import deadline_client
from gridbench.hosts.sampling.exporter import MAX_BYTES, scrape
from gridbench.hosts.sampling.figures import Problem
from gridbench.hosts.sampling.sampler import HostTarget, Sampler
from sampling_fixtures import sample_for

#: what the peer does with one connection: (the request's bytes, the socket)
Handler = Callable[[bytes, socket.socket], None]


def _valid(n: int, clock: float) -> bytes:
    """A node_exporter page whose counters grow with ``n`` and whose clock says ``clock``."""
    return (
        "# TYPE node_cpu_seconds_total counter\n"
        f'node_cpu_seconds_total{{cpu="0",mode="idle"}} {100 + n}\n'
        f'node_cpu_seconds_total{{cpu="0",mode="user"}} {10 + n / 4}\n'
        f'node_disk_read_bytes_total{{device="sda"}} {4096 * n}\n'
        f"node_time_seconds {clock!r}\n"
    ).encode()


@pytest.fixture
def peer() -> Iterator[Callable[[Handler], str]]:
    """Starts a raw TCP peer with a handler; yields a function giving its URL."""
    socks: list[socket.socket] = []

    def start(handler: Handler) -> str:
        srv = socket.create_server(("127.0.0.1", 0))
        socks.append(srv)

        def conn(c: socket.socket) -> None:
            with c, contextlib.suppress(OSError):  # OSError: the client hung up
                handler(c.recv(65536), c)

        def serve() -> None:
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                threading.Thread(target=conn, args=(c,), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{srv.getsockname()[1]}/metrics"

    yield start
    for s in socks:
        s.close()


def _trickle(head: bytes) -> Handler:
    def handler(_req: bytes, c: socket.socket) -> None:
        c.sendall(head)
        for _ in range(600):  # a byte every 0.2 s: no read ever times out
            time.sleep(0.2)
            c.sendall(b"a")

    return handler


def _bounded(fn: Callable[[], object], seconds: float) -> object:
    """``fn()`` in a thread; a failure (not a hung test) when it takes over ``seconds``."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"still reading after {seconds} s: no deadline on the whole answer")
    finally:
        pool.shutdown(wait=False)


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n# ",  # a body that never ends
        b"HTTP/1.1 200 OK\r\nX-Slow: ",  # headers that never end
    ],
    ids=["body", "headers"],
)
def test_a_trickling_exporter_is_cut_at_the_deadline(
    peer: Callable[[Handler], str], head: bytes
) -> None:
    # before: httpx bounds each read only, so both hung for the whole trickle (minutes)
    url = peer(_trickle(head))
    t0 = time.monotonic()
    with deadline_client() as client:
        got = _bounded(lambda: scrape(client, url, 1.0), 8.0)
    assert isinstance(got, Problem) and got.code == "exporter-down", got
    assert "did not answer in full in 1 s" in got.text
    assert time.monotonic() - t0 < 3.5


async def test_the_sampler_names_a_trickling_exporter_and_keeps_sampling(
    tmp_path: Path, peer: Callable[[Handler], str]
) -> None:
    # before: the host's scrape hung in its worker thread; no exporter-down, and stopping
    # the sampler left the thread reading
    url = peer(_trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n# "))
    slow = HostTarget("slow", exporter=url, address="127.0.0.1", ssh={"port": 9})
    sampler = Sampler(tmp_path / "samples", [slow, HostTarget("local")], 0.3, timeout=0.5)
    await sample_for(sampler, 3.0)
    s = read_samples(tmp_path)
    down = [w for w in s.warnings if w["host"] == "slow" and w["code"] == "exporter-down"]
    assert down and "did not answer in full" in down[0]["text"], s.warnings
    assert s.hosts.filter(pl.col("host") == "local").height >= 5  # the others go on


def test_a_compressed_answer_is_refused_before_it_inflates(
    peer: Callable[[Handler], str],
) -> None:
    # before: httpx inflated each 64 KiB of gzip into about 64 MiB at once
    bomb = gzip.compress(b"\0" * (256 * 1024 * 1024), compresslevel=9)
    asked: list[bytes] = []

    def handler(req: bytes, c: socket.socket) -> None:
        asked.append(req)
        c.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
            + f"Content-Length: {len(bomb)}\r\n\r\n".encode()
            + bomb
        )

    url = peer(handler)
    tracemalloc.start()
    try:
        with deadline_client() as client:
            got = scrape(client, url, 5.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(got, Problem) and got.code == "exporter-malformed", got
    assert "compressed answer (gzip)" in got.text
    assert peak < 8 * 1024 * 1024, peak
    assert b"accept-encoding: identity" in asked[0].lower()


def test_a_declared_huge_body_is_refused_unread(peer: Callable[[Handler], str]) -> None:
    # before: read until the deadline (the peer sends nothing more): "did not answer"
    url = peer(_trickle(f"HTTP/1.1 200 OK\r\nContent-Length: {10**12}\r\n\r\n".encode()))
    t0 = time.monotonic()
    with deadline_client() as client:
        got = scrape(client, url, 3.0)
    assert isinstance(got, Problem) and got.code == "exporter-too-large", got
    assert time.monotonic() - t0 < 1.5


def test_an_endless_fast_body_stops_at_the_byte_cap(peer: Callable[[Handler], str]) -> None:
    def handler(_req: bytes, c: socket.socket) -> None:
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"# " + b"x" * 65534 + b"\n"
        for _ in range(10_000):
            c.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    with deadline_client() as client:
        got = scrape(client, peer(handler), 5.0)
    assert isinstance(got, Problem) and got.code == "exporter-too-large", got
    assert str(MAX_BYTES) in got.text


async def test_a_host_clock_that_steps_is_named_and_samples_stay_on_the_run(
    tmp_path: Path, peer: Callable[[Handler], str]
) -> None:
    # before: the offset stayed that of the first scrapes, so after the host's clock
    # jumped an hour every sample was placed an hour late, with rates over 3600 s
    served = [0]

    def handler(_req: bytes, c: socket.socket) -> None:
        served[0] += 1
        n = served[0]
        body = _valid(n, time.time() + (3600.0 if n >= 5 else 0.0))
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    url = peer(handler)
    host = HostTarget("jumpy", exporter=url, address="127.0.0.1", ssh={"port": 9})
    t0 = time.time()
    sampler = Sampler(tmp_path / "samples", [host], 0.2)
    await sample_for(sampler, 2.5)
    s = read_samples(tmp_path)
    assert served[0] >= 8
    assert "clock-step" in {w["code"] for w in s.warnings}, s.warnings
    assert s.hosts.height >= 6
    assert s.hosts["t"].min() >= t0 - 1 and s.hosts["t"].max() <= time.time() + 1  # type: ignore[operator]
    assert s.hosts["interval_s"].max() < 2.0  # type: ignore[operator]
    assert s.hosts["disk_read_bps"].drop_nulls().min() > 0  # type: ignore[operator]


async def test_a_counter_that_goes_back_is_marked_in_the_samples(
    tmp_path: Path, peer: Callable[[Handler], str]
) -> None:
    # before: the sample after a reboot silently had no CPU and no disk rate
    served = [0]

    def handler(_req: bytes, c: socket.socket) -> None:
        served[0] += 1
        n = served[0] + (1000 if served[0] < 4 else 0)  # a reboot at the 4th scrape
        body = _valid(n, time.time())
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    host = HostTarget("rebooted", exporter=peer(handler), address="127.0.0.1", ssh={"port": 9})
    sampler = Sampler(tmp_path / "samples", [host], 0.2)
    await sample_for(sampler, 2.0)
    records = (tmp_path / "samples" / "rebooted.jsonl").read_text().splitlines()
    reset = [r for r in records if '"counters_reset"' in r]
    assert len(reset) == 1 and "cpu_seconds" in reset[0] and "disk_read" in reset[0]
    warned = [w for w in read_samples(tmp_path).warnings if w["code"] == "counter-reset"]
    assert len(warned) == 1 and "went back (a reboot" in warned[0]["text"]


def test_hosts_check_reads_the_exporter_with_the_same_deadline(
    peer: Callable[[Handler], str],
) -> None:
    # before: urllib's timeout bounds each read only: `gridbench hosts check` hung
    from gridbench.hosts.check import EXPORTER_TIMEOUT_S, _exporter
    from gridbench.hosts.inventory import Host

    url = peer(_trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nnode_"))
    host = Host(name="slow", address="127.0.0.1", exporter=url)
    step = _bounded(lambda: _exporter(host), EXPORTER_TIMEOUT_S + 6)
    assert getattr(step, "ok", None) is False, step
    assert "did not answer in full" in str(getattr(step, "detail", "")), step


async def test_a_host_clock_that_runs_slow_does_not_scale_the_rates(
    tmp_path: Path, peer: Callable[[Handler], str]
) -> None:
    # before: the interval was the host's own (a tenth of the real one here), so every
    # rate came out ten times too high
    served, t0 = [0], time.time()

    def handler(_req: bytes, c: socket.socket) -> None:
        served[0] += 1
        body = _valid(served[0], t0 + (time.time() - t0) / 10)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    host = HostTarget("slow-clock", exporter=peer(handler), address="127.0.0.1", ssh={"port": 9})
    await sample_for(Sampler(tmp_path / "samples", [host], 0.2), 2.0)
    s = read_samples(tmp_path)
    assert s.hosts.height >= 5
    rates = s.hosts["disk_read_bps"].drop_nulls()  # 4096 bytes a scrape, one every ~0.2 s
    assert rates.len() >= 5 and rates.median() < 4096 / 0.2 * 2, rates.to_list()  # type: ignore[operator]
    assert s.hosts["interval_s"].min() > 0.05  # type: ignore[operator]
