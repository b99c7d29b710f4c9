"""The terminal report of an io run (rich tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gridbench.io import tables as tb
from gridbench.io.units import format_size


def _print(console: Console, title: str, table: tb.Table) -> None:
    header, rows = table
    if not rows:
        return
    t = Table(title=title)
    for i, h in enumerate(header):
        t.add_column(escape(h), justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*[escape(c) for c in r])
    console.print(t)


def render(metrics: Mapping[str, Any], console: Console) -> None:
    """Every table of the report, then the verdict lines."""
    io = metrics.get("iozone", {})
    console.print(
        f"[bold]{escape(str(metrics.get('name')))}[/]: iozone matrix, file "
        f"{format_size(io.get('file_size', 0))}, "
        f"record {format_size(io.get('record_size', 0))}, close() in timing (-c; fio always "
        f"times it), flush {'in' if io.get('include_flush') else 'not in'} timing (-e); "
        f"{metrics.get('repetitions')} repetitions"
    )
    _print(console, "cache mode per target", tb.cache_table(metrics))
    _print(
        console,
        "iozone matrix: kB/s mean ±sd [95% CI], latency p50 / p99 ms",
        tb.matrix_by_test(metrics),
    )
    if metrics.get("baseline"):
        console.print(f"[dim]{escape(str(metrics.get('speedup_formula')))}[/]")
    _print(console, "Bonnie: kB/s and %CPU", tb.bonnie_table(metrics))
    _print(console, "concurrent clients", tb.concurrency_table(metrics))
    _print(console, "consistency and functional checks", tb.consistency_table(metrics))
    _print(console, "HTTP transfers", tb.http_table(metrics))
    _print(console, "thresholds", tb.threshold_table(metrics))
    if metrics.get("status") not in (None, "completed"):
        console.print(f"[red]run {metrics.get('status')}[/]: {escape(str(metrics.get('error')))}")
    if not metrics.get("thresholds_ok", True):
        console.print("[red]thresholds: FAILED[/]")
    if not metrics.get("consistency_ok", True):
        console.print("[red]consistency checks: some FAILED[/]")
