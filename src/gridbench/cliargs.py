"""Command-line arguments every family's commands share, spelled once."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gridbench.family import Ui

#: A family's command: the parsed arguments and what the CLI lends it -> the exit code.
FamilyCommand = Callable[[argparse.Namespace, "Ui"], int]
#: Adds a family's spec arguments (``functools.partial(add_spec_args, what=, example=)``).
SpecArgs = Callable[[argparse.ArgumentParser], None]

RUN_HELP = "results directory, run id, or 'latest'"


def add_results_arg(p: argparse.ArgumentParser) -> None:
    """``--results DIR``: the results root."""
    p.add_argument(
        "--results", metavar="DIR", help="results root (default: $GRIDBENCH_RESULTS or ./results)"
    )


def add_spec_args(p: argparse.ArgumentParser, *, what: str, example: str) -> None:
    """The spec file and repeatable ``--set KEY=VALUE`` overrides."""
    p.add_argument("spec", help=what)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a spec field, e.g. {example}",
    )


def add_run_arg(p: argparse.ArgumentParser) -> None:
    """A run: a results directory, an id from ``gridbench list``, or ``latest``."""
    p.add_argument("run", help=RUN_HELP)


DEFAULT_PORT = 8765


def add_serve_args(p: argparse.ArgumentParser) -> None:
    """The web server's options (``gridbench serve``, ``gridbench study serve``)."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.add_argument(
        "--results", metavar="DIR", help="results root (default: $GRIDBENCH_RESULTS or ./results)"
    )
    p.add_argument(
        "--token-env",
        metavar="VAR",
        help="environment variable holding the access token (required off loopback)",
    )
    p.add_argument(
        "--token-file", metavar="FILE", help="file holding the access token (first line)"
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="extra Host header name to accept (e.g. the machine's DNS name)",
    )
    p.add_argument(
        "--max-running",
        type=int,
        default=4,
        metavar="N",
        help="experiments running at once; more queue (default 4)",
    )
    p.add_argument(
        "--max-queued",
        type=int,
        default=16,
        metavar="N",
        help="experiments waiting for a slot; more are refused (default 16)",
    )


def add_action(
    actions: argparse._SubParsersAction[Any],
    name: str,
    command: FamilyCommand,
    ui: Ui,
    *,
    spec: SpecArgs | None = None,
    run: bool = False,
    results: bool = False,
    **parser: Any,
) -> argparse.ArgumentParser:
    """One action of a family's command (``gridbench io run``): its parser (``parser``:
    ``help``, ``description``, ...), then, in this order, the spec arguments, the run and
    ``--results``; calling it runs ``command(args, ui)``. Returns the parser for the
    action's own options."""
    p: argparse.ArgumentParser = actions.add_parser(name, **parser)
    if spec is not None:
        spec(p)
    if run:
        add_run_arg(p)
    if results:
        add_results_arg(p)
    p.set_defaults(func=lambda a: command(a, ui))
    return p


def report_command(args: argparse.Namespace, ui: Ui) -> int:
    """``gridbench <family> report RUN``: the same as ``gridbench report RUN``, kept under
    each family for its users' habit."""
    from gridbench.store.catalogue import resolve_run

    return ui.analyze_and_show(resolve_run(args.run, ui.results_root(args)).path)
