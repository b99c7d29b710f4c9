"""UDP streams and request/response transactions (the seed's netperf-style tests, 000
§4.4.3), with the socket buffer size as a dimension.

- ``sockperf ping-pong`` (UDP, or TCP with ``--tcp``): one request answered before the
  next is sent, so its valid-duration ``ReceivedMessages / RunTime`` is the transactions
  per second (netperf's UDP_RR and TCP_RR), beside the median round trip; ``--buffer-size``
  sets both socket buffers (sockperf prints what the kernel gave).
- ``iperf3 -u -J -b RATE -l LEN``: a UDP stream at a target rate; the receiver's
  ``end.sum``: Mbit/s received, jitter (ms), datagrams lost (and the share); ``-w`` sets
  the socket buffers.

Each run is one record, pattern ``rr``, appended as it ends: ``{pattern: rr, env, tool
(sockperf|iperf3), proto (udp|tcp), buffer (bytes or null: the system's), ok, error, ...}``.
A run that fails is a record with its error, not a stop.
"""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench.errors import BackendError
from gridbench.messaging.environments import NetEnvironment, log_tail, stop_process
from gridbench.messaging.floor import START_TIMEOUT, parse_sockperf, require_tool
from gridbench.messaging.transports.base import Address

if TYPE_CHECKING:
    from gridbench.messaging.patterns import Context

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VALID = re.compile(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); "
                    r"ReceivedMessages=(\d+)")  # fmt: skip
_BUFFERS = re.compile(r"Socket buffers sizes of fd \d+: RX: (\d+) Byte, TX: (\d+) Byte")


def parse_transactions(text: str) -> dict[str, Any]:
    """Transactions per second, the round trip (ns, ``round_trip_ns``) and the buffers
    the kernel gave, from ``sockperf ping-pong --full-rtt`` output; BackendError when it
    has no summary."""
    text = _ANSI.sub("", text)
    m = _VALID.search(text)
    if m is None or float(m.group(1)) <= 0:
        raise BackendError("sockperf printed no valid-duration line", where="sockperf ping-pong")
    got = parse_sockperf(text)
    bufs = _BUFFERS.search(text)
    return {
        "tps": int(m.group(3)) / float(m.group(1)),
        "transactions": int(m.group(3)),
        "round_trip_ns": got["rtt_ns"],
        "rx_buffer": int(bufs.group(1)) if bufs else None,
        "tx_buffer": int(bufs.group(2)) if bufs else None,
    }


def parse_udp(text: str) -> dict[str, Any]:
    """Mbit/s received, jitter (ms) and loss from ``iperf3 -u -J`` (untrusted: checked)."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        raise BackendError(f"iperf3 -J printed no JSON: {text[:200]!r}", where="iperf3") from None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        raise BackendError(f"iperf3: {doc['error'][:300]}", where="iperf3 -u")
    end = doc.get("end") if isinstance(doc, dict) else None
    s = end.get("sum") if isinstance(end, dict) else None
    if not isinstance(s, dict):
        raise BackendError("iperf3 -u -J has no end.sum", where="iperf3 -u")
    out: dict[str, Any] = {}
    for key in ("bits_per_second", "jitter_ms", "lost_packets", "packets", "lost_percent"):
        v = s.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise BackendError(f"iperf3 -u end.sum.{key} is not a number >= 0", where="iperf3 -u")
        out[key] = float(v)
    return out


def _udp_bound(port: int, pid: int) -> bool:
    """Whether process ``pid``'s network namespace has a UDP socket bound to ``port``
    (from /proc, as the TCP servers' LISTEN state is read)."""
    for table in ("udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        if any(int(f.split()[1].rsplit(":", 1)[1], 16) == port for f in lines if f.split()):
            return True
    return False


def _start_udp(
    env: NetEnvironment, argv_for: Callable[[int], list[str]], role: str, log: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """A UDP server on a free port of the peer side, up once its socket is bound."""
    last = ""
    for _ in range(3):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        proc = env.spawn(argv_for(port), role, log)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            if _udp_bound(port, proc.pid):
                return proc, port
            time.sleep(0.02)
        last = f"exited ({proc.returncode})" if proc.poll() is not None else "never bound"
        stop_process(proc)
    raise BackendError(f"{role}: the UDP server {last}\n{log_tail(log)}", where=env.name)


def _measure(
    rec: dict[str, Any],
    argv: list[str],
    secs: int,
    timeout: float,
    parse: Callable[[str], dict[str, Any]],
    what: str,
) -> None:
    """Run ``argv`` (a ``secs``-second measurement), its figures into ``rec`` (``ok``), or
    why not into ``rec["error"]``: it overran by ``timeout``, or ``parse`` refused its
    output (a BackendError, said with the exit status)."""
    try:
        r = subprocess.run(argv, capture_output=True, timeout=secs + timeout, check=False)
    except subprocess.TimeoutExpired:
        rec["error"] = f"{what} took longer than {secs + timeout:g} s"
        return
    try:
        rec.update(parse((r.stdout + r.stderr).decode("utf-8", "replace")), ok=True)
    except BackendError as exc:
        rec["error"] = f"{exc.message} (exit status {r.returncode})"


def transactions(
    env: NetEnvironment,
    proto: str,
    size: int,
    buffers: Sequence[int | None],
    duration: float,
    workdir: Path,
    *,
    timeout: float,
) -> Iterator[dict[str, Any]]:
    """One sockperf ping-pong per buffer size against a sockperf server (UDP or TCP)."""
    exe = require_tool("sockperf")
    secs = max(1, math.ceil(duration))
    host, tcp = env.floor_host, ["--tcp"] if proto == "tcp" else []
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"rr-sockperf-{proto}-{env.name}.log"
    argv_for = lambda p: [exe, "server", *tcp, "-i", host, "-p", str(p)]  # noqa: E731
    if tcp:
        server, port = env.start_server(argv_for, "rr-sockperf-server", log)
    else:
        server, port = _start_udp(env, argv_for, "rr-sockperf-server", log)
    via = env.path(Address(host, port))
    try:
        for buf in buffers:
            rec: dict[str, Any] = {"pattern": "rr", "tool": "sockperf", "env": env.name,
                                   "proto": proto, "size_bytes": size, "buffer": buf,
                                   "ok": False, "error": None}  # fmt: skip
            if server.poll() is not None:
                rec["error"] = f"the sockperf server exited ({server.returncode})\n{log_tail(log)}"
                yield rec
                continue
            argv = [exe, "ping-pong", *tcp, "-i", via.host, "-p", str(via.port), "-m", str(size)]
            argv += ["-t", str(secs), "--full-rtt"]
            argv += ["--buffer-size", str(buf)] if buf is not None else []
            _measure(rec, argv, secs, timeout, parse_transactions, "sockperf ping-pong")
            yield rec
    finally:
        stop_process(server)


def udp_stream(
    env: NetEnvironment,
    bitrate: str,
    length: int,
    buf: int | None,
    duration: float,
    workdir: Path,
    *,
    timeout: float,
) -> dict[str, Any]:
    """One iperf3 UDP stream at ``bitrate`` of ``length``-byte datagrams."""
    exe = require_tool("iperf3")
    secs = max(1, math.ceil(duration))
    rec: dict[str, Any] = {"pattern": "rr", "tool": "iperf3", "env": env.name, "proto": "udp",
                           "bitrate": bitrate, "size_bytes": length, "buffer": buf,
                           "ok": False, "error": None}  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    tag = f"{env.name}-{buf or 'system'}"
    log = workdir / f"rr-iperf3-udp-{tag}.log"
    keep = ["--logfile", str(workdir / f"rr-iperf3-udp-{tag}.server.txt")]
    server, port = env.start_server(
        lambda p: [exe, "-s", "-1", "-p", str(p), "-B", env.floor_host,
                   *(keep if env.shares_files else [])],
        "rr-iperf3-server",
        log,
    )  # fmt: skip
    try:
        via = env.path(Address(env.floor_host, port))
        argv = [exe, "-c", via.host, "-p", str(via.port), "-u", "-J", "-t", str(secs)]
        argv += ["-b", bitrate, "-l", str(length)]
        argv += ["-w", str(buf)] if buf is not None else []
        _measure(rec, argv, secs, timeout, parse_udp, "iperf3 -u")
        return rec
    finally:
        stop_process(server)


def run_rr(ctx: Context, what: str) -> Iterator[dict[str, Any]]:
    """The runner's ``rr`` step ``what`` (``udp`` or ``tcp`` transactions, or ``stream``:
    iperf3's UDP stream), each buffer size a run."""
    spec, env = ctx.spec.rr, ctx.env
    if env.name == "remote":  # its peer's socket is on another host: nothing to read here
        tool = "sockperf" if what != "stream" else "iperf3"
        proto = "udp" if what == "stream" else what
        why = "rr runs on this machine's environments (host, lan)"
        yield {"pattern": "rr", "tool": tool, "env": env.name, "proto": proto,
               "buffer": None, "ok": False, "error": why}  # fmt: skip
        return
    bufs: list[int | None] = list(spec.buffers) or [None]
    if what in ("udp", "tcp"):
        yield from transactions(
            env, what, spec.size, bufs, spec.duration, ctx.work, timeout=ctx.timeout
        )
        return
    for buf in bufs:
        yield udp_stream(env, spec.udp_bitrate, spec.udp_length, buf, spec.duration,
                         ctx.work, timeout=ctx.timeout)  # fmt: skip


def _whole(r: Mapping[str, Any]) -> bool:
    def num(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)

    if r.get("tool") == "sockperf":
        rtt = r.get("round_trip_ns")
        return num(r.get("tps")) and isinstance(rtt, Mapping) and num(rtt.get("p50"))
    keys = ("bits_per_second", "jitter_ms", "lost_percent", "lost_packets", "packets")
    return all(num(r.get(k)) for k in keys) and isinstance(r.get("bitrate"), str)


def rr_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``metrics["rr"]``: ``transactions`` (per env, proto, size, buffer: tps, median
    RTT in ms, runs) and ``udp`` (per env, bitrate, size, buffer: Mbit/s, jitter ms, lost
    share), means over repeated runs; ``failed`` lists the runs that failed."""
    tx: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    udp: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    failed = []
    for r in records:
        if r.get("ok") and not _whole(r):  # foreign input: a record missing its figures
            r = {**r, "ok": False, "error": "the record lacks its figures"}
        if not r.get("ok"):
            failed.append({k: r.get(k) for k in ("env", "tool", "proto", "buffer", "error")})
        elif r.get("tool") == "sockperf":
            tx[(r["env"], r["proto"], r["size_bytes"], r.get("buffer"))].append(r)
        elif r.get("tool") == "iperf3":
            udp[(r["env"], r["bitrate"], r["size_bytes"], r.get("buffer"))].append(r)

    def mean(rs: Sequence[Mapping[str, Any]], f: Any) -> float:
        return float(sum(f(r) for r in rs)) / len(rs)

    return {
        "transactions": [
            {"env": e, "proto": p, "size_bytes": s, "buffer": b, "runs": len(rs),
             "tps": mean(rs, lambda r: r["tps"]),
             "rtt_p50_ms": mean(rs, lambda r: r["round_trip_ns"]["p50"] / 1e6),
             "rx_buffer": rs[-1].get("rx_buffer")}
            for (e, p, s, b), rs in tx.items()
        ],
        "udp": [
            {"env": e, "bitrate": rate, "size_bytes": s, "buffer": b, "runs": len(rs),
             "mbit_s": mean(rs, lambda r: r["bits_per_second"] / 1e6),
             "jitter_ms": mean(rs, lambda r: r["jitter_ms"]),
             "lost_share": mean(rs, lambda r: r["lost_percent"] / 100),
             "lost_packets": sum(int(r["lost_packets"]) for r in rs),
             "packets": sum(int(r["packets"]) for r in rs)}
            for (e, rate, s, b), rs in udp.items()
        ],
        "failed": failed,
    }  # fmt: skip
