"""The command line of :mod:`gridbench.hosts`: ``gridbench hosts check INVENTORY`` and
``gridbench lab up|status|down`` (declared in :mod:`gridbench.cli`)."""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console

from gridbench.errors import EXIT_OK, EXIT_THRESHOLD
from gridbench.fmt import safe_markup

console = Console(highlight=False, emoji=False)


def _say(line: str) -> None:
    console.print(safe_markup(line))


def cmd_hosts_check(args: argparse.Namespace, ui: object = None) -> int:
    from gridbench.hosts.check import check_hosts, render_checks
    from gridbench.hosts.inventory import load_inventory

    inv = load_inventory(args.inventory)
    names = list(args.host or [])
    for n in names:
        inv.host(n, "--host")
    results = asyncio.run(check_hosts(inv, names or None))
    render_checks(results, console)
    if args.write:
        from pathlib import Path

        from gridbench.hosts.check import write_offsets

        written = write_offsets(Path(args.inventory), results)
        _say(
            f"clock_offset_ms written for {', '.join(written)} in {args.inventory}"
            if written
            else "no clock offset measured: nothing written"
        )
    return EXIT_OK if all(r.ok for r in results) else EXIT_THRESHOLD


def cmd_lab_up(args: argparse.Namespace, ui: object = None) -> int:
    from gridbench.hosts.lab import LabPlan, lab_up, parse_latency

    plan = LabPlan(
        name=args.name,
        hosts=args.hosts,
        rate=args.rate,
        latency=[parse_latency(t) for t in args.latency],
    )
    inv = lab_up(plan, _say)
    _say(f"lab {args.name} is up; inventory: {inv}")
    _say(f"  check it: gridbench hosts check {inv}")
    _say(f"  remove it: gridbench lab down --name {args.name}")
    return EXIT_OK


def cmd_lab_status(args: argparse.Namespace, ui: object = None) -> int:
    from gridbench.hosts.lab import lab_status

    lines, ok = lab_status(args.name)
    for line in lines:
        _say(line)
    return EXIT_OK if ok else EXIT_THRESHOLD


def cmd_lab_down(args: argparse.Namespace, ui: object = None) -> int:
    from gridbench.hosts.lab import lab_down

    errors = lab_down(args.name, _say)
    for e in errors:
        console.print(f"[red]not removed[/]: {safe_markup(e)}")
    if not errors:
        _say(f"lab {args.name} removed")
    return EXIT_THRESHOLD if errors else EXIT_OK
