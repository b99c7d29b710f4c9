"""Pure analysis of the storage-in-depth records: the POSIX conformance table per
syscall (the seed's Table 4.7) with each target's difference to the baseline, the
trace-replay matrix, and the identity check matrix.

Pass rate = passed / (passed + failed), as the seed's "% success rate": skipped tests
(a feature or privilege missing) and excluded tests are not in it and are counted apart.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.io.analysis import merged_latency, speedup
from gridbench.stats import rep
from gridbench.thresholds import Scope, single

Row = Mapping[str, Any]
COUNTED = ("passed", "failed", "skipped", "excluded", "expected_failure", "unexpected_pass")


def excluded_by(test: str, syscall: str, exclusions: Sequence[Mapping[str, str]]) -> str | None:
    """The reason ``test`` is excluded, or None."""
    for e in exclusions:
        m = e.get("match", "")
        if m and (syscall == m or test.startswith(m)):
            return str(e.get("reason", ""))
    return None


def _counts(rows: Sequence[Row]) -> dict[str, Any]:
    c = Counter(str(r.get("result")) for r in rows)
    passed, failed = c["passed"], c["failed"] + c["unexpected_pass"]
    run = passed + failed
    return {
        "tests": len(rows),
        **{k: c[k] for k in COUNTED},
        "rate": passed / run if run else None,
    }


def conformance(
    records: Sequence[Row], baseline: str | None, exclusions: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    """``table``: per target and syscall (and a ``total`` row per target) the counts,
    the pass rate and, beside the baseline, the tests that pass on the baseline and
    fail on the target (``worse``) or the other way round (``better``). ``failures``:
    every failed test with its message; ``skip_reasons``: per target, reason and count."""
    rows: list[dict[str, Any]] = []
    for r in records:
        test, sc = str(r.get("test")), str(r.get("syscall"))
        why = excluded_by(test, sc, exclusions)
        res = "excluded" if why is not None else str(r.get("result"))
        rows.append({**r, "test": test, "syscall": sc, "result": res, "excluded": why})
    by: dict[tuple[str, str], list[Row]] = defaultdict(list)
    verdict: dict[tuple[str, str], str] = {}
    targets: list[str] = []
    for r in rows:
        t = str(r.get("target"))
        if t not in targets:
            targets.append(t)
        by[(t, r["syscall"])].append(r)
        by[(t, "total")].append(r)
        verdict[(t, r["test"])] = r["result"]
    syscalls = [*sorted({sc for _, sc in by if sc != "total"}), "total"]
    table = []
    for t in targets:
        for sc in syscalls:
            if (t, sc) not in by:
                continue
            entry: dict[str, Any] = {"target": t, "syscall": sc, **_counts(by[(t, sc)])}
            if baseline and t != baseline and (baseline, sc) in by:
                base = _counts(by[(baseline, sc)])
                entry["baseline_rate"] = base["rate"]
                entry["worse"] = sorted(
                    r["test"]
                    for r in by[(t, sc)]
                    if r["result"] == "failed" and verdict.get((baseline, r["test"])) == "passed"
                )
                entry["better"] = sorted(
                    r["test"]
                    for r in by[(t, sc)]
                    if r["result"] == "passed" and verdict.get((baseline, r["test"])) == "failed"
                )
            table.append(entry)
    reasons: Counter[tuple[str, str, str]] = Counter()
    for r in rows:
        if r["result"] in ("skipped", "excluded"):
            why = r["excluded"] or str(r.get("detail") or "no reason given")
            reasons[(str(r.get("target")), r["syscall"], why)] += 1
    return {
        "table": table,
        "failures": [
            {k: r.get(k) for k in ("target", "syscall", "test", "detail")}
            for r in rows
            if r["result"] == "failed"
        ],
        "skip_reasons": [
            {"target": t, "syscall": sc, "reason": why, "count": n}
            for (t, sc, why), n in sorted(reasons.items())
        ],
    }


def replay(rows: Sequence[Row], baseline: str | None) -> list[dict[str, Any]]:
    """One entry per (target, streams, sync, direction) of the trace replays: kB/s
    summed over the streams (mean ± sd across repetitions), latency percentiles of the
    merged histograms, and the signed speedup against the baseline's same cell."""
    groups: dict[tuple[str, int, bool, str, int], list[Row]] = defaultdict(list)
    for r in rows:
        key = (
            str(r.get("target")),
            int(r.get("streams", 1)),
            bool(r.get("sync")),
            str(r.get("direction")),
            int(r.get("rep", 0)),
        )
        groups[key].append(r)
    cells: dict[tuple[str, int, bool, str], list[float | None]] = defaultdict(list)
    lat_rows: dict[tuple[str, int, bool, str], list[Row]] = defaultdict(list)
    for (t, n, s, d, _), rs in groups.items():
        cells[(t, n, s, d)].append(sum(float(r.get("kbps", 0.0)) for r in rs))
        lat_rows[(t, n, s, d)].extend(rs)
    out = []
    for (t, n, s, d), vals in cells.items():
        kb = rep(vals)
        base = rep(cells[(baseline, n, s, d)])["mean"] if baseline and t != baseline else None
        out.append(
            {
                "target": t,
                "streams": n,
                "sync": s,
                "direction": d,
                "kbps": kb,
                "lat_ms": merged_latency(lat_rows[(t, n, s, d)]),
                "baseline_kbps": base,
                "speedup": speedup(kb["mean"], base),
            }
        )
    out.sort(key=lambda e: (e["direction"], e["sync"], e["streams"], e["target"]))
    return out


def replay_validity_rows(records: Sequence[Row]) -> list[dict[str, Any]]:
    """The replay records in the shape io's validity rules read (kind, test, clients):
    a replay timed over a few ms, or written through the page cache, is flagged as a
    matrix figure is."""
    return [
        {
            "kind": "replay",
            "target": r.get("target"),
            "test": f"replay {'O_SYNC' if r.get('sync') else 'no O_SYNC'}",
            "clients": r.get("streams"),
            "direction": r.get("direction"),
            "runtime_s": r.get("runtime_s"),
            "sync": bool(r.get("sync")),
        }
        for r in records
    ]


def identities_ok(checks: Sequence[Row]) -> bool:
    """True when every identity check that ran passed (``ok`` None: not run)."""
    return all(c.get("ok") is not False for c in checks)


def threshold_paths(conf: Mapping[str, Any], replays: Sequence[Row]) -> dict[str, Any]:
    """The in-depth figures as thresholds address them (docs/io.md, "Thresholds")::

    conformance.<target>.<syscall>.<field>    rate, failed, passed (syscall total too)
    replay.<target>.<read|write>.<sync|nosync>.<streams>.<field>   kbps.mean, speedup
    """
    doc: dict[str, Any] = {"conformance": {}, "replay": {}}
    for r in conf.get("table", []):
        doc["conformance"].setdefault(str(r["target"]), {})[str(r["syscall"])] = r
    for e in replays:
        tgt = doc["replay"].setdefault(str(e["target"]), {}).setdefault(str(e["direction"]), {})
        tgt.setdefault("sync" if e["sync"] else "nosync", {})[str(e["streams"])] = e
    return doc


def threshold_scopes(doc: Mapping[str, Any]) -> dict[str, Scope]:
    """The scopes of :func:`threshold_paths` for the shared evaluator."""
    return {"conformance": single(doc, "POSIX conformance"), "replay": single(doc, "replay")}
