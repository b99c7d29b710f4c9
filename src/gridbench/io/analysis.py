"""Pure analysis of recorded rows: the matrix (mean ± sd, 95% CI per test and target),
signed speedups against the baseline, concurrency scaling, and what thresholds read.

A *row* is one fio job's figures in one direction (see :mod:`gridbench.io.runner`): keys
``kind`` (iozone|concurrency), ``target``, ``test``, ``rep``, ``clients``, ``client``,
``bytes``, ``kbps``, ``iops``, ``runtime_s``, ``lat_ms`` and ``hist`` ([ns], [counts]).

Speedup is ``(candidate − baseline) / baseline`` of the mean kB/s, a signed fraction
(shown as a percentage): +50% is 1.5 times the baseline's throughput, −50% half of it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from gridbench.io.parse import PERCENTILES, Histogram
from gridbench.stats import rep
from gridbench.thresholds import Scope, single

SPEEDUP_FORMULA = "speedup = (candidate − baseline) / baseline, of the mean kB/s"

Row = Mapping[str, Any]


def speedup(candidate: float | None, baseline: float | None) -> float | None:
    """Signed speedup as a fraction; None when either side is missing or the baseline is 0."""
    if candidate is None or baseline is None or baseline == 0:
        return None
    return (candidate - baseline) / baseline


def _hist(row: Row) -> Histogram:
    h = row.get("hist")
    if not isinstance(h, list | tuple) or len(h) != 2:
        return Histogram()
    return Histogram(np.asarray(h[0], dtype=np.float64), np.asarray(h[1], dtype=np.int64))


def merged_latency(rows: Iterable[Row]) -> dict[str, float | None]:
    """Latency percentiles (ms) of the merged histograms of ``rows``."""
    h = Histogram()
    for r in rows:
        h = h.merged(_hist(r))
    qs = h.percentiles(tuple(q for _, q in PERCENTILES))
    return {
        name: (v / 1e6 if v is not None else None)
        for (name, _), v in zip(PERCENTILES, qs, strict=True)
    }


def matrix(rows: Sequence[Row], baseline: str | None) -> list[dict[str, Any]]:
    """One entry per (test, target) of the iozone matrix, in the rows' test order:
    kB/s across repetitions (rep stats), latency percentiles, and the baseline's mean
    and signed speedup."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    order: list[str] = []
    for r in rows:
        if r.get("kind") != "iozone":
            continue
        groups[(str(r["test"]), str(r["target"]))].append(r)
        if r["test"] not in order:
            order.append(str(r["test"]))
    out = []
    means: dict[tuple[str, str], float | None] = {}
    for (test, target), rs in groups.items():
        means[(test, target)] = rep([float(r["kbps"]) for r in rs])["mean"]
    for (test, target), rs in sorted(groups.items(), key=lambda kv: order.index(kv[0][0])):
        kb = rep([float(r["kbps"]) for r in rs])
        base = means.get((test, baseline)) if baseline else None
        out.append(
            {
                "test": test,
                "target": target,
                "kbps": kb,
                "lat_ms": merged_latency(rs),
                "baseline": baseline,
                "baseline_kbps": base,
                "speedup": None if target == baseline else speedup(kb["mean"], base),
                "cpu_pct": rep(
                    [float(r.get("usr_cpu", 0)) + float(r.get("sys_cpu", 0)) for r in rs]
                )["mean"],
            }
        )
    return out


#: Re-read this many times faster than read: the page cache answered (the seed's cache note).
CACHE_RATIO = 2.0


def cache_effects(
    entries: Sequence[Mapping[str, Any]],
    cache_used: Mapping[str, str] | None = None,
    file_size: int | None = None,
    ram: int | None = None,
) -> list[dict[str, Any]]:
    """Per target, re-read against read: a re-read much faster than the first read means
    the data came from a cache, not from the storage. Where the cache was not bypassed
    (``cache_used`` ``none``) and the file is smaller than RAM, read and re-read alike
    come from the page cache, so a re-read no faster than read proves nothing."""
    by = {(e["target"], e["test"]): e["kbps"]["mean"] for e in entries}
    out = []
    for target in dict.fromkeys(e["target"] for e in entries):
        read, reread = by.get((target, "read")), by.get((target, "reread"))
        if not read or not reread:
            continue
        ratio = reread / read
        fits = file_size is not None and ram is not None and file_size < ram
        in_cache = fits and (cache_used or {}).get(target) == "none"
        if ratio >= CACHE_RATIO:
            statement = f"re-read is {ratio:.1f}x read: served from a cache"
        elif in_cache:
            statement = (
                f"re-read is {ratio:.2f}x read, but both were served from the page cache: "
                "the file is smaller than RAM and the cache was not bypassed"
            )
        else:
            statement = f"re-read is {ratio:.2f}x read: no cache effect seen"
        out.append(
            {
                "target": target,
                "reread_over_read": ratio,
                "cached": ratio >= CACHE_RATIO or in_cache,
                "statement": statement,
            }
        )
    return out


def concurrency(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Aggregate and per-client figures per (target, test, clients, files), per repetition
    then across repetitions.

    - ``last_done_kbps``: all bytes ÷ the slowest client's run time (elbencho's "last done");
    - ``first_done_kbps``: an *estimate* of elbencho's stonewall "first done" (the
      aggregate while all clients were still running): the sum of the clients' mean
      rates (fio's kB/s per client), exact only if each client's rate was steady over its
      run. It is not measured from per-interval bandwidth logs.
    """
    per_run: dict[tuple[str, str, int, str, int], list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("kind") == "concurrency":
            run_key = (
                str(r["target"]),
                str(r["test"]),
                int(r["clients"]),
                str(r["files"]),
                int(r["rep"]),
            )
            per_run[run_key].append(r)
    agg: dict[tuple[str, str, int, str], dict[str, list[float | None]]] = defaultdict(
        lambda: defaultdict(list)
    )
    clients_of: dict[tuple[str, str, int, str], list[Row]] = defaultdict(list)
    for (target, test, n, files, _rep), rs in per_run.items():
        b = np.array([float(r["bytes"]) for r in rs])
        t = np.array([max(float(r["runtime_s"]), 1e-9) for r in rs])
        key = (target, test, n, files)
        agg[key]["last"].append(float(b.sum() / t.max() / 1024.0))
        # fio's own per-client rate (timed in µs; runtime_s is whole milliseconds)
        agg[key]["first"].append(float(sum(float(r["kbps"]) for r in rs)))
        agg[key]["spread"].append(float(t.max() - t.min()))
        clients_of[key].extend(rs)
    out = []
    for key in sorted(agg):
        target, test, n, files = key
        per_client: dict[str, list[float | None]] = defaultdict(list)
        for r in clients_of[key]:
            per_client[f"{r['client']}/{r.get('job', '?')}"].append(float(r["kbps"]))
        out.append(
            {
                "target": target,
                "test": test,
                "clients": n,
                "files": files,
                "last_done_kbps": rep(agg[key]["last"]),
                "first_done_kbps": rep(agg[key]["first"]),
                "finish_spread_s": rep(agg[key]["spread"])["mean"],
                "per_client_kbps": {c: rep(v)["mean"] for c, v in sorted(per_client.items())},
                "lat_ms": merged_latency(clients_of[key]),
            }
        )
    return out


def threshold_document(
    entries: Sequence[Mapping[str, Any]],
    bonnie: Sequence[Mapping[str, Any]] = (),
    concurrency: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The io metrics as thresholds address them: the same entries, keyed by name
    instead of listed, so a path names one figure (see docs/io.md, "Thresholds")::

        matrix.<target>.<test>.<field>             kbps.mean, speedup, lat_ms.p99, cpu_pct ...
        bonnie.<target>.<column>.<field>           kbps.mean (files: per_s.mean), speedup, cpu_pct
        concurrency.<target>.<test>.<clients>.<field>   last_done_kbps.mean, lat_ms.p99 ...
    """
    doc: dict[str, Any] = {"matrix": {}, "bonnie": {}, "concurrency": {}}
    for e in entries:
        doc["matrix"].setdefault(str(e["target"]), {})[str(e["test"])] = e
    for b in bonnie:
        doc["bonnie"].setdefault(str(b["target"]), {})[str(b["column"])] = b
    for c in concurrency:
        # one files mode per spec, so target, test and clients name the entry
        doc["concurrency"].setdefault(str(c["target"]), {}).setdefault(str(c["test"]), {})[
            str(c["clients"])
        ] = c
    return doc


def threshold_scopes(doc: Mapping[str, Any]) -> dict[str, Scope]:
    """io's scopes for the shared evaluator: one document (:func:`threshold_document`);
    a path starts with ``matrix.``, ``bonnie.`` or ``concurrency.``."""
    return {
        "matrix": single(doc, "iozone matrix"),
        "bonnie": single(doc, "Bonnie"),
        "concurrency": single(doc, "concurrency"),
    }


#: How the old io form named its figures in a result's ``detail`` (one per LEGACY_LIMITS path).
_FIGURE = {"kbps.mean": "kB/s", "speedup": "speedup", "lat_ms.p99": "p99 ms"}


def table_keys(result: Mapping[str, Any], targets: Sequence[str]) -> dict[str, Any]:
    """A shared threshold result plus the keys io's threshold table reads (``test``,
    ``target``, ``ok``, ``detail``), worded as the old io thresholds wrote them."""
    metric = str(result["metric"])
    test = target = None
    figure = metric
    if metric.startswith("matrix."):
        rest = metric.removeprefix("matrix.")
        # the longest name first: target names may hold dots and prefix each other
        for name in sorted(targets, key=len, reverse=True):
            if rest.startswith(name + "."):
                target = name
                test, _, figure = rest[len(name) + 1 :].partition(".")
                break
    label = _FIGURE.get(figure, figure)
    actual, value = result["actual"], result["value"]
    if actual is not None:
        detail = f"{label} {actual:.4g} vs limit {value:g}"
    elif str(result["reason"] or "").startswith("unknown metric path"):
        detail = f"no such result: {result['reason']}"
    else:
        detail = f"{label} n/a vs limit {value:g}"
    return {**result, "test": test, "target": target, "ok": result["passed"], "detail": detail}
