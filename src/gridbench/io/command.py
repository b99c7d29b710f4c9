"""``gridbench io``: validate, run and report storage benchmarks (docs/io.md).

Exit codes as for job flow: 0 ok, 1 a threshold or consistency check failed, 2 bad input,
3 fio/bonnie++/the target failed, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``), as for every family.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from gridbench.cliargs import ActionArgs, add_action, add_spec_args, report_command, run_and_show
from gridbench.errors import EXIT_OK
from gridbench.family import Ui
from gridbench.fmt import safe_markup


def cmd_validate(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.io.load import load_io_spec
    from gridbench.io.runner import plan_steps

    spec, _ = load_io_spec(args.spec, args.set)
    ui.console.print(
        f"[green]ok[/]: {safe_markup(args.spec)} is a valid io spec ({len(spec.targets)} targets, "
        f"{spec.repetitions} repetitions, {plan_steps(spec)} steps)"
    )
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
        "io", help="storage benchmarks: iozone/Bonnie matrices on fio, speedups, checks"
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
        "run",
        cmd_run,
        ui,
        args=ActionArgs(spec=_spec_args, results=True),
        help="run an io spec against its targets, then report",
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
