"""The native floor of each environment (sockperf ping-pong RTT per size, iperf3 -J
throughput per stream count and direction), measured in the same run, and how a figure is
set against it.

- A ping-pong size is compared with sockperf's median RTT at the same size in the same
  environment (or the next size up sockperf measured: it refuses the smallest messages):
  ``ratio = our median RTT / floor median RTT``. Medians, because both sides are sampled
  on a shared machine: a few preempted round trips move a mean, not a median. A size
  above every sockperf size, from 64 KiB (where bandwidth, not latency, bounds a
  ping-pong), is compared with iperf3's single-stream speed (mean of both directions):
  ``ratio = floor speed / our speed``.
- An echo series (its median call latency) is compared with sockperf's median RTT at the
  smallest measured size at or above its payload (the size used is stated).
- A transfer is compared with iperf3 in the same direction: single-stream tools with
  ``-P 1``, multi-stream ones with ``-P N`` for their N (else the nearest multi-stream
  figure, stated): ``ratio = floor MB/s / our MB/s``.

Either way a ratio above ``floor_factor`` (default 2) means the figure is that many times
worse than the network allows: an *overhead*. MB/s are 10^6 bytes per second.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.messaging.hdr import PERCENTILES

Record = Mapping[str, Any]
#: The smallest message set against bulk throughput: below it a ping-pong is bound by
#: latency, and its speed (2·s / RTT) says nothing about the link's bandwidth.
BULK_MIN = 64 * 1024


def _ms(ns: Any) -> float | None:
    return float(ns) / 1e6 if isinstance(ns, int | float) and not isinstance(ns, bool) else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def floor_summary(records: Sequence[Record], envs: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per environment: ``sockperf`` (per size: rtt_ms stats, samples, runs), ``iperf3``
    (per streams and direction: mb_s, seconds, runs) and ``failed`` (tool, what, error).
    Repeated measurements of the same figure are averaged."""
    sock: dict[str, dict[int, list[Record]]] = defaultdict(lambda: defaultdict(list))
    iperf: dict[str, dict[tuple[int, str], list[Record]]] = defaultdict(lambda: defaultdict(list))
    failed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    order = list(dict.fromkeys([*envs, *(str(r["env"]) for r in records)]))
    for r in records:
        env, tool = str(r["env"]), str(r["tool"])
        if not r.get("ok"):
            failed[env].append(
                {
                    "tool": tool,
                    "size_bytes": r.get("size_bytes"),
                    "streams": r.get("streams"),
                    "direction": r.get("direction"),
                    "error": str(r.get("error") or "failed (no reason recorded)"),
                }
            )
        elif tool == "sockperf":
            sock[env][int(r["size_bytes"])].append(r)
        else:
            iperf[env][(int(r["streams"]), str(r["direction"]))].append(r)
    out = []
    for env in order:
        if env not in sock and env not in iperf and env not in failed:
            continue
        sockperf = []
        for size, rs in sorted(sock[env].items()):
            stats: dict[str, float | None] = {}
            for key in ("mean", "min", "max", "p50", "p90", "p99", "p999"):
                vals = [v for v in (_ms(r["rtt_ns"].get(key)) for r in rs) if v is not None]
                stats[key] = _mean(vals)
            samples = sum(int(r.get("samples") or 0) for r in rs)
            for name, _, need in PERCENTILES:  # the few_samples policy, as for our own
                if 0 < samples < need:
                    stats[name] = None
            sockperf.append(
                {"size_bytes": size, "rtt_ms": stats, "samples": samples, "runs": len(rs)}
            )
        iperf3 = [
            {
                "streams": streams,
                "direction": direction,
                "mb_s": _mean([float(r["bits_per_second"]) / 8e6 for r in rs]),
                "seconds": _mean([float(r["seconds"]) for r in rs if "seconds" in r]),
                "runs": len(rs),
            }
            for (streams, direction), rs in sorted(iperf[env].items())
        ]
        path = next((str(r["path"]) for r in records if r["env"] == env and "path" in r), "direct")
        out.append(
            {
                "env": env,
                "path": path,
                "sockperf": sockperf,
                "iperf3": iperf3,
                "failed": failed[env],
            }
        )
    return out


def _env(floor: Sequence[Mapping[str, Any]], env: str) -> Mapping[str, Any]:
    return next((f for f in floor if f.get("env") == env), {})


def floor_path(floor: Sequence[Mapping[str, Any]], env: str) -> str:
    """The path the floor of ``env`` was measured on ("direct" unless it says)."""
    return str(_env(floor, env).get("path") or "direct")


def sockperf_rtt(
    floor: Sequence[Mapping[str, Any]], env: str, size: int, *, at_least: bool = False
) -> tuple[int, float] | None:
    """(size, median RTT ms) of sockperf in ``env`` at ``size``, or with ``at_least`` at
    the smallest measured size >= ``size``; None when there is none."""
    rows = [s for s in _env(floor, env).get("sockperf", []) if s["rtt_ms"].get("p50")]
    exact = [s for s in rows if s["size_bytes"] == size]
    if not exact and at_least:
        exact = sorted((s for s in rows if s["size_bytes"] >= size), key=lambda s: s["size_bytes"])
    if not exact:
        return None
    return int(exact[0]["size_bytes"]), float(exact[0]["rtt_ms"]["p50"])


def iperf3_speed(
    floor: Sequence[Mapping[str, Any]], env: str, streams: int, direction: str | None
) -> tuple[int, float] | None:
    """(streams, MB/s) of iperf3 in ``env``: at ``streams`` in ``direction`` (None: the
    mean of both directions); a multi-stream request with no exact match takes the
    nearest multi-stream figure. None when there is none."""
    rows = [
        i
        for i in _env(floor, env).get("iperf3", [])
        if i.get("mb_s") and (direction is None or i["direction"] == direction)
    ]
    exact = [i for i in rows if i["streams"] == streams]
    if not exact and streams > 1:
        multi = [i for i in rows if i["streams"] > 1]
        if multi:
            near = min(multi, key=lambda i: abs(int(i["streams"]) - streams))["streams"]
            exact = [i for i in multi if i["streams"] == near]
    if not exact:
        return None
    return int(exact[0]["streams"]), float(np.mean([float(i["mb_s"]) for i in exact]))


def pingpong_floor(
    floor: Sequence[Mapping[str, Any]],
    env: str,
    size: int,
    rtt_ms: float | None,
    speed: float | None,
) -> dict[str, Any] | None:
    """The floor of one ping-pong size: sockperf's RTT at that size, or at the next size
    up it measured (sockperf refuses the smallest sizes; a larger message is no faster);
    above every sockperf size and from :data:`BULK_MIN` bytes, iperf3's -P 1 speed."""
    sp = sockperf_rtt(floor, env, size, at_least=True)
    if sp is not None:
        ratio = rtt_ms / sp[1] if rtt_ms is not None and sp[1] > 0 else None
        return {
            "tool": "sockperf",
            "figure": "rtt_ms",
            "size_bytes": sp[0],
            "value": sp[1],
            "ratio": ratio,
        }
    ip = iperf3_speed(floor, env, 1, None) if size >= BULK_MIN else None
    if ip is not None:
        ratio = ip[1] / speed if speed else None
        return {"tool": "iperf3", "figure": "speed_mb_s", "value": ip[1], "ratio": ratio}
    return None


def is_overhead(ratio: float | None, factor: float) -> bool:
    """A ratio above the factor: the figure is that many times worse than the floor."""
    return ratio is not None and ratio > factor
