"""The native floor, measured in the same run and environment as the figures it bounds.

- ``sockperf ping-pong --tcp --full-rtt``: the round-trip time per message size. sockperf
  reports half the RTT ("latency") unless ``--full-rtt`` is given; we give it, so every
  figure here is a full round trip. sockperf sends 14 to 65507 bytes; other sizes are
  recorded as ``ok: false`` with that reason. Its ``-t`` takes whole seconds: a duration
  is rounded up (at least 1 s), and sockperf spends the first 400 ms warming up.
- ``iperf3 -J``: TCP throughput with 1 or N streams, each direction (``-R``: the peer
  sends), from ``end.sum_received.bits_per_second``. ``-t`` is whole seconds too.

Servers run on the environment's peer side (``env.spawn``: inside the namespace for
``lan``) and listen on ``env.floor_host``; clients run here, without a shell, with
timeouts. Neither server prints a READY line: we wait until the port is in LISTEN state
in the server's own network namespace (``/proc/PID/net/tcp``), which does not use up
``iperf3 -s -1``'s single test the way a probe connection would.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from gridbench.errors import BackendError, GridbenchError
from gridbench.messaging.environments import NetEnvironment, log_tail, stop_process
from gridbench.messaging.transports.base import Address

SOCKPERF_MIN = 14
SOCKPERF_MAX = 65507
#: sockperf's percentile lines -> our keys
_PCT = {"50.000": "p50", "90.000": "p90", "99.000": "p99", "99.900": "p999"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUM = r"(-?\d+(?:\.\d+)?)"
_PACKAGES = {"sockperf": "sockperf", "iperf3": "iperf3", "socat": "socat"}
#: seconds a server may take to listen
START_TIMEOUT = 15.0


def require_tool(name: Literal["sockperf", "iperf3", "socat"]) -> str:
    """The path of a native tool; a GridbenchError naming the Debian package if missing."""
    path = shutil.which(name)
    if path is None:
        pkg = _PACKAGES[name]
        raise GridbenchError(
            f"{name} is not installed (needed for the native floor or the relay)",
            where="PATH",
            fix=f"apt-get install {pkg} (Debian package {pkg}), or set floor.{name}: false"
            if name != "socat"
            else f"apt-get install {pkg} (Debian package {pkg}), or relay.tool: gridbench",
        )
    return path


def parse_sockperf(text: str) -> dict[str, Any]:
    """RTT statistics (ns) and the sample count from ``sockperf ping-pong --full-rtt``
    output; BackendError when the summary is missing."""
    text = _ANSI.sub("", text)
    rtt: dict[str, int] = {}
    samples = 0
    for line in text.splitlines():
        if m := re.search(r"percentile (\d+\.\d+) =\s*" + _NUM, line):
            if m.group(1) in _PCT:
                rtt[_PCT[m.group(1)]] = round(float(m.group(2)) * 1000)
        elif m := re.search(r"<(MAX|MIN)> observation =\s*" + _NUM, line):
            rtt[m.group(1).lower()] = round(float(m.group(2)) * 1000)
        elif m := re.search(r"avg-rtt=" + _NUM, line):
            rtt["mean"] = round(float(m.group(1)) * 1000)
        elif m := re.search(r"Total (\d+) observations", line):
            samples = int(m.group(1))
    missing = {"mean", "min", "max", "p50", "p90", "p99", "p999"} - rtt.keys()
    if missing or samples <= 0:
        last = [ln for ln in text.splitlines() if ln.strip()][-3:]
        raise BackendError(
            "sockperf printed no round-trip summary"
            + (f" (missing {', '.join(sorted(missing))})" if missing else " (no samples)")
            + (": " + " | ".join(last) if last else ""),
            where="sockperf ping-pong",
        )
    return {"rtt_ns": rtt, "samples": samples}


def sockperf_floor(
    env: NetEnvironment, sizes: Sequence[int], duration: float, workdir: Path, *, timeout: float
) -> Iterator[dict[str, Any]]:
    """One sockperf ping-pong run per size against a sockperf server on the peer side;
    one floor record per size (RTT in ns, full round trips)."""
    exe = require_tool("sockperf")
    secs = max(1, math.ceil(duration))
    host = env.floor_host
    log = workdir / f"floor-sockperf-{env.name}.log"
    workdir.mkdir(parents=True, exist_ok=True)
    server, port = env.start_server(
        lambda p: [exe, "server", "--tcp", "-i", host, "-p", str(p)],
        "floor-sockperf-server",
        log,
    )
    via = env.path(Address(host, port))
    try:
        for size in sizes:
            rec: dict[str, Any] = {
                "pattern": "floor",
                "tool": "sockperf",
                "env": env.name,
                "path": env.path_name,
                "size_bytes": size,
                "ok": False,
                "error": None,
                "rtt_ns": None,
                "samples": 0,
            }
            if not SOCKPERF_MIN <= size <= SOCKPERF_MAX:
                rec["error"] = (
                    f"sockperf sends messages of {SOCKPERF_MIN} to {SOCKPERF_MAX} bytes only"
                )
                yield rec
                continue
            if server.poll() is not None:
                rec["error"] = f"the sockperf server exited ({server.returncode})\n{log_tail(log)}"
                yield rec
                continue
            argv = [exe, "ping-pong", "--tcp", "-i", via.host, "-p", str(via.port)]
            argv += ["-m", str(size), "-t", str(secs), "--full-rtt"]
            try:
                r = subprocess.run(argv, capture_output=True, timeout=secs + timeout, check=False)
            except subprocess.TimeoutExpired:
                rec["error"] = f"sockperf ping-pong took longer than {secs + timeout:g} s"
                yield rec
                continue
            out = (r.stdout + r.stderr).decode("utf-8", "replace")
            try:
                rec.update(parse_sockperf(out))
            except BackendError as exc:
                rec["error"] = f"{exc.message} (exit status {r.returncode})"
            else:
                rec["ok"] = True
            yield rec
    finally:
        stop_process(server)


def parse_iperf3(text: str) -> tuple[float, float]:
    """(bits per second, seconds) from ``iperf3 -J`` output (untrusted: checked)."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        raise BackendError(
            f"iperf3 -J printed no JSON: {text.strip()[:200]!r}", where="iperf3 client"
        ) from None
    if not isinstance(doc, dict):
        raise BackendError("iperf3 -J printed JSON that is not an object", where="iperf3 client")
    if isinstance(doc.get("error"), str):
        raise BackendError(f"iperf3: {doc['error'][:300]}", where="iperf3 client")
    end = doc.get("end")
    summed = end.get("sum_received") if isinstance(end, dict) else None
    if not isinstance(summed, dict):
        raise BackendError("iperf3 -J has no end.sum_received", where="iperf3 client")
    bps, secs = summed.get("bits_per_second"), summed.get("seconds")
    for key, v in (("bits_per_second", bps), ("seconds", secs)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise BackendError(
                f"iperf3 -J end.sum_received.{key} is not a number >= 0: {v!r}",
                where="iperf3 client",
            )
    return float(bps), float(secs)  # type: ignore[arg-type]


def iperf3_floor(
    env: NetEnvironment,
    streams: int,
    duration: float,
    workdir: Path,
    *,
    reverse: bool,
    timeout: float,
) -> dict[str, Any]:
    """One iperf3 run of ``streams`` parallel streams (``reverse``: the peer sends); the
    floor record, ``ok: false`` with the reason when the client fails."""
    exe = require_tool("iperf3")
    secs = max(1, math.ceil(duration))
    host = env.floor_host
    direction = "down" if reverse else "up"
    rec: dict[str, Any] = {
        "pattern": "floor",
        "tool": "iperf3",
        "env": env.name,
        "path": env.path_name,
        "streams": streams,
        "direction": direction,
        "bits_per_second": None,
        "seconds": None,
        "ok": False,
        "error": None,
    }
    workdir.mkdir(parents=True, exist_ok=True)
    tag = f"{env.name}-{streams}-{direction}"
    log = workdir / f"floor-iperf3-{tag}.log"
    # the server's interval report goes to a file: a full stdout pipe would stall it (a
    # host of its own has no such path: its output comes back into the log instead)
    out = workdir / f"floor-iperf3-{tag}.server.txt"
    keep = ["--logfile", str(out)] if env.shares_files else []
    server, port = env.start_server(
        lambda p: [exe, "-s", "-1", "-p", str(p), "-B", host, *keep],
        "floor-iperf3-server",
        log,
    )
    try:
        via = env.path(Address(host, port))
        argv = [exe, "-c", via.host, "-p", str(via.port), "-J", "-t", str(secs)]
        argv += ["-P", str(streams)]
        if reverse:
            argv.append("-R")
        try:
            r = subprocess.run(argv, capture_output=True, timeout=secs + timeout, check=False)
        except subprocess.TimeoutExpired:
            rec["error"] = f"iperf3 took longer than {secs + timeout:g} s"
            return rec
        try:
            rec["bits_per_second"], rec["seconds"] = parse_iperf3(
                r.stdout.decode("utf-8", "replace")
            )
        except BackendError as exc:
            rec["error"] = f"{exc.message} (exit status {r.returncode})"
        else:
            rec["ok"] = True
        return rec
    finally:
        stop_process(server)
