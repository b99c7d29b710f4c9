"""``gridbench io``: validate, plan, run and report storage benchmarks (docs/io.md).

Exit codes as for job flow: 0 ok, 1 a threshold or consistency check failed, 2 bad input,
3 fio/bonnie++/the target failed, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``), as for every family.
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Any

from rich.table import Table

from gridbench.cliargs import ActionArgs, add_action, add_spec_args, report_command, run_and_show
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
    if args.json:
        doc = {
            "name": spec.name,
            "steps": [
                {"target": s.target, "rep": s.rep, "what": s.what, "seconds": round(s.seconds, 2)}
                for s in plan
            ],
            "estimated_seconds": round(secs, 1),
        }
        print(json.dumps(doc, indent=1))
        return EXIT_OK
    table = Table(title=f"io plan: {safe_markup(spec.name)}")
    for col in ("target", "repetition", "step", "seconds"):
        table.add_column(col, justify="right" if col in ("repetition", "seconds") else "left")
    for s in plan:
        rep = str(s.rep + 1) if s.rep is not None else "-"
        table.add_row(safe_markup(s.target or "-"), rep, safe_markup(s.what), f"{s.seconds:.1f}")
    ui.console.print(table)
    ui.console.print(
        f"{len(plan)} steps; estimated duration about {format_duration(round(secs))} (fio runs "
        f"at an assumed local-disk rate: a slower target takes longer); data on a target at "
        f"once up to {format_size(needed_bytes(spec))}"
    )
    ui.console.print("[dim]dry run: nothing was started[/]")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
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
    )


_spec_args = functools.partial(
    add_spec_args,
    what="io spec (YAML), see docs/io.md and examples/io-*.yaml",
    example="--set iozone.file_size=64M",
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
    add_action(
        isub,
        "validate",
        cmd_validate,
        ui,
        args=ActionArgs(spec=_spec_args),
        help="check an io spec and report every problem with its line",
    )
    q = add_action(
        isub,
        "plan",
        cmd_plan,
        ui,
        args=ActionArgs(spec=_spec_args),
        help="show the steps an io spec runs and their estimated duration, without running them",
    )
    q.add_argument("--json", action="store_true", help="print the plan as JSON")
    q = add_action(
        isub,
        "run",
        cmd_run,
        ui,
        args=ActionArgs(spec=_spec_args, results=True),
        help="run an io spec against its targets, then report (exit 1 also when a byte "
        "written in the resilience phase is lost or corrupt; conformance needs "
        "pjdfstest: scripts/install-pjdfstest; identities need root)",
    )
    q.add_argument("--force", action="store_true", help="allow targets that already hold data")
    add_action(
        isub,
        "report",
        report_command,
        ui,
        args=ActionArgs(run=True, results=True),
        help="re-analyse an io results directory and rewrite its reports",
    )
