"""``gridbench io``: validate, plan, run and report storage benchmarks (docs/io.md).

Exit codes as for job flow: 0 ok, 1 a threshold or consistency check failed, 2 bad input,
3 fio/bonnie++/the target failed, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``), as for every family.
"""

from __future__ import annotations

import argparse

from gridbench.cliargs import PlanTable, show_plan
from gridbench.errors import EXIT_OK
from gridbench.family import Ui
from gridbench.fmt import safe_markup


def cmd_validate(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.io.load import load_io_spec
    from gridbench.io.runner import plan_steps
    from gridbench.io.safety import target_problems

    spec, _ = load_io_spec(args.spec, args.set)
    ui.console.print(
        f"[green]ok[/]: {safe_markup(args.spec)} is a valid io spec ({len(spec.targets)} targets, "
        f"{spec.repetitions} repetitions, {plan_steps(spec)} steps)"
    )
    # the spec may be meant for another host: a target refused here is a note, not an error
    for problem in target_problems(spec):
        ui.console.print(f"[yellow]note[/]: {safe_markup(problem)}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.io.load import load_io_spec
    from gridbench.io.plan import estimated_seconds, steps
    from gridbench.io.runner import needed_bytes
    from gridbench.units import format_duration, format_size

    spec, _ = load_io_spec(args.spec, args.set)
    plan, secs = steps(spec), estimated_seconds(spec)
    doc = {
        "name": spec.name,
        "steps": [
            {"target": s.target, "rep": s.rep, "what": s.what, "seconds": round(s.seconds, 2)}
            for s in plan
        ],
        "estimated_seconds": round(secs, 1),
    }
    return show_plan(
        ui,
        PlanTable(
            title=f"io plan: {safe_markup(spec.name)}",
            columns=("target", "repetition", "step", "seconds"),
            right=frozenset({"repetition", "seconds"}),
            rows=[
                (
                    safe_markup(s.target or "-"),
                    str(s.rep + 1) if s.rep is not None else "-",
                    safe_markup(s.what),
                    f"{s.seconds:.1f}",
                )
                for s in plan
            ],
            summary=f"{len(plan)} steps; estimated duration about {format_duration(round(secs))} "
            f"(fio runs at an assumed local-disk rate: a slower target takes longer); data on a "
            f"target at once up to {format_size(needed_bytes(spec))}",
        ),
        doc=doc,
        as_json=args.json,
    )


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.cliargs import run_and_show, step_sampling
    from gridbench.errors import BackendError
    from gridbench.io.load import load_io_spec
    from gridbench.io.runner import IoRunner, plan_steps

    spec, data = load_io_spec(args.spec, args.set)
    root = ui.results_root(args)
    return run_and_show(
        ui,
        "io",
        plan_steps(spec),
        lambda step: IoRunner(spec, data, root, force=args.force, progress=step),
        interrupted="files cleaned up",
        failures=(BackendError,),
        sampling=step_sampling(spec.sampling),
    )
