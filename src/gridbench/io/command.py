"""``gridbench io``: validate, run and report storage benchmarks (docs/io.md).

Exit codes as for job flow: 0 ok, 1 a threshold or consistency check failed, 2 bad input,
3 fio/bonnie++/the target failed, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``), as for every family.
"""

from __future__ import annotations

import argparse
from typing import Any

from gridbench.cliargs import add_results_arg, add_run_arg, add_spec_args
from gridbench.errors import EXIT_OK, GridbenchError
from gridbench.family import Ui, show_run, step_progress
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
    failure: GridbenchError | None = None
    with step_progress(ui, "io", plan_steps(spec)) as step:
        runner = IoRunner(spec, data, ui.results_root(args), force=args.force, progress=step)
        try:
            runner.execute()
        except BackendError as exc:
            failure = exc
        except KeyboardInterrupt:
            if runner.run is None:
                raise
            ui.console.print("[yellow]interrupted: files cleaned up, results so far kept[/]")
    return show_run(ui, runner.run, failure)


def cmd_report(args: argparse.Namespace, ui: Ui) -> int:
    """Same as ``gridbench report RUN``, kept under ``io`` for the io user's habit."""
    from gridbench.store.catalogue import resolve_run

    return ui.analyze_and_show(resolve_run(args.run, ui.results_root(args)).path)


def _spec_args(p: argparse.ArgumentParser) -> None:
    add_spec_args(
        p,
        what="io spec (YAML), see docs/io.md and examples/io-*.yaml",
        example="--set iozone.file_size=64M",
    )


def add_commands(sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
    """Add ``gridbench io`` and its subcommands."""
    p = sub.add_parser(
        "io", help="storage benchmarks: iozone/Bonnie matrices on fio, speedups, checks"
    )
    isub = p.add_subparsers(dest="io_action", required=True, metavar="ACTION")
    q = isub.add_parser("validate", help="check an io spec and report every problem with its line")
    _spec_args(q)
    q.set_defaults(func=lambda a, f=cmd_validate: f(a, ui))
    q = isub.add_parser("run", help="run an io spec against its targets, then report")
    _spec_args(q)
    add_results_arg(q)
    q.add_argument("--force", action="store_true", help="allow targets that already hold data")
    q.set_defaults(func=lambda a, f=cmd_run: f(a, ui))
    q = isub.add_parser("report", help="re-analyse an io results directory and rewrite its reports")
    add_run_arg(q)
    add_results_arg(q)
    q.set_defaults(func=lambda a, f=cmd_report: f(a, ui))
