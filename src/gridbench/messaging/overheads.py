"""Every figure worse than the network's own floor by more than ``floor_factor``, found
automatically and stated in one sentence (the MUSCLE/WAN story: a 115 ms RTT where the
network gives 38 ms is flagged as a 3.0× overhead). Reads the pattern summaries of
:mod:`gridbench.messaging.summaries`; see :mod:`gridbench.messaging.floors` for the ratios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.units import format_size

#: How an environment reads in a sentence.
ENV_PHRASE = {
    "process": "in one process",
    "host": "between two processes on the host",
    "lan": "over the LAN",
    "relay": "over the relay",
    "remote": "between this host and another",
}


def env_phrase(env: str) -> str:
    """'over the relay', 'in one process' (an unknown name: 'in <name>')."""
    return ENV_PHRASE.get(env, f"in {env}")


def size_text(n: int) -> str:
    """'1 KiB', '64 B', '1.5 MiB' (binary units, as the sizes are chosen)."""
    if n < 1024:
        return f"{n} B"
    s = format_size(n)
    return f"{s[:-1]} {s[-1].upper()}iB"


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _pingpong(s: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    fl = row["floor"]
    who = f"{s['transport']} {env_phrase(str(s['env']))}"
    size = size_text(int(row["size_bytes"]))
    if fl["figure"] == "rtt_ms":
        value = row["rtt_ms"]["median"]
        at = fl.get("size_bytes")
        tool = "sockperf" if at in (None, row["size_bytes"]) else f"sockperf at {size_text(at)}"
        text = (
            f"{who}: median RTT {_num(value)} ms at {size} is {fl['ratio']:.1f}× the network's "
            f"{_num(fl['value'])} ms ({tool})"
        )
        figure = "rtt_ms.median"
    else:
        value = row["speed_mb_s"]
        text = (
            f"{who}: {_num(value)} MB/s at {size} is {fl['ratio']:.1f}× below the network's "
            f"{_num(fl['value'])} MB/s (iperf3, one stream)"
        )
        figure = "speed_mb_s"
    return {
        "pattern": "pingpong",
        "transport": s["transport"],
        "env": s["env"],
        "size_bytes": row["size_bytes"],
        "figure": figure,
        "value": value,
        "floor": fl["value"],
        "tool": fl["tool"],
        "ratio": fl["ratio"],
        "statement": text,
    }


def _echo(s: Mapping[str, Any]) -> dict[str, Any]:
    fl = s["floor"]
    text = (
        f"{s['transport']} echo ({s['config']}) {env_phrase(str(s['env']))}: "
        f"median {_num(s['p50_ms'])} ms per call is {fl['ratio']:.1f}× the network's "
        f"{_num(fl['value'])} ms (sockperf at {size_text(int(fl['size_bytes']))})"
    )
    return {
        "pattern": "echo",
        "transport": s["transport"],
        "env": s["env"],
        "config": s["config"],
        "size_bytes": fl["payload_bytes"],
        "figure": "p50_ms",
        "value": s["p50_ms"],
        "floor": fl["value"],
        "tool": "sockperf",
        "ratio": fl["ratio"],
        "statement": text,
    }


def _transfer(t: Mapping[str, Any]) -> dict[str, Any]:
    fl = t["floor"]
    mean = t["mb_s"]["mean"]
    text = (
        f"{t['tool']} {env_phrase(str(t['env']))} ({t['direction']}, {t['streams']} "
        f"stream{'s' if t['streams'] != 1 else ''}): {_num(mean)} MB/s is {fl['ratio']:.1f}× "
        f"below the network's {_num(fl['value_mb_s'])} MB/s (iperf3 -P {fl['streams']})"
    )
    return {
        "pattern": "transfer",
        "tool": t["tool"],
        "env": t["env"],
        "direction": t["direction"],
        "streams": t["streams"],
        "figure": "mb_s",
        "value": mean,
        "floor": fl["value_mb_s"],
        "ratio": fl["ratio"],
        "statement": text,
    }


def overheads(
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Every figure flagged ``overhead`` (ratio above the factor), worst ratio first."""
    out = [_pingpong(s, r) for s in pingpong for r in s["rows"] if r.get("overhead")]
    out += [_echo(s) for s in echo if s.get("overhead")]
    out += [_transfer(t) for t in transfer if t.get("overhead")]
    return sorted(out, key=lambda o: -float(o["ratio"]))
