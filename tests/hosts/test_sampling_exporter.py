"""node_exporter's text → counters → rates, on the output of a real prometheus-node-exporter
started on loopback; foreign text that is not Prometheus text is a named warning."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.exporter import MAX_BYTES, parse_exporter, scrape, scrape_url
from gridbench.hosts.sampling.figures import Counters, Figures, Problem, rates
from gridbench.hosts.sampling.sampler import HostTarget, Sampler
from sampling_fixtures import Exporter, exporter  # noqa: F401


def _text(url: str) -> str:
    return httpx.get(scrape_url(url), timeout=5, trust_env=False).text


def test_real_output_parses_to_the_host_s_counters(exporter: Exporter) -> None:  # noqa: F811
    text = httpx.get(exporter.url, timeout=5, trust_env=False).text  # the full page too
    for page in (text, _text(exporter.url)):
        c = parse_exporter(page)
        assert isinstance(c, Counters), c
        assert c.ncpu == os.cpu_count()
        assert {"user", "system", "idle"} <= set(c.cpu_seconds)
        assert c.mem_total and c.mem_available and 0 < c.mem_available <= c.mem_total
        assert c.load1 is not None and c.load1 >= 0
        assert c.disk_read is not None and c.net_rx is not None
        assert c.host_t is not None and abs(c.host_t - time.time()) < 5


def test_two_real_scrapes_give_rates(exporter: Exporter) -> None:  # noqa: F811
    a = parse_exporter(_text(exporter.url))
    time.sleep(0.5)
    b = parse_exporter(_text(exporter.url))
    assert isinstance(a, Counters) and isinstance(b, Counters)
    f = rates(a, b)
    assert isinstance(f, Figures), f
    assert 0.3 < f.interval_s < 2.0
    assert sum(f.cpu.values()) == pytest.approx(100.0, abs=0.01)
    assert f.cpu_busy is not None and 0.0 <= f.cpu_busy <= 100.0
    assert f.mem_used is not None and f.mem_used > 0
    assert f.disk_write_bps is not None and f.disk_write_bps >= 0
    assert f.net_rx_bps is not None and f.net_rx_bps >= 0


def test_scrape_is_timed_on_the_controller_and_the_host(exporter: Exporter) -> None:  # noqa: F811
    with httpx.Client(trust_env=False) as client:
        got = scrape(client, exporter.url, 5.0)
    assert not isinstance(got, Problem), got
    assert got.t_sent <= got.t <= got.t_received
    assert got.counters.host_t is not None
    assert abs(got.counters.host_t - got.t) < (got.t_received - got.t_sent) / 2 + 0.005


def _counters(t: float, user: float, idle: float, **kw: float) -> Counters:
    return Counters(cpu_seconds={"user": user, "idle": idle, "iowait": 0.0}, ncpu=2, host_t=t, **kw)


def test_rates_arithmetic() -> None:
    a = _counters(
        100.0,
        10.0,
        90.0,
        mem_total=1000.0,
        mem_available=400.0,
        disk_read=0.0,
        disk_written=50.0,
        net_rx=1000.0,
        net_tx=0.0,
        load1=0.5,
    )
    b = _counters(
        102.0,
        13.0,
        91.0,
        mem_total=1000.0,
        mem_available=300.0,
        disk_read=4096.0,
        disk_written=40.0,
        net_rx=3000.0,
        net_tx=10.0,
        load1=1.5,
    )
    f = rates(a, b)
    assert isinstance(f, Figures)
    assert f.interval_s == 2.0
    assert f.cpu["user"] == pytest.approx(75.0) and f.cpu_busy == pytest.approx(75.0)
    assert f.mem_used == 700.0 and f.load1 == 1.5
    assert f.disk_read_bps == 2048.0
    assert f.disk_write_bps is None  # a counter that went back (a reboot) gives no rate
    assert f.net_rx_bps == 1000.0 and f.net_tx_bps == 5.0
    assert isinstance(rates(a, a), Problem)  # no time between them


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('node_cpu_seconds_total{cpu="0",mode="idle" 12\n', "exporter-malformed"),
        ('node_cpu_seconds_total{cpu="0",mode="idle"} twelve\n', "exporter-malformed"),
        ("<html><body>502 Bad Gateway</body></html>\n", "exporter-incomplete"),
        ("node_load1 0.5\n", "exporter-incomplete"),
        ("", "exporter-incomplete"),
        ("\x00\xff" * 100, "exporter-incomplete"),
        ("x" * (MAX_BYTES + 1), "exporter-too-large"),
    ],
)
def test_malformed_text_is_a_named_warning(text: str, code: str) -> None:
    got = parse_exporter(text)
    assert isinstance(got, Problem)
    assert got.code == code


class _Garbage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'node_cpu_seconds_total{cpu="0",mode="idle" oops\n'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/metrics"
    finally:
        srv.shutdown()
        srv.server_close()


async def test_a_malformed_exporter_is_a_warning_record(
    tmp_path: Path, garbage_server: str
) -> None:
    # no SSH either (a closed port): the host is named as giving nothing
    sampler = Sampler(
        tmp_path / "samples",
        [
            HostTarget(
                "bad",
                exporter=garbage_server,
                address="127.0.0.1",
                ssh={"port": 1, "known_hosts": None},
            )
        ],
        interval=0.2,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(sampler.run(stop))
    await asyncio.sleep(4.0)
    stop.set()
    await asyncio.wait_for(task, 10)
    s = read_samples(tmp_path)
    codes = {w["code"] for w in s.warnings}
    assert "exporter-malformed" in codes
    assert "nothing-sampled" in codes
    assert s.hosts.is_empty()
