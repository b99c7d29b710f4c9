"""io's figure tables as typed :class:`~gridbench.sections.Table` sections (the iozone
matrix in two layouts plus its tidy export, concurrency, HTTP; Bonnie's in
:mod:`gridbench.io.report_bonnie`) and io's formatters:
raw values for CSV/JSON, and the text io has always shown (kB/s ``mean ±sd [CI ±x]``,
signed speedups) for the terminal and the HTML page. Pure functions of ``metrics.json``
(schema ``gridbench.io/1``); a table with nothing to show is None. Verdict and caveat
tables are in :mod:`gridbench.io.report_checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gridbench.io.matrix import LABEL
from gridbench.sections import (
    Cell,
    Column,
    Field,
    RecordLook,
    RowStyle,
    Shown,
    Status,
    Table,
    record_table,
    rep_mean,
    shown_table,
)
from gridbench.units import format_size

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


def num(x: Any) -> float | None:
    """A number as a float; None for anything else (booleans too)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def as_str(key: str, default: Any = None) -> Callable[[Mapping[str, Any]], Shown]:
    """A field's cell: the record's value under ``key`` (``default`` when missing), shown
    as its str."""
    return lambda r: Shown(r.get(key, default), str(r.get(key, default)))


def fixed(x: float | None, spec: str) -> Shown:
    """A number shown in ``spec`` (a format spec); MISSING when there is none."""
    return Shown(x, MISSING if x is None else format(x, spec))


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
                *[
                    rep_mean(cell[(target, t)]["kbps"]) if (target, t) in cell else None
                    for t in tests
                ],
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
    rows: list[list[Shown]] = []
    for t in tests:
        row = [Shown(t, LABEL.get(t, t))]
        for c in [*cands, *([base] if base else [])]:
            m = cell.get((str(c), t))
            row += [
                Shown(
                    rep_mean(m["kbps"]) if m else None,
                    fmt_kbps(m["kbps"], ci=True) if m else MISSING,
                ),
                Shown(num((m or {}).get("lat_ms", {}).get("p99")), _lat(m)),
            ]
            if base and c != base and c in cands:
                sp = num(m.get("speedup")) if m else None
                row.append(Shown(sp, fmt_speedup(sp)))
        rows.append(row)
    return shown_table(
        "matrix-by-test",
        "iozone matrix: kB/s mean ±sd [95% CI], latency p50 / p99 ms",
        cols,
        rows,
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


def _per_client(c: Mapping[str, Any]) -> Shown:
    per = ", ".join(f"{k}: {v:.0f}" for k, v in c["per_client_kbps"].items() if v is not None)
    return Shown(per, per or MISSING)


def _kbps(key: str) -> Callable[[Mapping[str, Any]], Shown]:
    return lambda r: Shown(rep_mean(r[key]), fmt_kbps(r[key]))


CONCURRENCY: tuple[Field, ...] = (
    (Column("target"), as_str("target")),
    (Column("test"), lambda c: Shown(c["test"], LABEL.get(c["test"], c["test"]))),
    (Column("clients", numeric=True), as_str("clients")),
    (Column("files"), as_str("files")),
    (Column("last_done_kbps", "last done kB/s", numeric=True), _kbps("last_done_kbps")),
    (
        Column("first_done_kbps", "first done kB/s (estimate: Σ client rates)", numeric=True),
        _kbps("first_done_kbps"),
    ),
    (
        Column("finish_spread_s", "finish spread s", numeric=True),
        lambda c: fixed(num(c["finish_spread_s"]), ".3f"),
    ),
    (Column("per_client_kbps", "per client kB/s"), _per_client),
    (
        Column("p99_ms", "p99 ms", numeric=True),
        lambda c: Shown(p99 := num(c["lat_ms"].get("p99")), fmt_ms(p99)),
    ),
)
CONCURRENCY_COLUMNS = tuple(c for c, _ in CONCURRENCY)


def concurrency_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per (target, test, clients, files): the aggregates, the spread, each client."""
    return record_table(
        "concurrency", "Concurrent clients", metrics.get("concurrency", []), CONCURRENCY
    )


def _pm(stats: Mapping[str, Any], digits: int) -> str:
    if stats.get("mean") is None:
        return MISSING
    s = f"{stats['mean']:.{digits}f}"
    return s + (f" ±{stats['std']:.{digits}f}" if stats.get("std") is not None else "")


HTTP: tuple[Field, ...] = (
    (Column("size", numeric=True), lambda h: Shown(h["size"], format_size(h["size"]))),
    (Column("operation"), lambda h: Shown(h["op"], str(h["op"]))),
    (
        Column("seconds", "time s (mean ±sd)", numeric=True),
        lambda h: Shown(rep_mean(h["seconds"]), _pm(h["seconds"], 3)),
    ),
    (
        Column("mib_s", "MiB/s (mean ±sd)", numeric=True),
        lambda h: Shown(rep_mean(h["mib_s"]), _pm(h["mib_s"], 1)),
    ),
    (Column("ok"), lambda h: Shown(bool(h["ok"]), "yes" if h["ok"] else "NO")),
)
HTTP_COLUMNS = tuple(c for c, _ in HTTP)


def http_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per size and operation: seconds and MiB/s (mean ±sd), and whether all went well."""
    return record_table(
        "http",
        "HTTP transfers",
        metrics.get("http", []),
        HTTP,
        look=RecordLook(status=lambda h: None if h["ok"] else "fail"),
    )
