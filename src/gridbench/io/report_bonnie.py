"""Bonnie's tables: the seed's Table 3 layout (kB/s and CPU% per phase, speedup rows
against the baseline) and the same layout for Bonnie's file tests (files created, stat'ed
and removed per second, in order and at random; bonnie++ ``-n``). Pure functions of
``metrics.json``; a table with nothing to show is None."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.io.bonnie import COLUMNS, FILE_COLUMNS, LABEL, RATE_KEY
from gridbench.io.report_tables import fmt_kbps, fmt_speedup, num
from gridbench.sections import Cell, Column, RowStyle, Shown, Table, shown_table

NOTE = "+++++: bonnie++ could not time a phase under 500 ms."


def bonnie_table(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 3 layout: kB/s and CPU% per column, speedup rows."""
    return _table(metrics, [c for c, _ in COLUMNS], "bonnie", "Bonnie (kB/s, %CPU)", "kB/s")


def bonnie_files_table(metrics: Mapping[str, Any]) -> Table | None:
    """Bonnie's file tests in the same layout: files/s and CPU% per phase, speedup rows."""
    cols = [c for c, _ in FILE_COLUMNS]
    return _table(metrics, cols, "bonnie_files", "Bonnie file tests (files/s, %CPU)", "/s")


def _table(
    metrics: Mapping[str, Any], cols: list[str], name: str, title: str, unit: str
) -> Table | None:
    entries = {
        (b["target"], b["column"]): b for b in metrics.get("bonnie", []) if b["column"] in cols
    }
    if not entries:
        return None
    cols = [c for c in cols if any(c == col for _, col in entries)]
    columns = [Column("target")]
    for c in cols:
        columns += [
            Column(f"{c}_{RATE_KEY[c]}", f"{LABEL[c]} {unit}", numeric=True),
            Column(f"{c}_cpu_pct", "%CPU", numeric=True),
        ]
    base = metrics.get("baseline")
    targets = list(dict.fromkeys(t for t, _ in entries))
    rows: list[list[Cell | Shown]] = []
    style: list[RowStyle | None] = []
    for target in targets:
        row: list[Cell | Shown] = [target + (" (baseline)" if target == base else "")]
        for c in cols:
            b = entries.get((target, c))
            rate = b.get(RATE_KEY[c]) if b else None
            value = num(rate.get("mean")) if isinstance(rate, Mapping) else None
            row += [
                Shown(
                    value,
                    fmt_kbps(rate) if value is not None else ("+++++" if b and b["note"] else "-"),
                ),
                Shown(
                    num(b["cpu_pct"]) if b else None,
                    "-" if not b or b["cpu_pct"] is None else f"{b['cpu_pct']:.0f}",
                ),
            ]
        rows.append(row)
        style.append(None)
        if target != base and base in targets:
            sp = [
                num(entries[(target, c)]["speedup"]) if (target, c) in entries else None
                for c in cols
            ]
            rows.append(
                ["speedup", *[x for s in sp for x in (Shown(s, fmt_speedup(s)), Shown(None, "--"))]]
            )
            style.append("total")
    return shown_table(name, title, columns, rows, note=NOTE, row_style=tuple(style))
