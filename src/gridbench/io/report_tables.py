"""io's figure tables as typed :class:`~gridbench.sections.Table` sections (the iozone
matrix in two layouts plus its tidy export, Bonnie, concurrency, HTTP) and io's formatters:
raw values for CSV/JSON, and the text io has always shown (kB/s ``mean ±sd [CI ±x]``,
signed speedups) for the terminal and the HTML page. Pure functions of ``metrics.json``
(schema ``gridbench.io/1``); a table with nothing to show is None. Verdict and caveat
tables are in :mod:`gridbench.io.report_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.io.bonnie import COLUMNS as BONNIE_COLUMNS
from gridbench.io.bonnie import LABEL as BONNIE_LABEL
from gridbench.io.matrix import LABEL
from gridbench.io.units import format_size
from gridbench.sections import Cell, Column, RowStyle, Status, Table

MISSING = "-"

# -- io's formatters (the core gridbench.fmt has none of these shapes) ---------------------


def fmt_kbps(stats: Mapping[str, Any] | None, *, ci: bool = False) -> str:
    """``mean ±sd`` (kB/s, integers like iozone prints), with ``ci`` also the 95% CI
    half-width in brackets; ``-`` when missing."""
    if not stats or stats.get("mean") is None:
        return MISSING
    s = f"{stats['mean']:.0f}"
    if stats.get("std") is not None:
        s += f" ±{stats['std']:.0f}"
    if ci and stats.get("ci95") is not None:
        s += f" [CI ±{stats['ci95']:.0f}]"
    return s


def fmt_speedup(x: float | None) -> str:
    """A signed fraction as a signed whole percentage: 0.5 -> '+50%'; '-' when missing."""
    return MISSING if x is None else f"{x * 100:+.0f}%"


def fmt_ms(x: float | None) -> str:
    """Milliseconds to 3 significant digits; '-' when missing."""
    return MISSING if x is None else f"{x:.3g}"


def verdict(ok: object) -> str:
    """PASS, FAIL, or NOT RUN for a check that was skipped (ok None)."""
    if ok is None:
        return "NOT RUN"
    return "PASS" if ok is True else "FAIL"


def status_of(ok: object) -> Status:
    """The section status of a check's ``ok``: pass, fail, or info when it did not run."""
    if ok is None:
        return "info"
    return "pass" if ok is True else "fail"


def _mean(stats: Any) -> float | None:
    if isinstance(stats, Mapping) and isinstance(stats.get("mean"), int | float):
        return float(stats["mean"])
    return None


def num(x: Any) -> float | None:
    """A number as a float; None for anything else (booleans too)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


# -- the iozone matrix ---------------------------------------------------------------------


def tests_of(metrics: Mapping[str, Any]) -> list[str]:
    """The matrix's tests in the order measured (iozone's)."""
    return list(dict.fromkeys(str(m["test"]) for m in metrics.get("matrix", [])))


def targets_of(metrics: Mapping[str, Any]) -> list[str]:
    """The matrix's targets in the spec's order, then any others by name."""
    names = [str(t.get("name")) for t in metrics.get("targets", []) if isinstance(t, Mapping)]
    seen = {str(m["target"]) for m in metrics.get("matrix", [])}
    return [n for n in names if n in seen] + sorted(seen - set(names))


def _cells(metrics: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(str(m["target"]), str(m["test"])): m for m in metrics.get("matrix", [])}


def _lat(m: Mapping[str, Any] | None) -> str:
    if m is None:
        return MISSING
    lat = m.get("lat_ms") or {}
    return f"{fmt_ms(lat.get('p50'))} / {fmt_ms(lat.get('p99'))}"


def matrix_note(metrics: Mapping[str, Any]) -> str:
    """The formula and the timing conditions, printed under the matrix."""
    io = metrics.get("iozone", {})
    return (
        f"{metrics.get('speedup_formula')}. File {io.get('file_size')} bytes, record "
        f"{io.get('record_size')} bytes; close() in timing: always (fio times it), flush "
        f"(fsync) in timing: {io.get('include_flush')}; {metrics.get('repetitions')} "
        "repetitions."
    )


def matrix_table(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 2 layout (the full report): a row per target (kB/s mean ±sd [CI],
    p50/p99 latency beside), the baseline, and a signed speedup row per candidate. Raw
    cells: mean kB/s, and the speedup fraction in speedup rows."""
    tests = tests_of(metrics)
    if not tests:
        return None
    base = metrics.get("baseline")
    cell = _cells(metrics)
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    style: list[RowStyle | None] = []

    def fig(target: str, t: str) -> str:
        m = cell.get((target, t))
        if m is None:
            return MISSING
        lat = m.get("lat_ms") or {}
        return (
            f"{fmt_kbps(m['kbps'], ci=True)}\n"
            f"p50 {fmt_ms(lat.get('p50'))} / p99 {fmt_ms(lat.get('p99'))} ms"
        )

    def figures(target: str, label: str) -> None:
        rows.append(
            (
                label,
                *[_mean(cell[(target, t)]["kbps"]) if (target, t) in cell else None for t in tests],
            )
        )
        text.append((label, *[fig(target, t) for t in tests]))
        style.append(None)

    targets = targets_of(metrics)
    for target in targets:
        if target == base:
            continue
        figures(target, target)
        if base:
            figures(str(base), f"{base} (baseline)")
            sp = [
                num(cell[(target, t)].get("speedup")) if (target, t) in cell else None
                for t in tests
            ]
            rows.append(("speedup", *sp))
            text.append(("speedup", *[fmt_speedup(x) for x in sp]))
            style.append("total")
    if base and base in targets and len(targets) == 1:
        figures(str(base), f"{base} (baseline)")
    return Table(
        id="matrix",
        title="iozone matrix (kB/s mean ±sd [95% CI half-width]; latency p50 / p99 ms)",
        columns=(
            Column("target"),
            *[Column(t, LABEL.get(t, t), numeric=True) for t in tests],
        ),
        rows=tuple(rows),
        text=tuple(text),
        note=matrix_note(metrics),
        export=False,  # the tidy 'matrix' export carries every figure
        row_style=tuple(style),
        scope="full",
    )


def matrix_by_test(metrics: Mapping[str, Any]) -> Table | None:
    """The matrix transposed for narrow terminals (the brief report): a row per test in
    iozone's order, per candidate its kB/s, p50/p99 latency and signed speedup, then the
    baseline's. Raw cells: mean kB/s, p99 ms, speedup fraction."""
    tests = tests_of(metrics)
    if not tests:
        return None
    base = metrics.get("baseline")
    cell = _cells(metrics)
    targets = targets_of(metrics)
    cands = [t for t in targets if t != base] or targets
    cols = [Column("test")]
    for c in cands:
        cols += [Column(f"{c} kB/s", numeric=True), Column(f"{c} p99 ms", f"{c} p50/p99 ms", True)]
        if base and c != base:
            cols += [Column(f"{c} speedup", "speedup", numeric=True)]
    if base:
        cols += [
            Column(f"{base} kB/s", f"{base} kB/s (baseline)", numeric=True),
            Column(f"{base} p99 ms", f"{base} p50/p99 ms", numeric=True),
        ]
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    for t in tests:
        raw: list[Cell] = [t]
        shown = [LABEL.get(t, t)]
        for c in [*cands, *([base] if base else [])]:
            m = cell.get((str(c), t))
            raw += [_mean(m["kbps"]) if m else None, num((m or {}).get("lat_ms", {}).get("p99"))]
            shown += [fmt_kbps(m["kbps"], ci=True) if m else MISSING, _lat(m)]
            if base and c != base and c in cands:
                sp = num(m.get("speedup")) if m else None
                raw.append(sp)
                shown.append(fmt_speedup(sp))
        rows.append(tuple(raw))
        text.append(tuple(shown))
    return Table(
        id="matrix-by-test",
        title="iozone matrix: kB/s mean ±sd [95% CI], latency p50 / p99 ms",
        columns=tuple(cols),
        rows=tuple(rows),
        text=tuple(text),
        note=str(metrics.get("speedup_formula")) if base else "",
        export=False,
        scope="brief",
    )


def matrix_export(metrics: Mapping[str, Any]) -> Table | None:
    """Every figure of the matrix, one row per (target, test), for CSV and JSON only."""
    recs = []
    for m in metrics.get("matrix", []):
        kb, lat = m.get("kbps") or {}, m.get("lat_ms") or {}
        recs.append(
            {
                "target": m.get("target"),
                "test": m.get("test"),
                "kbps_mean": kb.get("mean"),
                "kbps_std": kb.get("std"),
                "kbps_ci95": kb.get("ci95"),
                "repetitions": kb.get("n"),
                **{f"{k}_ms": lat.get(k) for k in ("p50", "p90", "p99", "p999")},
                "baseline": m.get("baseline"),
                "baseline_kbps": m.get("baseline_kbps"),
                "speedup": m.get("speedup"),
                "cpu_pct": m.get("cpu_pct"),
            }
        )
    if not recs:
        return None
    return Table.from_records("matrix", "iozone matrix (every figure)", recs)


# -- the other tables ----------------------------------------------------------------------


def bonnie_table(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 3 layout: kB/s and CPU% per column, speedup rows."""
    entries = {(b["target"], b["column"]): b for b in metrics.get("bonnie", [])}
    if not entries:
        return None
    cols = [c for c, _ in BONNIE_COLUMNS]
    columns = [Column("target")]
    for c in cols:
        columns += [
            Column(f"{c}_kbps", f"{BONNIE_LABEL[c]} kB/s", numeric=True),
            Column(f"{c}_cpu_pct", "%CPU", numeric=True),
        ]
    base = metrics.get("baseline")
    targets = list(dict.fromkeys(t for t, _ in entries))
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    style: list[RowStyle | None] = []
    for target in targets:
        label = target + (" (baseline)" if target == base else "")
        raw: list[Cell] = [label]
        shown = [label]
        for c in cols:
            b = entries.get((target, c))
            kb = _mean(b["kbps"]) if b else None
            raw += [kb, num(b["cpu_pct"]) if b else None]
            shown += [
                fmt_kbps(b["kbps"])
                if b and kb is not None
                else ("+++++" if b and b["note"] else "-"),
                "-" if not b or b["cpu_pct"] is None else f"{b['cpu_pct']:.0f}",
            ]
        rows.append(tuple(raw))
        text.append(tuple(shown))
        style.append(None)
        if target != base and base in targets:
            sp = [
                num(entries[(target, c)]["speedup"]) if (target, c) in entries else None
                for c in cols
            ]
            rows.append(("speedup", *[x for s in sp for x in (s, None)]))
            text.append(("speedup", *[x for s in sp for x in (fmt_speedup(s), "--")]))
            style.append("total")
    return Table(
        id="bonnie",
        title="Bonnie (kB/s, %CPU)",
        columns=tuple(columns),
        rows=tuple(rows),
        text=tuple(text),
        note="+++++: bonnie++ could not time a phase under 500 ms.",
        row_style=tuple(style),
    )


CONCURRENCY_COLUMNS = (
    Column("target"),
    Column("test"),
    Column("clients", numeric=True),
    Column("files"),
    Column("last_done_kbps", "last done kB/s", numeric=True),
    Column("first_done_kbps", "first done kB/s (estimate: Σ client rates)", numeric=True),
    Column("finish_spread_s", "finish spread s", numeric=True),
    Column("per_client_kbps", "per client kB/s"),
    Column("p99_ms", "p99 ms", numeric=True),
)


def concurrency_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per (target, test, clients, files): the aggregates, the spread, each client."""
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    for c in metrics.get("concurrency", []):
        per = ", ".join(f"{k}: {v:.0f}" for k, v in c["per_client_kbps"].items() if v is not None)
        spread, p99 = num(c["finish_spread_s"]), num(c["lat_ms"].get("p99"))
        rows.append(
            (
                c["target"],
                c["test"],
                c["clients"],
                c["files"],
                _mean(c["last_done_kbps"]),
                _mean(c["first_done_kbps"]),
                spread,
                per,
                p99,
            )
        )
        text.append(
            (
                str(c["target"]),
                LABEL.get(c["test"], c["test"]),
                str(c["clients"]),
                str(c["files"]),
                fmt_kbps(c["last_done_kbps"]),
                fmt_kbps(c["first_done_kbps"]),
                MISSING if spread is None else f"{spread:.3f}",
                per or MISSING,
                fmt_ms(p99),
            )
        )
    if not rows:
        return None
    return Table(
        id="concurrency",
        title="Concurrent clients",
        columns=CONCURRENCY_COLUMNS,
        rows=tuple(rows),
        text=tuple(text),
    )


def _pm(stats: Mapping[str, Any], digits: int) -> str:
    if stats.get("mean") is None:
        return MISSING
    s = f"{stats['mean']:.{digits}f}"
    return s + (f" ±{stats['std']:.{digits}f}" if stats.get("std") is not None else "")


HTTP_COLUMNS = (
    Column("size", numeric=True),
    Column("operation"),
    Column("seconds", "time s (mean ±sd)", numeric=True),
    Column("mib_s", "MiB/s (mean ±sd)", numeric=True),
    Column("ok"),
)


def http_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per size and operation: seconds and MiB/s (mean ±sd), and whether all went well."""
    hs = metrics.get("http", [])
    if not hs:
        return None
    return Table(
        id="http",
        title="HTTP transfers",
        columns=HTTP_COLUMNS,
        rows=tuple(
            (h["size"], h["op"], _mean(h["seconds"]), _mean(h["mib_s"]), bool(h["ok"])) for h in hs
        ),
        text=tuple(
            (
                format_size(h["size"]),
                str(h["op"]),
                _pm(h["seconds"], 3),
                _pm(h["mib_s"], 1),
                "yes" if h["ok"] else "NO",
            )
            for h in hs
        ),
        row_status=tuple(None if h["ok"] else "fail" for h in hs),
    )
