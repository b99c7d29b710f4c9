"""N concurrent HTTP clients analysed (``RUN/http_clients.jsonl``, foreign input: a bad
record is left out): per client count and direction, every client's rate, the aggregate
(all bytes moved ÷ from the first start to the last end, per repetition), the sum of the
clients' own rates, and for refused uploads the time until the refusal."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.stats import rep

Rec = Mapping[str, Any]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _valid(r: Rec) -> bool:
    return (
        r.get("op") in ("upload", "download")
        and isinstance(r.get("clients"), int)
        and isinstance(r.get("client"), int)
        and isinstance(r.get("bytes"), int)
        and all(_num(r.get(k)) is not None for k in ("t0", "t1"))
    )


def _rate(r: Rec) -> float | None:
    secs = float(r["t1"]) - float(r["t0"])
    return int(r["bytes"]) / 2**20 / secs if secs > 0 else None


def _group(clients: int, op: str, rs: list[Rec]) -> dict[str, Any]:
    moved = [r for r in rs if r.get("ok") is True]
    refused = [r for r in rs if r.get("refused") is True]
    per_client: dict[int, list[float | None]] = defaultdict(list)
    for r in moved:
        per_client[int(r["client"])].append(_rate(r))
    aggregate: list[float | None] = []
    summed: list[float | None] = []
    for k in sorted({int(r.get("rep") or 0) for r in moved}):
        mine = [r for r in moved if int(r.get("rep") or 0) == k]
        span = max(float(r["t1"]) for r in mine) - min(float(r["t0"]) for r in mine)
        total = sum(int(r["bytes"]) for r in mine)
        aggregate.append(total / 2**20 / span if span > 0 else None)
        summed.append(sum(x for r in mine if (x := _rate(r)) is not None))
    return {
        "clients": clients,
        "op": op,
        "transfers": len(rs),
        "per_client_mib_s": {str(c): rep(v)["mean"] for c, v in sorted(per_client.items())},
        "client_mib_s": rep([_rate(r) for r in moved]),
        "aggregate_mib_s": rep(aggregate),
        "sum_mib_s": rep(summed),
        "refused": len(refused),
        "refusal_s": rep([float(r["t1"]) - float(r["t0"]) for r in refused]),
        "statuses": sorted({str(r.get("status")) for r in rs}),
        "failed": [
            f"client {r.get('client')} rep {r.get('rep')}: {r.get('detail')}"
            for r in rs
            if r.get("ok") is not True and r.get("refused") is not True
        ],
    }


def summarise(records: Sequence[Rec]) -> list[dict[str, Any]]:
    """``metrics["http_clients"]``: one entry per (clients, op), in client order."""
    by: dict[tuple[int, str], list[Rec]] = defaultdict(list)
    for r in records:
        if _valid(r):
            by[(int(r["clients"]), str(r["op"]))].append(r)
    return [_group(n, op, rs) for (n, op), rs in sorted(by.items())]


def all_ok(groups: Sequence[Mapping[str, Any]]) -> bool | None:
    """False when a download came back different or a transfer failed (a refused upload
    is a measured answer, not a failure); None when the phase did not run."""
    if not groups:
        return None
    return not any(g.get("failed") for g in groups)
