"""The command line of :mod:`gridbench.hosts`: ``gridbench hosts check INVENTORY`` and
``gridbench lab up|status|down`` (registered by ``gridbench.cli``'s COMMAND_MODULES)."""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console

from gridbench.errors import EXIT_OK, EXIT_THRESHOLD
from gridbench.fmt import safe_markup

console = Console(highlight=False, emoji=False)


def _say(line: str) -> None:
    console.print(safe_markup(line))


def cmd_hosts_check(args: argparse.Namespace) -> int:
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


def cmd_lab_up(args: argparse.Namespace) -> int:
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


def cmd_lab_status(args: argparse.Namespace) -> int:
    from gridbench.hosts.lab import lab_status

    lines, ok = lab_status(args.name)
    for line in lines:
        _say(line)
    return EXIT_OK if ok else EXIT_THRESHOLD


def cmd_lab_down(args: argparse.Namespace) -> int:
    from gridbench.hosts.lab import lab_down

    errors = lab_down(args.name, _say)
    for e in errors:
        console.print(f"[red]not removed[/]: {safe_markup(e)}")
    if not errors:
        _say(f"lab {args.name} removed")
    return EXIT_THRESHOLD if errors else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``hosts`` and ``lab`` to the gridbench command line."""
    p = sub.add_parser("hosts", help="the inventory of hosts: check that each one answers")
    hs = p.add_subparsers(dest="hosts_command", required=True, metavar="VERB")
    c = hs.add_parser(
        "check",
        help="reach each host of an inventory over SSH: Python and gridbench there, clock "
        "offset, node_exporter; exit 1 if any host fails (docs/hosts.md)",
    )
    c.add_argument("inventory", metavar="INVENTORY", help="the hosts file (hosts: at its top)")
    c.add_argument(
        "--host", action="append", metavar="NAME", help="check only this host (repeatable)"
    )
    c.add_argument(
        "--write",
        action="store_true",
        help="write each host's measured clock offset into the inventory (clock_offset_ms), "
        "for the sampler to use",
    )
    c.set_defaults(func=cmd_hosts_check)

    p = sub.add_parser(
        "lab",
        help="several hosts on this machine: namespaces on a bridge with sshd and "
        "node_exporter each, shaped links, an inventory (root only; docs/hosts.md)",
    )
    ls = p.add_subparsers(dest="lab_command", required=True, metavar="VERB")
    up = ls.add_parser(
        "up",
        help="make a lab of N hosts and write its inventory",
        description="Make N hosts NAME-1..NAME-N: a network namespace each on a Linux "
        "bridge, with its own address in a free private /24, sshd (throw-away keys) and "
        "node_exporter on :9100; an inventory for the families in the lab's folder "
        "(/run/gridbench-lab/NAME). Root only.",
    )
    up.add_argument("--hosts", type=int, default=3, metavar="N", help="how many (default 3)")
    up.add_argument(
        "--rate",
        metavar="RATE",
        help="shape every host's link both ways with tc tbf, e.g. 20mbit",
    )
    up.add_argument(
        "--latency",
        action="append",
        default=[],
        metavar="HOST[:PORTS]:DELAY",
        help="reach HOST's ports (default 22,5201) through Toxiproxy, the round trip grown "
        "by DELAY: lab-2:50ms, lab-2:7000:50ms (repeatable; the proxies' addresses are "
        "in the inventory)",
    )
    for verb in (
        up,
        ls.add_parser("status", help="what runs in a lab"),
        ls.add_parser(
            "down",
            help="remove a lab: exactly what it made (also after a kill -9 of 'lab up')",
        ),
    ):
        verb.add_argument("--name", default="lab", help="the lab's name (default lab)")
    up.set_defaults(func=cmd_lab_up)
    ls.choices["status"].set_defaults(func=cmd_lab_status)
    ls.choices["down"].set_defaults(func=cmd_lab_down)
