"""``gridbench io``: validate, plan, run and report storage benchmarks (docs/io.md).

Exit codes as for job flow: 0 ok, 1 a threshold or consistency check failed, 2 bad input,
3 fio/bonnie++/the target failed, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``), as for every family.
"""

from __future__ import annotations

import argparse
from typing import Any

from gridbench.cliargs import PlanTable, SpecVerbs, add_spec_verbs, show_plan
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


def add_commands(sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
    """Add ``gridbench io`` and its subcommands."""
    p = sub.add_parser(
        "io",
        help="storage benchmarks: iozone/Bonnie matrices on fio, speedups, checks, "
        "POSIX conformance (pjdfstest), trace replay, identities, faults",
        epilog="spec sections (docs/io.md): iozone, bonnie, concurrency, consistency, http; "
        "resilience (faults on a replicated file system's servers on a schedule, time to "
        "recover, every byte written verified); http_clients (N WebDAV clients at once); "
        "conformance (pjdfstest per syscall); replay (fio trace replay); identities",
    )
    isub = p.add_subparsers(dest="io_action", required=True, metavar="ACTION")
    q = add_spec_verbs(
        isub,
        ui,
        SpecVerbs(
            what="io spec (YAML), see docs/io.md and examples/io-*.yaml",
            example="--set iozone.file_size=64M",
            noun="an io spec",
            validate=cmd_validate,
            plan=cmd_plan,
            run=cmd_run,
            run_help="run an io spec against its targets, then report (exit 1 also when a byte "
            "written in the resilience phase is lost or corrupt; conformance needs "
            "pjdfstest: scripts/install-pjdfstest; identities need root)",
            report_help="re-analyse an io results directory and rewrite its reports",
        ),
    )
    q.add_argument("--force", action="store_true", help="allow targets that already hold data")
