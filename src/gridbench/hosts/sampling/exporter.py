"""node_exporter's ``/metrics`` as :class:`~gridbench.hosts.sampling.figures.Counters`.

:func:`parse_exporter` is pure: the Prometheus text (foreign input) is bounded, cut down to
the few families used, then parsed by ``prometheus_client.parser``; anything it cannot read
is a :class:`Problem` (``exporter-malformed``, ``exporter-incomplete``,
``exporter-too-large``), never a traceback. :func:`scrape` is the I/O at the edge: one GET
with a deadline and a byte cap, timed on the controller's clock.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families

from gridbench.hosts.sampling.deadline_http import deadline
from gridbench.hosts.sampling.figures import Counters, Problem

#: The most of an exporter's answer read (node_exporter gives about 60 KB in all).
MAX_BYTES = 2 * 1024 * 1024
#: The most series (lines) of the families read: 8 CPU modes of 2,000 CPUs and more; a
#: full 2 MiB of them would take the controller half a second to parse at every scrape
MAX_SERIES = 20_000
#: The collectors asked for (node_exporter's ``collect[]``): less for it to gather and send.
COLLECTORS = ("cpu", "loadavg", "meminfo", "diskstats", "netdev", "time")
_WANTED = (
    "node_cpu_seconds_total",
    "node_load1",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_disk_read_bytes_total",
    "node_disk_written_bytes_total",
    "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total",
    "node_time_seconds",
)
#: the types node_exporter gives its families (untyped: no # TYPE line)
_TYPES = frozenset({"counter", "gauge", "untyped", "unknown"})
_PREFIXES = tuple(_WANTED) + tuple(f"# TYPE {w} " for w in _WANTED)
#: the answer asked for as is: a compressed one could inflate past any bound
_IDENTITY = {"Accept-Encoding": "identity"}
#: interfaces left out of the host's network rates (traffic that never leaves it)
LOOPBACK_DEVICES = frozenset({"lo"})


def _keep(line: str) -> bool:
    if not line.startswith(_PREFIXES):
        return False
    if line.startswith("#"):
        return True
    name = line.split("{", 1)[0].split(" ", 1)[0]
    return name in _WANTED


def parse_exporter(text: str) -> Counters | Problem:
    """The counters in node_exporter's text (pure; foreign input)."""
    if len(text) > MAX_BYTES:
        return Problem(
            "exporter-too-large", f"the exporter's answer is over {MAX_BYTES} bytes: not read"
        )
    lines = [line for line in text.splitlines() if _keep(line)]
    if len(lines) > MAX_SERIES:
        return Problem(
            "exporter-too-large",
            f"the exporter's answer has over {MAX_SERIES} series of the families read: not "
            "read (parsing them would load the controller being measured)",
        )
    kept = "\n".join(lines)
    cpu: dict[str, float] = defaultdict(float)
    cpus: set[str] = set()
    sums: dict[str, float] = defaultdict(float)
    seen: set[str] = set()
    bad: set[str] = set()  # families with a value no counter or gauge of theirs can have
    series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    try:
        for fam in text_string_to_metric_families(kept + "\n"):
            if fam.type not in _TYPES and {fam.name, f"{fam.name}_total"} & set(_WANTED):
                return Problem(
                    "exporter-malformed",
                    f"the exporter's {fam.name[:64]} is a {fam.type}; node_exporter's is a "
                    "counter or a gauge: not read",
                )
            for s in fam.samples:
                if s.name not in _WANTED:
                    continue
                key = (s.name, tuple(sorted(s.labels.items())))
                if key in series:
                    return Problem(
                        "exporter-malformed",
                        f"the exporter's answer has the series {s.name}"
                        f"{str(dict(key[1]))[:120]} twice: not read",
                    )
                series.add(key)
                v = float(s.value)
                if not math.isfinite(v) or v < 0:
                    bad.add(s.name)
                    continue
                seen.add(s.name)
                if s.name == "node_cpu_seconds_total":
                    mode, which = s.labels.get("mode"), s.labels.get("cpu")
                    if mode is None or which is None or len(mode) > 32:
                        continue
                    cpu[mode] += v
                    cpus.add(which)
                elif s.name.startswith("node_network_"):
                    if s.labels.get("device") not in LOOPBACK_DEVICES:
                        sums[s.name] += v
                else:
                    sums[s.name] += v
    except Exception as exc:  # the parser raises many kinds on foreign text
        return Problem(
            "exporter-malformed",
            f"the exporter's answer is not Prometheus text ({type(exc).__name__}: "
            f"{str(exc)[:120]})",
        )
    if "node_cpu_seconds_total" in bad:
        return Problem(
            "exporter-malformed",
            "the exporter's node_cpu_seconds_total has a value that is not a finite, "
            "non-negative number: not read",
        )
    if not cpu or not cpus:
        return Problem(
            "exporter-incomplete",
            "the exporter's answer has no node_cpu_seconds_total: is it node_exporter, "
            "with its cpu collector on?",
        )

    def got(name: str) -> float | None:
        return sums[name] if name in seen and name not in bad else None

    return Counters(
        cpu_seconds=dict(cpu),
        ncpu=len(cpus),
        load1=got("node_load1"),
        mem_total=got("node_memory_MemTotal_bytes"),
        mem_available=got("node_memory_MemAvailable_bytes"),
        disk_read=got("node_disk_read_bytes_total"),
        disk_written=got("node_disk_written_bytes_total"),
        net_rx=got("node_network_receive_bytes_total"),
        net_tx=got("node_network_transmit_bytes_total"),
        host_t=got("node_time_seconds"),
        bad=tuple(sorted(bad)),
    )


@dataclass(frozen=True, slots=True)
class Scrape:
    """One answer: its counters and when it was asked and answered (controller clock)."""

    counters: Counters
    t_sent: float
    t_received: float

    @property
    def t(self) -> float:
        """The controller's time of the scrape: the middle of the round trip."""
        return (self.t_sent + self.t_received) / 2


def scrape_url(url: str) -> str:
    """``url`` with node_exporter's ``collect[]`` filter, unless it has a query already."""
    if urlsplit(url).query:
        return url
    return url + "?" + "&".join(f"collect[]={c}" for c in COLLECTORS)


def fetch(client: httpx.Client, url: str, timeout: float) -> str | Problem:
    """The text at ``url`` within ``timeout`` seconds in all (with a
    :func:`~gridbench.hosts.sampling.deadline_http.deadline_client`, however the exporter
    trickles) and :data:`MAX_BYTES`, never decompressed (blocking: the sampler calls it in
    a worker thread, where a plain client costs half an async one's CPU per request)."""
    try:
        with (
            deadline(timeout),
            client.stream("GET", url, timeout=timeout, headers=_IDENTITY) as resp,
        ):
            if resp.status_code != 200:
                return Problem(
                    "exporter-down", f"the exporter at {url} answered HTTP {resp.status_code}"
                )
            coding = resp.headers.get("content-encoding", "identity").strip().lower()
            if coding not in ("", "identity"):
                return Problem(
                    "exporter-malformed",
                    f"the exporter at {url} sent a compressed answer ({coding[:40]}) that "
                    "was not asked for: not read",
                )
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_BYTES:
                return _too_large(url)
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_raw():
                size += len(chunk)
                if size > MAX_BYTES:
                    return _too_large(url)
                chunks.append(chunk)
    except httpx.TimeoutException:
        return Problem(
            "exporter-down", f"the exporter at {url} did not answer in full in {timeout:g} s"
        )
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        return Problem("exporter-down", f"the exporter at {url} cannot be reached ({exc})")
    return b"".join(chunks).decode("utf-8", errors="replace")


def _too_large(url: str) -> Problem:
    return Problem(
        "exporter-too-large", f"the exporter at {url} sent over {MAX_BYTES} bytes: not read"
    )


def scrape(client: httpx.Client, url: str, timeout: float = 2.0) -> Scrape | Problem:
    """One scrape of node_exporter at ``url`` (its ``collect[]`` filter added), timed on
    the controller's clock around the request (blocking)."""
    try:
        asked = scrape_url(url)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket: no request can be made
        return Problem("exporter-down", f"the exporter's URL {url[:200]!r} is not a URL ({exc})")
    t0 = time.time()
    text = fetch(client, asked, timeout)
    t1 = time.time()
    if isinstance(text, Problem) and asked != url and "HTTP 400" in text.text:
        # an exporter that refuses the collect[] filter (a collector it lacks): ask for all
        t0 = time.time()
        text = fetch(client, url, timeout)
        t1 = time.time()
    if isinstance(text, Problem):
        return text
    parsed = parse_exporter(text)
    if isinstance(parsed, Problem):
        return Problem(parsed.code, f"{url}: {parsed.text}")
    return Scrape(parsed, t0, t1)
