"""Per-pattern summaries of checked net records (:mod:`gridbench.messaging.intake`), as
``gridbench.net/1`` holds them. Pure functions; the floor comparison is
:mod:`gridbench.messaging.floors`.

Ping-pong, per size, the seed's formulas (METHODS 3.1): with the T·M round trips of a size
pooled, ``total_ms`` is their sum, ``rtt_ms.mean`` = total / (T·M), ``rtt_ms.sd`` the
sample standard deviation of the round trips, ``sd_pct`` = sd / mean · 100, one-way
≈ RTT / 2, speed = 2·s / RTT in MB/s (10^6 bytes/s, s in bytes, RTT the mean): 1 KiB at
1.172 ms is 1.747 MB/s.

Echo, per series length: ``mean_ms`` and ``sd_ms`` of the per-call latencies pooled over
the repetitions (the seed's average and spread), p50/p99 from the HDR histogram, and
``total_ms``, the series' wall time (sum of its calls) as mean and sd across repetitions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.growth import fit_growth
from gridbench.messaging.floors import (
    floor_path,
    iperf3_speed,
    is_overhead,
    pingpong_floor,
    sockperf_rtt,
)
from gridbench.messaging.hdr import describe_ms, spread

Record = Mapping[str, Any]
#: Most points kept of a burst's completion timeline.
TIMELINE_POINTS = 500
#: Echo configs that cross the environment's network (``inprocess`` does not: no floor).
NETWORK_CONFIGS = ("network", "tls")


def speed_mb_s(size_bytes: int, rtt_ms: float | None) -> float | None:
    """Ping-pong speed: 2·s / RTT in MB/s (10^6 bytes/s); None without an RTT."""
    if rtt_ms is None or rtt_ms <= 0:
        return None
    return 2.0 * size_bytes / (rtt_ms / 1e3) / 1e6


def _groups(
    records: Sequence[Record], key: Callable[[Record], tuple[Any, ...]]
) -> dict[Any, list[Record]]:
    out: dict[Any, list[Record]] = defaultdict(list)
    for r in records:
        out[key(r)].append(r)
    return out


def _errors(rs: Sequence[Record]) -> list[str]:
    return list(dict.fromkeys(str(r.get("error") or "failed") for r in rs if not r.get("ok")))


def _reps(rs: Sequence[Record], ok: Sequence[Record]) -> dict[str, Any]:
    """Of repetitions ``rs``: how many succeeded (``ok``) and failed, and the failures'
    errors, each once."""
    return {"reps": len(ok), "failed_reps": len(rs) - len(ok), "errors": _errors(rs)}


def _ns(rs: Sequence[Record], field: str) -> list[int]:
    return [int(v) for r in rs if r.get("ok") for v in r[field]]


def _by_series(records: Sequence[Record]) -> dict[Any, list[Record]]:
    """Records by echo series: (transport, env, config)."""
    return _groups(records, lambda r: (str(r["transport"]), str(r["env"]), str(r["config"])))


def _latencies(rs: Sequence[Record]) -> tuple[dict[str, Any], list[Record]]:
    """The latency figures of repetitions of echo calls (one series length, or one client
    count), calls pooled: ``reps`` (those that succeeded), ``failed_reps``, ``errors``,
    ``n`` (calls), ``mean_ms``, ``sd_ms``, ``p50_ms``, ``p99_ms`` and ``rep_means_ms``
    (each repetition's mean); with the repetitions that succeeded."""
    lat = _ns(rs, "lat_ns")
    st = describe_ms(lat)
    ok = [r for r in rs if r.get("ok") and r["lat_ns"]]
    return {
        **_reps(rs, ok),
        "n": len(lat),
        "mean_ms": st["mean"],
        "sd_ms": st["sd"],
        "p50_ms": st["p50"],
        "p99_ms": st["p99"],
        "rep_means_ms": [float(np.mean(r["lat_ns"])) / 1e6 for r in ok],
    }, ok


def pingpong(
    records: Sequence[Record], floor: Sequence[Mapping[str, Any]], factor: float
) -> list[dict[str, Any]]:
    """Series per (transport, env), one row per size (see the module docstring)."""
    series = _groups(records, lambda r: (str(r["transport"]), str(r["env"])))
    out = []
    for (transport, env), rs in series.items():
        rows = []
        for size, srs in sorted(_groups(rs, lambda r: (int(r["size_bytes"]),)).items()):
            rtts = _ns(srs, "rtt_ns")
            stats = describe_ms(rtts)
            speed = speed_mb_s(size[0], stats["mean"])
            fl = pingpong_floor(floor, env, size[0], stats["median"], speed)
            # a figure on another path than its floor's is not compared with it
            under = floor_path(floor, env)
            path = next((str(r["path"]) for r in srs if "path" in r), under)
            void = None
            if fl is not None and path != under:
                void = f"measured on the {path}, its floor on the {under}"
                fl = None
            ok = [r for r in srs if r.get("ok") and r["rtt_ns"]]
            rows.append(
                {
                    "size_bytes": size[0],
                    "size_kib": size[0] / 1024,
                    "tests": len(srs),
                    "failed_tests": sum(1 for r in srs if not r.get("ok")),
                    "errors": _errors(srs),
                    "round_trips": len(rtts),
                    "total_ms": sum(rtts) / 1e6,
                    "rtt_ms": stats,
                    "speed_mb_s": speed,
                    "one_way_ms": stats["mean"] / 2 if stats["mean"] is not None else None,
                    "test_means_ms": [float(np.mean(r["rtt_ns"])) / 1e6 for r in ok],
                    "floor": fl,
                    "overhead": is_overhead(fl["ratio"] if fl else None, factor),
                    **({"floor_void": void} if void else {}),
                }
            )
        out.append({"transport": transport, "env": env, "rows": rows})
    return out


def _echo_floor(
    floor: Sequence[Mapping[str, Any]],
    env: str,
    config: str,
    payload: int,
    median_ms: float | None,
    factor: float,
) -> tuple[dict[str, Any] | None, bool]:
    if config not in NETWORK_CONFIGS:
        return None, False
    sp = sockperf_rtt(floor, env, payload, at_least=True)
    if sp is None:
        return None, False
    ratio = median_ms / sp[1] if median_ms is not None and sp[1] > 0 else None
    return (
        {
            "tool": "sockperf",
            "size_bytes": sp[0],
            "payload_bytes": payload,
            "value": sp[1],
            "ratio": ratio,
        },
        is_overhead(ratio, factor),
    )


def echo(
    records: Sequence[Record], floor: Sequence[Mapping[str, Any]], factor: float, payload: int
) -> list[dict[str, Any]]:
    """Series per (transport, env, config), one row per series length; the series' floor
    is sockperf at the payload size (or the next measured size up), in network configs."""
    out = []
    for (transport, env, config), rs in _by_series(records).items():
        rows = []
        for (calls,), crs in sorted(_groups(rs, lambda r: (int(r["calls"]),)).items()):
            figures, ok = _latencies(crs)
            total = spread([sum(r["lat_ns"]) / 1e6 for r in ok])
            rows.append({"calls": calls, **figures, "total_ms": total})
        all_lat = _ns(rs, "lat_ns")
        mean = float(np.mean(all_lat)) / 1e6 if all_lat else None
        median = float(np.median(all_lat)) / 1e6 if all_lat else None
        fl, over = _echo_floor(floor, env, config, payload, median, factor)
        out.append(
            {
                "transport": transport,
                "env": env,
                "config": config,
                "mean_ms": mean,
                "p50_ms": median,
                "rows": rows,
                "floor": fl,
                "overhead": over,
            }
        )
    return out


def echo_scaling(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per (transport, env, config): latency against the number of concurrent clients,
    and the growth curve of the mean (:func:`gridbench.growth.fit_growth`)."""
    out = []
    for (transport, env, config), rs in _by_series(records).items():
        points = []
        for (clients,), crs in sorted(_groups(rs, lambda r: (int(r["clients"]),)).items()):
            figures, ok = _latencies(crs)
            mean = figures["mean_ms"]
            client_means = [v / 1e6 for r in ok for v in r.get("client_mean_ns") or []]
            hosts = max((int(r.get("hosts") or 1) for r in crs), default=1)
            points.append(
                {
                    "clients": clients,
                    "hosts": hosts,
                    "total_clients": clients * hosts,
                    # a closed loop keeps one call per client in flight: X = N / R
                    "throughput_per_s": clients * hosts / (mean / 1e3) if mean else None,
                    **_placed(crs),
                    **figures,
                    "client_sd_ms": spread(client_means)["sd"],
                }
            )
        good = [p for p in points if p["mean_ms"] is not None]
        fit = fit_growth(
            [p["clients"] for p in good],
            [p["mean_ms"] for p in good],
            quantity="mean latency",
            unit="ms",
        )
        if fit is not None:
            fit = {k: v for k, v in fit.items() if k != "candidates"}
        out.append(
            {
                "transport": transport,
                "env": env,
                "config": config,
                "points": points,
                "fit": fit,
                "saturation": saturation(good),
            }
        )
    return out


def _placed(records: Sequence[Record]) -> dict[str, Any]:
    """Co-hosted and remote clients' latency apart (the DIXI layout), when recorded."""
    if not any("cohosted_lat_ns" in r for r in records):
        return {}
    out: dict[str, Any] = {}
    for place in ("cohosted", "remote"):
        st = describe_ms(_ns(records, f"{place}_lat_ns"))
        out[f"{place}_mean_ms"], out[f"{place}_sd_ms"] = st["mean"], st["sd"]
    return out


#: throughput that grows by less than this share from one client count to the next has
#: stopped growing: the service is saturated
SATURATION_GAIN = 0.10


def saturation(points: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Where adding clients stopped adding throughput: the first client count whose
    successor raises throughput by less than SATURATION_GAIN (while latency grows), or
    None with fewer than 2 points. ``saturated`` is False when it still grew at the last."""
    pts = [p for p in points if p.get("throughput_per_s")]
    if len(pts) < 2:
        return None
    x = np.array([p["throughput_per_s"] for p in pts], dtype=np.float64)
    gain = x[1:] / x[:-1] - 1.0
    flat = np.flatnonzero(gain < SATURATION_GAIN)
    if flat.size == 0:
        last = pts[-1]
        return {
            "saturated": False,
            "total_clients": last["total_clients"],
            "throughput_per_s": last["throughput_per_s"],
            "statement": f"not saturated up to {last['total_clients']} clients "
            f"({last['throughput_per_s']:.0f} calls/s, still growing)",
        }
    at = pts[int(flat[0])]
    peak = float(x.max())
    return {
        "saturated": True,
        "total_clients": at["total_clients"],
        "throughput_per_s": at["throughput_per_s"],
        "statement": f"saturated at {at['total_clients']} clients: "
        f"{at['throughput_per_s']:.0f} calls/s, more clients add less than "
        f"{SATURATION_GAIN:.0%} (peak {peak:.0f} calls/s); latency grows instead",
    }


def _timeline(arrival_ns: Sequence[int]) -> dict[str, list[float]]:
    t = np.sort(np.asarray(arrival_ns, dtype=np.float64)) / 1e6
    done = np.arange(1, t.size + 1)
    if t.size > TIMELINE_POINTS:  # keep the last arrival: the burst's end
        idx = np.unique(np.linspace(0, t.size - 1, TIMELINE_POINTS).astype(int))
        t, done = t[idx], done[idx]
    return {"t_ms": t.tolist(), "completed": [int(x) for x in done]}


def burst(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per (transport, env): time to enqueue all calls, to the first response, the gaps
    between successive responses (pooled over repetitions) and the completion timeline
    of the first good repetition (at most :data:`TIMELINE_POINTS` points)."""
    out = []
    for (transport, env), rs in _groups(
        records, lambda r: (str(r["transport"]), str(r["env"]))
    ).items():
        ok = [r for r in rs if r.get("ok")]
        gaps = [
            int(g)
            for r in ok
            for g in np.diff(np.sort(np.asarray(r["arrival_ns"], dtype=np.int64)))
        ]
        g = describe_ms(gaps)
        calls = max((int(r["calls"]) for r in rs), default=0)
        cpu = [r["enqueue_cpu_ns"] / 1e6 for r in ok if r.get("enqueue_cpu_ns") is not None]
        out.append(
            {
                "transport": transport,
                "env": env,
                "calls": calls,
                **_reps(rs, ok),
                "responses_min": min((len(r["arrival_ns"]) for r in ok), default=None),
                "enqueue_ms": spread([r["enqueue_ns"] / 1e6 for r in ok]),
                "rep_enqueue_ms": [r["enqueue_ns"] / 1e6 for r in ok],
                # CPU time of the enqueuing thread; records of older runs have none
                "enqueue_cpu_ms": spread(cpu),
                "rep_enqueue_cpu_ms": cpu,
                "rep_first_ms": [r["first_ns"] / 1e6 for r in ok],
                "first_ms": spread([r["first_ns"] / 1e6 for r in ok]),
                "total_ms": spread([max(r["arrival_ns"]) / 1e6 for r in ok if r["arrival_ns"]]),
                "gap_ms": {
                    "p50": g["p50"],
                    "p90": g["p90"],
                    "p99": g["p99"],
                    "max": g["max"],
                    "n": len(gaps),
                },
                "timeline": _timeline(ok[0]["arrival_ns"]) if ok else {"t_ms": [], "completed": []},
            }
        )
    return out


def transfer(
    records: Sequence[Record], floor: Sequence[Mapping[str, Any]], factor: float
) -> list[dict[str, Any]]:
    """Per (tool, env, direction, streams, bytes): MB/s across repetitions, set against
    iperf3 in the same direction with the same stream count (floors.iperf3_speed)."""
    out = []
    groups = _groups(
        records,
        lambda r: (
            str(r["tool"]),
            str(r["env"]),
            str(r["direction"]),
            int(r["streams"]),
            int(r["bytes"]),
        ),
    )
    for (tool, env, direction, streams, size), rs in groups.items():
        ok = [r for r in rs if r.get("ok") and r["elapsed_ns"] > 0]
        speeds = [size / (r["elapsed_ns"] / 1e9) / 1e6 for r in ok]
        mb = spread(speeds)
        fl = iperf3_speed(floor, env, streams, direction)
        ratio = fl[1] / mb["mean"] if fl is not None and mb["mean"] else None
        out.append(
            {
                "tool": tool,
                "env": env,
                "direction": direction,
                "streams": streams,
                "bytes": size,
                **_reps(rs, ok),
                "mb_s": mb,
                "samples_mb_s": speeds,
                "floor": (
                    {"tool": "iperf3", "streams": fl[0], "value_mb_s": fl[1], "ratio": ratio}
                    if fl is not None
                    else None
                ),
                "overhead": is_overhead(ratio, factor),
            }
        )
    return out
