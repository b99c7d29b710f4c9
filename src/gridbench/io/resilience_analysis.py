"""The resilience phase's records (``RUN/resilience.jsonl``) analysed: throughput and
write latency over time, what each fault did to them and how long until the throughput
and the volume were back, and the integrity check's verdict. Pure functions over the
records (foreign input: every field is checked, a bad one is left out, never trusted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from gridbench.io.resilience_model import TAKES_DOWN

#: Throughput counts as back when a bin reaches this share of the rate before the fault.
RECOVERED_SHARE = 0.8
#: The window before a fault whose mean rate is "before".
BEFORE_S = 5.0
#: A fault applied later than this after its planned time is flagged (fault_late).
LATE_S = 1.0

HOST_LOST = "host_lost"  # a client or writer host lost mid-run (clients_analysis too)
FAULT_LATE = "fault_late"
INTEGRITY_CACHED = "integrity_cached"

Rec = Mapping[str, Any]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _writes(records: Sequence[Rec]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Columns of the write records: start, end, bytes, ok."""
    rows = [
        (t0, t1, float(r["bytes"]), bool(r.get("ok")))
        for r in records
        if r.get("event") == "write"
        and (t0 := _num(r.get("t0"))) is not None
        and (t1 := _num(r.get("t1"))) is not None
        and isinstance(r.get("bytes"), int)
    ]
    if not rows:
        e = np.zeros(0)
        return e, e, e, np.zeros(0, dtype=bool)
    a = np.asarray([r[:3] for r in rows], dtype=float)
    return a[:, 0], a[:, 1], a[:, 2], np.asarray([r[3] for r in rows], dtype=bool)


def series(records: Sequence[Rec], interval: float, duration: float) -> dict[str, list[Any]]:
    """Per bin of ``interval`` s (by completion time): MiB/s of the writes that completed,
    their p50 and p99 latency (ms; None in an empty bin) and the failed writes."""
    t0, t1, size, ok = _writes(records)
    end = max(duration, float(t1.max()) if t1.size else 0.0)
    nbins = max(1, int(np.ceil(end / interval)))
    idx = np.minimum((t1 // interval).astype(int), nbins - 1) if t1.size else np.zeros(0, int)
    good = ok
    rate = np.bincount(idx[good], weights=size[good], minlength=nbins) / 2**20 / interval
    errors = np.bincount(idx[~good], minlength=nbins)
    lat = (t1 - t0) * 1000.0
    p50: list[float | None] = []
    p99: list[float | None] = []
    for b in range(nbins):
        sel = lat[(idx == b) & good]
        p50.append(float(np.percentile(sel, 50)) if sel.size else None)
        p99.append(float(np.percentile(sel, 99)) if sel.size else None)
    return {
        "t": [round(b * interval, 6) for b in range(nbins)],
        "mib_s": rate.tolist(),
        "p50_ms": p50,
        "p99_ms": p99,
        "errors": errors.tolist(),
    }


def fault_effect(s: Mapping[str, list[Any]], interval: float, t: float) -> dict[str, Any]:
    """Around one fault at ``t``: the mean rate in the ``BEFORE_S`` before it, the lowest
    bin after it, and the seconds until a bin reached ``RECOVERED_SHARE`` of before
    (None: never within the load)."""
    ts = np.asarray(s["t"], dtype=float)
    rate = np.asarray(s["mib_s"], dtype=float)
    before_sel = (ts + interval <= t) & (ts >= t - BEFORE_S)
    before = float(rate[before_sel].mean()) if before_sel.any() else None
    after = ts + interval > t
    lowest = float(rate[after].min()) if after.any() else None
    back: float | None = None
    if before is not None and before > 0:
        hits = np.nonzero(after & (ts >= t) & (rate >= RECOVERED_SHARE * before))[0]
        if hits.size:
            back = float(ts[hits[0]] + interval - t)
    p99 = [v for v, x in zip(s["p99_ms"], ts, strict=True) if x + interval > t and v is not None]
    return {
        "before_mib_s": before,
        "lowest_mib_s": lowest,
        "throughput_back_s": back,
        "worst_p99_ms": max(p99[: max(1, int(BEFORE_S / interval))], default=None),
    }


def summarise(records: Sequence[Rec]) -> dict[str, Any] | None:
    """``metrics["resilience"]``; None when the phase did not run."""
    start = next((r for r in records if r.get("event") == "start"), None)
    if start is None:
        return None
    interval = _num(start.get("interval")) or 0.5
    duration = _num(start.get("duration")) or 0.0
    s = series(records, interval, duration)
    _, _, size, ok = _writes(records)
    faults = []
    for r in records:
        if r.get("event") != "fault" or (t := _num(r.get("t"))) is None:
            continue
        f = {k: r.get(k) for k in ("action", "server", "address", "at", "t", "ok", "detail")}
        if r.get("action") in TAKES_DOWN:
            f.update(fault_effect(s, interval, t))
        faults.append(f)
    keys = ("cause", "since", "online_s", "healed_s", "ok", "detail")
    recoveries = [{k: r.get(k) for k in keys} for r in records if r.get("event") == "recovered"]
    integ = next((r for r in records if r.get("event") == "integrity"), None)
    integrity = (
        None
        if integ is None
        else {
            k: integ.get(k)
            for k in ("files", "bytes", "seconds", "mib_s", "bad", "bad_bytes", "ok", "read_after")
        }
    )
    stuck = [r for r in records if r.get("event") == "stuck"]
    cap = next((r for r in records if r.get("event") == "cap"), None)
    lost = [
        {k: r.get(k) for k in ("host", "t", "exit", "detail")}
        for r in records
        if r.get("event") == "host_lost" and isinstance(r.get("host"), str)
    ]
    written = float(size[ok].sum())
    return {
        "target": start.get("target"),
        "duration": duration,
        "writers": start.get("writers"),
        "file_size": start.get("file_size"),
        "interval": interval,
        "bricks": start.get("bricks") if isinstance(start.get("bricks"), list) else [],
        "writes": int(ok.sum()),
        "write_errors": int((~ok).sum()),
        "bytes_written": int(written),
        "mib_s": written / 2**20 / duration if duration else None,
        "series": s,
        "faults": faults,
        "recoveries": recoveries,
        "integrity": integrity,
        "stuck_writers": [w for r in stuck for w in r.get("writers") or []],
        "capped_s": _num(cap.get("t")) if cap else None,
        "hosts": by_host(records, start.get("hosts")),
        "hosts_lost": lost,
        "ok": _ok(integrity, recoveries, stuck),
    }


def by_host(records: Sequence[Rec], hosts: Any) -> list[dict[str, Any]]:
    """Per client host the writers ran on (``resilience.hosts``; none: the controller's
    own writers): files written and acknowledged, bytes, refused writes, MiB/s over its
    writes' span; in the spec's order."""
    if not isinstance(hosts, list) or not hosts:
        return []
    rows = [
        (str(r["host"]), int(r["bytes"]), bool(r.get("ok")), t0, t1)
        for r in records
        if r.get("event") == "write"
        and isinstance(r.get("host"), str)
        and isinstance(r.get("bytes"), int)
        and (t0 := _num(r.get("t0"))) is not None
        and (t1 := _num(r.get("t1"))) is not None
    ]
    df = pl.DataFrame(
        rows, schema=["host", "bytes", "ok", "t0", "t1"], orient="row"
    ) if rows else pl.DataFrame(schema={"host": pl.Utf8, "bytes": pl.Int64, "ok": pl.Boolean,
                                        "t0": pl.Float64, "t1": pl.Float64})  # fmt: skip
    agg = df.group_by("host").agg(
        writes=pl.col("ok").sum(),
        write_errors=(~pl.col("ok")).sum(),
        bytes_written=pl.col("bytes").filter(pl.col("ok")).sum(),
        span=pl.col("t1").max() - pl.col("t0").min(),
    )
    got = {r["host"]: r for r in agg.iter_rows(named=True)}
    out = []
    for h in hosts:
        g = got.get(h, {})
        span = g.get("span")
        done = int(g.get("bytes_written") or 0)
        out.append(
            {
                "host": h,
                "writes": int(g.get("writes") or 0),
                "write_errors": int(g.get("write_errors") or 0),
                "bytes_written": done,
                "mib_s": done / 2**20 / span if span else None,
            }
        )
    return out


def _ok(integrity: Mapping[str, Any] | None, recoveries: list[Any], stuck: list[Any]) -> bool:
    """A lost or corrupt byte, a check that never ran, a volume that never healed or a
    writer that never came back fails the phase."""
    return (
        integrity is not None
        and integrity.get("ok") is True
        and all(r.get("ok") is True for r in recoveries)
        and not stuck
    )


def validity_flags(res: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """fault_late: a fault applied over ``LATE_S`` after its time (the figures around it
    describe another moment); integrity_cached: the read-back could not drop the page
    cache, so it may have verified the client's cache rather than the servers."""
    if not res:
        return []
    flags = []
    for f in res.get("faults", []):
        at, t = _num(f.get("at")), _num(f.get("t"))
        if at is not None and t is not None and t - at > LATE_S:
            flags.append(
                {
                    "rule": FAULT_LATE,
                    "target": res.get("target"),
                    "test": f"{f.get('action')} {f.get('server')}",
                    "detail": f"applied at {t:.2f} s, planned for {at:g} s: the load or the "
                    "gluster command was slow; fewer writers or a longer schedule",
                }
            )
    for lost in res.get("hosts_lost") or []:
        flags.append(
            {
                "rule": HOST_LOST,
                "target": res.get("target"),
                "test": "resilience",
                "host": lost.get("host"),
                "detail": f"the resilience writers on {lost.get('host')} ended at "
                f"{_num(lost.get('t')) or 0.0:.1f} s before the load did: {lost.get('detail')}; "
                "the files they reported before are checked",
            }
        )
    integ = res.get("integrity")
    if isinstance(integ, Mapping) and integ.get("read_after") != "caches dropped":
        flags.append(
            {
                "rule": INTEGRITY_CACHED,
                "target": res.get("target"),
                "test": "integrity",
                "detail": "the page cache could not be dropped before the read-back (not "
                "root?): the check may have read the client's cache, not the servers",
            }
        )
    return flags
