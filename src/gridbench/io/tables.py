"""Report tables as plain rows (header + cells of text), shared by the terminal and HTML
reports: the iozone matrix in the seed's layout (targets × tests, baseline and signed
speedup rows), Bonnie, concurrency, consistency, HTTP, thresholds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.io.bonnie import COLUMNS as BONNIE_COLUMNS
from gridbench.io.bonnie import LABEL as BONNIE_LABEL
from gridbench.io.matrix import LABEL
from gridbench.io.units import format_size

Table = tuple[list[str], list[list[str]]]


def fmt_kbps(stats: Mapping[str, Any] | None, *, ci: bool = False) -> str:
    """``mean ±sd`` (kB/s, integers like iozone prints), with ``ci`` also the 95% CI
    half-width in brackets; ``-`` when missing."""
    if not stats or stats.get("mean") is None:
        return "-"
    s = f"{stats['mean']:.0f}"
    if stats.get("std") is not None:
        s += f" ±{stats['std']:.0f}"
    if ci and stats.get("ci95") is not None:
        s += f" [CI ±{stats['ci95']:.0f}]"
    return s


def fmt_pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.0f}%"


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}"


def _tests(metrics: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for m in metrics.get("matrix", []):
        if m["test"] not in out:
            out.append(m["test"])
    return out


def _targets(metrics: Mapping[str, Any]) -> list[str]:
    names = [str(t.get("name")) for t in metrics.get("targets", [])]
    seen = {m["target"] for m in metrics.get("matrix", [])}
    return [n for n in names if n in seen] + sorted(seen - set(names))


def matrix_table(metrics: Mapping[str, Any], *, latency: bool = True) -> Table:
    """The seed's Table 2 layout: a row per target (kB/s mean ±sd, with p50/p99 latency
    beside), the baseline, and a signed speedup row per candidate."""
    tests = _tests(metrics)
    base = metrics.get("baseline")
    cell = {(m["target"], m["test"]): m for m in metrics.get("matrix", [])}
    header = ["target", *[LABEL.get(t, t) for t in tests]]
    rows: list[list[str]] = []

    def fig(target: str, t: str) -> str:
        m = cell.get((target, t))
        if m is None:
            return "-"
        s = fmt_kbps(m["kbps"], ci=True)
        if latency:
            lat = m["lat_ms"]
            s += f"\np50 {fmt_ms(lat.get('p50'))} / p99 {fmt_ms(lat.get('p99'))} ms"
        return s

    targets = _targets(metrics)
    for target in targets:
        if target == base:
            continue
        rows.append([target, *[fig(target, t) for t in tests]])
        if base:
            rows.append([f"{base} (baseline)", *[fig(base, t) for t in tests]])
            rows.append(
                [
                    "speedup",
                    *[
                        fmt_pct(cell[(target, t)]["speedup"]) if (target, t) in cell else "-"
                        for t in tests
                    ],
                ]
            )
    if base and base in targets and len(targets) == 1:
        rows.append([f"{base} (baseline)", *[fig(base, t) for t in tests]])
    return header, rows


def matrix_by_test(metrics: Mapping[str, Any]) -> Table:
    """The matrix transposed for narrow terminals: a row per test in iozone's order, per
    candidate its kB/s, the baseline's, the signed speedup and p50/p99 latency of both."""
    tests = _tests(metrics)
    base = metrics.get("baseline")
    cell = {(m["target"], m["test"]): m for m in metrics.get("matrix", [])}
    targets = _targets(metrics)
    cands = [t for t in targets if t != base] or targets
    header = ["test"]
    for c in cands:
        header += [f"{c} kB/s", f"{c} p50/p99 ms"]
        if base and c != base:
            header += ["speedup"]
    if base:
        header += [f"{base} kB/s (baseline)", f"{base} p50/p99 ms"]

    def lat(m: Mapping[str, Any] | None) -> str:
        if m is None:
            return "-"
        return f"{fmt_ms(m['lat_ms'].get('p50'))} / {fmt_ms(m['lat_ms'].get('p99'))}"

    rows = []
    for t in tests:
        row = [LABEL.get(t, t)]
        for c in cands:
            m = cell.get((c, t))
            row += [fmt_kbps(m["kbps"], ci=True) if m else "-", lat(m)]
            if base and c != base:
                row += [fmt_pct(m["speedup"]) if m else "-"]
        if base:
            b = cell.get((base, t))
            row += [fmt_kbps(b["kbps"], ci=True) if b else "-", lat(b)]
        rows.append(row)
    return header, rows


def bonnie_table(metrics: Mapping[str, Any]) -> Table:
    """The seed's Table 3 layout: kB/s and CPU% per column, speedup rows."""
    entries = {(b["target"], b["column"]): b for b in metrics.get("bonnie", [])}
    if not entries:
        return [], []
    cols = [c for c, _ in BONNIE_COLUMNS]
    header = ["target"] + [h for c in cols for h in (f"{BONNIE_LABEL[c]} kB/s", "%CPU")]
    base = metrics.get("baseline")
    targets = list(dict.fromkeys(t for t, _ in entries))
    rows = []
    for target in targets:
        row = [target + (" (baseline)" if target == base else "")]
        for c in cols:
            b = entries.get((target, c))
            row += [
                fmt_kbps(b["kbps"])
                if b and b["kbps"]["mean"] is not None
                else ("+++++" if b and b["note"] else "-"),
                "-" if not b or b["cpu_pct"] is None else f"{b['cpu_pct']:.0f}",
            ]
        rows.append(row)
        if target != base and base in targets:
            rows.append(
                ["speedup"]
                + [
                    x
                    for c in cols
                    for x in (
                        fmt_pct(entries[(target, c)]["speedup"]) if (target, c) in entries else "-",
                        "--",
                    )
                ]
            )
    return header, rows


def concurrency_table(metrics: Mapping[str, Any]) -> Table:
    header = [
        "target",
        "test",
        "clients",
        "files",
        "last done kB/s",
        "first done kB/s (estimate: Σ client rates)",
        "finish spread s",
        "per client kB/s",
        "p99 ms",
    ]
    rows = []
    for c in metrics.get("concurrency", []):
        per = ", ".join(f"{k}: {v:.0f}" for k, v in c["per_client_kbps"].items() if v is not None)
        rows.append(
            [
                c["target"],
                LABEL.get(c["test"], c["test"]),
                str(c["clients"]),
                c["files"],
                fmt_kbps(c["last_done_kbps"]),
                fmt_kbps(c["first_done_kbps"]),
                "-" if c["finish_spread_s"] is None else f"{c['finish_spread_s']:.3f}",
                per or "-",
                fmt_ms(c["lat_ms"].get("p99")),
            ]
        )
    return header, rows


def verdict(ok: object) -> str:
    """PASS, FAIL, or NOT RUN for a check that was skipped (ok None)."""
    if ok is None:
        return "NOT RUN"
    return "PASS" if ok is True else "FAIL"


def consistency_table(metrics: Mapping[str, Any]) -> Table:
    header = ["target", "check", "result", "seconds", "detail"]
    rows = [
        [
            str(c.get("target")),
            str(c.get("check")),
            verdict(c.get("ok")),
            "-" if c.get("seconds") is None else f"{float(c['seconds']):.3f}",
            str(c.get("detail", "")),
        ]
        for c in metrics.get("consistency", [])
    ]
    return header, rows


def http_table(metrics: Mapping[str, Any]) -> Table:
    header = ["size", "operation", "time s (mean ±sd)", "MiB/s (mean ±sd)", "ok"]
    rows = []
    for h in metrics.get("http", []):
        s, m = h["seconds"], h["mib_s"]
        rows.append(
            [
                format_size(h["size"]),
                h["op"],
                "-"
                if s["mean"] is None
                else f"{s['mean']:.3f}" + (f" ±{s['std']:.3f}" if s.get("std") is not None else ""),
                "-"
                if m["mean"] is None
                else f"{m['mean']:.1f}" + (f" ±{m['std']:.1f}" if m.get("std") is not None else ""),
                "yes" if h["ok"] else "NO",
            ]
        )
    return header, rows


def threshold_table(metrics: Mapping[str, Any]) -> Table:
    header = ["test", "target", "result", "detail"]
    rows = [
        [
            str(t.get("test")),
            str(t.get("target")),
            "PASS" if t["ok"] else "FAIL",
            str(t.get("detail", "")),
        ]
        for t in metrics.get("thresholds", [])
    ]
    return header, rows


def cache_table(metrics: Mapping[str, Any]) -> Table:
    header = ["target", "path", "cache requested", "cache used", "re-read vs read", "notes"]
    effect = {c["target"]: c["statement"] for c in metrics.get("cache_effects", [])}
    rows = [
        [
            str(t.get("name")),
            str(t.get("path")),
            str(t.get("cache_requested")),
            str(t.get("cache_used")),
            effect.get(str(t.get("name")), "-"),
            "; ".join(t.get("notes", [])) or "-",
        ]
        for t in metrics.get("targets", [])
    ]
    return header, rows
