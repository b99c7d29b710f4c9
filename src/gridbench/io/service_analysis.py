"""Service operations analysed (``RUN/service.jsonl``, foreign input: a bad record is
left out): per operation, size, client count and reuse mode the latency (ms: mean and
percentiles of the requests that succeeded) and the failures; per round (size, clients,
reuse) the throughput: requests and MiB moved per second from the first request's start
to the last one's end, over all the clients at once (throughput against sessions)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.stats import describe

Rec = Mapping[str, Any]
OPS = ("put", "get", "delete")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _valid(r: Rec) -> bool:
    return (
        r.get("op") in OPS
        and isinstance(r.get("size"), int)
        and isinstance(r.get("clients"), int)
        and isinstance(r.get("reuse"), bool)
        and _num(r.get("t0")) is not None
        and _num(r.get("t1")) is not None
    )


def _key(r: Rec) -> tuple[int, int, bool]:
    return int(r["size"]), int(r["clients"]), bool(r["reuse"])


def _op(op: str, key: tuple[int, int, bool], rs: list[Rec]) -> dict[str, Any]:
    ok = [r for r in rs if r.get("ok") is True]
    ms = np.array([(float(r["t1"]) - float(r["t0"])) * 1000 for r in ok], dtype=np.float64)
    size, clients, reuse = key
    return {
        "op": op,
        "size": size,
        "clients": clients,
        "reuse": reuse,
        "requests": len(rs),
        "failed": len(rs) - len(ok),
        "latency_ms": describe(ms),
        "failures": sorted({str(r.get("detail")) for r in rs if r.get("ok") is not True}),
    }


def _round(key: tuple[int, int, bool], rs: list[Rec]) -> dict[str, Any]:
    ok = [r for r in rs if r.get("ok") is True]
    span = max(float(r["t1"]) for r in rs) - min(float(r["t0"]) for r in rs)
    moved = sum(int(r["size"]) for r in ok if r["op"] in ("put", "get"))
    size, clients, reuse = key
    return {
        "size": size,
        "clients": clients,
        "reuse": reuse,
        "requests": len(rs),
        "failed": len(rs) - len(ok),
        "seconds": span,
        "requests_per_s": len(ok) / span if span > 0 else None,
        "mib_s": moved / 2**20 / span if span > 0 else None,
    }


def summarise(records: Sequence[Rec]) -> dict[str, Any] | None:
    """``metrics["service"]``: ``ops`` (one entry per op, size, clients, reuse) and
    ``rounds`` (one per size, clients, reuse), in that order; None when not run."""
    by_op: dict[tuple[str, tuple[int, int, bool]], list[Rec]] = defaultdict(list)
    by_round: dict[tuple[int, int, bool], list[Rec]] = defaultdict(list)
    for r in records:
        if _valid(r):
            by_op[(str(r["op"]), _key(r))].append(r)
            by_round[_key(r)].append(r)
    if not by_round:
        return None
    order = {op: i for i, op in enumerate(OPS)}
    ops = [
        _op(op, key, rs)
        for (op, key), rs in sorted(by_op.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
    ]
    return {"ops": ops, "rounds": [_round(k, rs) for k, rs in sorted(by_round.items())]}


def all_ok(service: Mapping[str, Any] | None) -> bool | None:
    """False when a request failed or a GET came back different; None when not run."""
    if not service:
        return None
    return not any(o.get("failed") for o in service.get("ops", []))


def reuse_effect(service: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per op, size and clients measured both ways: mean latency with a kept connection
    and with one per request, and their ratio (new ÷ kept)."""
    ops = (service or {}).get("ops", [])
    both: dict[tuple[str, int, int], dict[bool, float]] = defaultdict(dict)
    for o in ops:
        mean = o["latency_ms"].get("mean")
        if mean is not None:
            both[(o["op"], o["size"], o["clients"])][bool(o["reuse"])] = float(mean)
    out = []
    for (op, size, clients), m in both.items():
        if True in m and False in m and m[True] > 0:
            out.append(
                {
                    "op": op,
                    "size": size,
                    "clients": clients,
                    "kept_ms": m[True],
                    "new_ms": m[False],
                    "ratio": m[False] / m[True],
                }
            )
    return out
