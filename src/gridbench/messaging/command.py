"""``gridbench net``: validate, plan, run and report messaging benchmarks (docs/net.md).

Exit codes as for every family: 0 ok, 1 a threshold failed, 2 bad input, 3 a tool or the
environment failed, 130 interrupted. Analysis and reports go through the generic path
(``Ui.analyze_and_show``).
"""

from __future__ import annotations

import argparse

from gridbench.cliargs import PlanTable, show_plan
from gridbench.errors import EXIT_OK
from gridbench.family import Ui
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
    from gridbench.messaging.plan import estimated_seconds, memory_needed, step_seconds, steps
    from gridbench.units import format_duration, format_size

    spec, _ = load_net_spec(args.spec, args.set)
    plan = steps(spec)
    need, where = memory_needed(spec)
    secs = estimated_seconds(spec)
    doc = {
        "name": spec.name,
        "steps": [
            {
                "env": s.env,
                "pattern": s.pattern,
                "what": s.what,
                "config": s.config,
                "measurements": s.measurements,
                "seconds": round(step_seconds(spec, s), 2),
            }
            for s in plan
        ],
        "memory_bytes": need,
        "estimated_seconds": round(secs, 1),
    }
    return show_plan(
        ui,
        PlanTable(
            title=f"net plan: {safe_markup(spec.name)}",
            columns=(
                "environment",
                "pattern",
                "transport/tool",
                "configuration",
                "measurements",
                "seconds",
            ),
            right=frozenset({"measurements", "seconds"}),
            rows=[
                (
                    *(safe_markup(x) for x in (s.env, s.pattern, s.what, s.config, s.measurements)),
                    f"{step_seconds(spec, s):.1f}",
                )
                for s in plan
            ],
            summary=f"{len(plan)} steps; estimated duration about {format_duration(round(secs))} "
            f"(times measured on loopback: a real network adds its latency); memory held at "
            f"once about {format_size(need)} ({where})",
        ),
        doc=doc,
        as_json=args.json,
    )


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.cliargs import run_and_show, step_sampling
    from gridbench.messaging.load import load_net_spec
    from gridbench.messaging.plan import steps
    from gridbench.messaging.runner import NetRunner

    spec, data = load_net_spec(args.spec, args.set)
    root = ui.results_root(args)
    return run_and_show(
        ui,
        "net",
        len(steps(spec)),
        lambda step: NetRunner(spec, data, root, progress=step),
        interrupted="peers stopped",
        sampling=step_sampling(spec.sampling),
    )
