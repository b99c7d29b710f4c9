"""``gridbench net``: validate, plan, run and report messaging benchmarks (docs/net.md).

Exit codes as for every family: 0 ok, 1 a threshold failed, 2 bad input, 3 a tool or the
environment failed, 130 interrupted. Analysis and reports go through the generic path
(``Ui.analyze_and_show``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from gridbench.cliargs import add_results_arg, add_run_arg, add_spec_args
from gridbench.errors import EXIT_OK, GridbenchError
from gridbench.family import Ui, show_run, step_progress
from gridbench.fmt import safe_markup


def cmd_validate(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.messaging.load import load_net_spec
    from gridbench.messaging.plan import steps

    spec, _ = load_net_spec(args.spec, args.set)
    ui.console.print(
        f"[green]ok[/]: {safe_markup(args.spec)} is a valid net spec "
        f"({len(spec.environments)} environments, {len(steps(spec))} steps)"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.messaging.load import load_net_spec
    from gridbench.messaging.plan import memory_needed, steps
    from gridbench.units import format_size

    spec, _ = load_net_spec(args.spec, args.set)
    plan = steps(spec)
    need, where = memory_needed(spec)
    if args.json:
        doc = {
            "name": spec.name,
            "steps": [
                {
                    "env": s.env,
                    "pattern": s.pattern,
                    "what": s.what,
                    "config": s.config,
                    "measurements": s.measurements,
                }
                for s in plan
            ],
            "memory_bytes": need,
        }
        print(json.dumps(doc, indent=1))
        return EXIT_OK
    table = Table(title=f"net plan: {safe_markup(spec.name)}")
    for col in ("environment", "pattern", "transport/tool", "configuration", "measurements"):
        table.add_column(col, justify="right" if col == "measurements" else "left")
    for s in plan:
        table.add_row(
            *(safe_markup(x) for x in (s.env, s.pattern, s.what, s.config, s.measurements))
        )
    ui.console.print(table)
    ui.console.print(f"{len(plan)} steps; memory held at once about {format_size(need)} ({where})")
    ui.console.print("[dim]dry run: nothing was started[/]")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.messaging.load import load_net_spec
    from gridbench.messaging.plan import steps
    from gridbench.messaging.runner import NetRunner

    spec, data = load_net_spec(args.spec, args.set)
    runner = NetRunner(spec, data, ui.results_root(args))
    failure: GridbenchError | None = None
    with step_progress(ui, "net", len(steps(spec))) as step:
        runner.progress = step
        try:
            runner.execute()
        except GridbenchError as exc:
            if runner.run is None:
                raise
            failure = exc  # the run is marked failed; what it measured is still reported
        except KeyboardInterrupt:
            if runner.run is None:
                raise
            ui.console.print("[yellow]interrupted: peers stopped, results so far kept[/]")
    return show_run(ui, runner.run, failure)


def cmd_report(args: argparse.Namespace, ui: Ui) -> int:
    """Same as ``gridbench report RUN``, kept under ``net`` for the habit."""
    from gridbench.store.catalogue import resolve_run

    return ui.analyze_and_show(resolve_run(args.run, ui.results_root(args)).path)


def _spec_args(p: argparse.ArgumentParser) -> None:
    add_spec_args(
        p,
        what="net spec (YAML), see docs/net.md and examples/net-*.yaml",
        example="--set pingpong.sizes.max=1M",
    )


def add_commands(sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
    """Add ``gridbench net`` and its subcommands."""
    p = sub.add_parser(
        "net",
        help="messaging benchmarks: ping-pong, echo (TLS), burst, transfers vs sockperf/iperf3",
        description="Messaging and service benchmarks over real transports (raw TCP, ZeroMQ, "
        "gRPC, MUSCLE3, scp) in real environments (one process, two processes, two network "
        "namespaces, through a relay), each figure beside the native floor measured in the "
        "same run. See docs/net.md.",
    )
    nsub = p.add_subparsers(dest="net_action", required=True, metavar="ACTION")
    q = nsub.add_parser("validate", help="check a net spec and report every problem with its line")
    _spec_args(q)
    q.set_defaults(func=lambda a, f=cmd_validate: f(a, ui))
    q = nsub.add_parser("plan", help="show the steps a net spec runs, without running them")
    _spec_args(q)
    q.add_argument("--json", action="store_true", help="print the plan as JSON")
    q.set_defaults(func=lambda a, f=cmd_plan: f(a, ui))
    q = nsub.add_parser("run", help="run a net spec (root for lan), then analyse and report")
    _spec_args(q)
    add_results_arg(q)
    q.set_defaults(func=lambda a, f=cmd_run: f(a, ui))
    q = nsub.add_parser("report", help="re-analyse a net results directory, rewrite its reports")
    add_run_arg(q)
    add_results_arg(q)
    q.set_defaults(func=lambda a, f=cmd_report: f(a, ui))
