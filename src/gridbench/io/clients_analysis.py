"""The ``clients:`` phase analysed (``RUN/clients.jsonl``, foreign input: a bad line is
left out): ``metrics["clients"]``.

- ``series``: per (target, test, N) the aggregate over the N hosts, per repetition the
  bytes of all clients ÷ the slowest client's run time ("last done") and the sum of the
  clients' own rates, then mean ± sd over repetitions; each host's own kB/s; merged
  latency percentiles; the signed speedup against the baseline target's same (test, N);
  the scaling against the same target's smallest N (aggregate ÷ that aggregate).
- ``same_file``: the two clients reading one file, each host's kB/s and the aggregate.
- ``hosts``: each host alone, per (target, test): kB/s and latency, and its speedup
  against the first host (the client machines compared).
- ``lost``: the hosts lost mid-run, where and what fio said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from gridbench.io.analysis import merged_latency
from gridbench.io.resilience_analysis import HOST_LOST
from gridbench.stats import rep
from gridbench.thresholds import Scope, single

Rec = Mapping[str, Any]
_KEYS = ("target", "layout", "test", "clients", "host", "rep")


def _valid(r: Rec) -> bool:
    nums = ("kbps", "runtime_s", "bytes")
    return (
        "event" not in r
        and all(isinstance(r.get(k), str) for k in ("target", "layout", "test", "host"))
        and all(isinstance(r.get(k), int) for k in ("clients", "rep"))
        and all(isinstance(r.get(k), int | float) and not isinstance(r.get(k), bool) for k in nums)
    )


def _frame(records: Sequence[Rec]) -> tuple[pl.DataFrame, list[Rec]]:
    good = [r for r in records if _valid(r)]
    cols = {k: [r[k] for r in good] for k in _KEYS}
    cols |= {k: [float(r[k]) for r in good] for k in ("kbps", "runtime_s", "bytes")}
    schema: dict[str, Any] = {"clients": pl.Int64, "rep": pl.Int64, "kbps": pl.Float64}
    schema |= {"runtime_s": pl.Float64, "bytes": pl.Float64}
    schema |= {k: pl.Utf8 for k in ("target", "layout", "test", "host")}
    return pl.DataFrame(cols, schema=schema), good


def _speedup(value: float | None, base: float | None) -> float | None:
    return (value - base) / base if value is not None and base else None


def _aggregates(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per group and repetition: last-done and summed kB/s; then their lists per group."""
    per_rep = df.group_by([*by, "rep"]).agg(
        last_done=pl.col("bytes").sum() / 1024.0 / pl.col("runtime_s").max(),
        summed=pl.col("kbps").sum(),
        hosts=pl.col("host").sort(),
    )
    return per_rep.group_by(by).agg(pl.col("last_done"), pl.col("summed"), pl.col("hosts").first())


def _per_host(df: pl.DataFrame, by: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    means = df.group_by([*by, "host"]).agg(pl.col("kbps").mean()).sort("host")
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in means.iter_rows(named=True):
        out.setdefault(tuple(row[k] for k in by), {})[row["host"]] = row["kbps"]
    return out


def _entries(
    df: pl.DataFrame, good: Sequence[Rec], layout: str, baseline: str | None
) -> list[dict[str, Any]]:
    by = ["target", "test", "clients"]
    mine = df.filter(pl.col("layout") == layout)
    if mine.is_empty():
        return []
    hosts = _per_host(mine, by)
    out: list[dict[str, Any]] = []
    for g in _aggregates(mine, by).sort(by).iter_rows(named=True):
        key = (g["target"], g["test"], g["clients"])
        rows = [
            r
            for r in good
            if r["layout"] == layout and (r["target"], r["test"], r["clients"]) == key
        ]
        out.append(
            {
                "target": g["target"],
                "test": g["test"],
                "clients": g["clients"],
                "hosts": list(g["hosts"]),
                "last_done_kbps": rep(list(g["last_done"])),
                "sum_kbps": rep(list(g["summed"])),
                "per_client_kbps": hosts.get(key, {}),
                "lat_ms": merged_latency(rows),
            }
        )
    means = {(e["target"], e["test"], e["clients"]): e["last_done_kbps"]["mean"] for e in out}
    smallest = {(e["target"], e["test"]): e for e in sorted(out, key=lambda e: -e["clients"])}
    for e in out:
        base = means.get((baseline, e["test"], e["clients"])) if baseline else None
        e["speedup"] = (
            None if e["target"] == baseline else _speedup(e["last_done_kbps"]["mean"], base)
        )
        first = smallest[(e["target"], e["test"])]
        e["scaling"] = (
            e["last_done_kbps"]["mean"] / first["last_done_kbps"]["mean"]
            if e["last_done_kbps"]["mean"] and first["last_done_kbps"]["mean"]
            else None
        )
        e["scaling_from"] = first["clients"]
    return out


def _hosts(df: pl.DataFrame, good: Sequence[Rec], order: Sequence[str]) -> list[dict[str, Any]]:
    mine = df.filter(pl.col("layout") == "hosts")
    if mine.is_empty():
        return []
    per = mine.group_by(["target", "test", "host"]).agg(pl.col("kbps"))
    out = []
    for g in per.iter_rows(named=True):
        rows = [
            r
            for r in good
            if r["layout"] == "hosts"
            and (r["target"], r["test"], r["host"]) == (g["target"], g["test"], g["host"])
        ]
        out.append(
            {
                **{k: g[k] for k in ("target", "test", "host")},
                "kbps": rep(list(g["kbps"])),
                "lat_ms": merged_latency(rows),
            }
        )
    rank = {h: i for i, h in enumerate(order)}
    out.sort(key=lambda e: (e["target"], e["test"], rank.get(e["host"], len(rank))))
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for e in out:
        ref = first.setdefault((e["target"], e["test"]), e)
        e["reference"] = ref["host"]
        e["speedup"] = None if ref is e else _speedup(e["kbps"]["mean"], ref["kbps"]["mean"])
    return out


def summarise(
    records: Sequence[Rec], baseline: str | None, hosts: Sequence[str]
) -> dict[str, Any] | None:
    """``metrics["clients"]`` (None when the run had no clients phase)."""
    if not records:
        return None
    df, good = _frame(records)
    lost = [
        {k: r.get(k) for k in ("host", "target", "layout", "test", "clients", "rep", "detail")}
        for r in records
        if r.get("event") == "lost" and isinstance(r.get("host"), str)
    ]
    return {
        "hosts": list(hosts),
        "series": _entries(df, good, "series", baseline),
        "same_file": _entries(df, good, "same_file", baseline),
        "hosts_compared": _hosts(df, good, hosts),
        "lost": lost,
    }


def lost_flags(clients: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """A validity flag per host lost mid-run: its step's figures lack that host."""
    return [
        {
            "rule": HOST_LOST,
            "target": lost.get("target"),
            "test": lost.get("test"),
            "host": lost.get("host"),
            "detail": f"client host {lost.get('host')} lost during {lost.get('layout')} "
            f"{lost.get('test')} with {lost.get('clients')} clients: {lost.get('detail')}; "
            "the figures of that step lack it, and it took no further part",
        }
        for lost in (clients or {}).get("lost") or []
    ]


def threshold_document(clients: Mapping[str, Any] | None) -> dict[str, Any]:
    """The clients figures as thresholds address them (docs/io.md, "Thresholds")::

        clients.series.<target>.<test>.<N>.<field>     last_done_kbps.mean, sum_kbps.mean,
                                                       speedup, scaling, lat_ms.p99,
                                                       per_client_kbps.<host>
        clients.same_file.<target>.<field>             the same, for the same-file read
        clients.hosts.<target>.<test>.<host>.<field>   kbps.mean, speedup, lat_ms.p99
        clients.lost                                   how many hosts were lost mid-run

    Empty (every ``clients.`` path names nothing) when the run had no clients phase."""
    if clients is None:
        return {}
    doc: dict[str, Any] = {"series": {}, "same_file": {}, "hosts": {}}
    for e in clients.get("series") or []:
        by_test = doc["series"].setdefault(str(e["target"]), {}).setdefault(str(e["test"]), {})
        by_test[str(e["clients"])] = e
    for e in clients.get("same_file") or []:
        doc["same_file"][str(e["target"])] = e
    for e in clients.get("hosts_compared") or []:
        by_test = doc["hosts"].setdefault(str(e["target"]), {}).setdefault(str(e["test"]), {})
        by_test[str(e["host"])] = e
    doc["lost"] = len(clients.get("lost") or [])
    return {"clients": doc}


def threshold_scopes(doc: Mapping[str, Any]) -> dict[str, Scope]:
    """The scope of :func:`threshold_document` for the shared evaluator."""
    return {"clients": single(doc, "clients")}
