"""The command line as data: each command declared by its name, help and arguments, its
code named as ``"module:function"`` and imported only when the command runs.

``gridbench --help`` and ``gridbench io --help`` are built from these declarations alone,
so they answer without importing any family's code (its analyses, numpy, scipy, the web
server ...). A declaration module imports nothing but this module: a family's
``cli.py`` (``gridbench/io/cli.py``), a command set's (``gridbench/model/cli.py``) and the
generic commands' (``gridbench/cli/declared.py``). Adding a command is one declaration::

    Command(
        "backends",
        help="list available backends (built-in and plugins)",
        run="gridbench.jobflow.commands:cmd_backends",  # (args, ui) -> exit code
        args=(arg("--json", action="store_true", help="..."),),
    )

``arg(...)`` takes exactly what ``argparse.ArgumentParser.add_argument`` takes; ``actions``
makes a command of actions (``gridbench io run``), ``parser`` passes keywords to the
action's ``ArgumentParser`` (``description``, ``epilog``, ``formatter_class``). See
docs/architecture.md, "Adding a command".
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: the results root option's help (``--results DIR``), spelled once
RESULTS_HELP = "results root (default: $GRIDBENCH_RESULTS or ./results)"
#: a run argument's help
RUN_HELP = "results directory, run id, or 'latest'"
#: the web server's default port (``gridbench serve``, ``gridbench study serve``)
DEFAULT_PORT = 8765


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: the names and keywords of ``ArgumentParser.add_argument``."""

    names: tuple[str, ...]
    options: Mapping[str, Any]

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add the argument to ``parser``."""
        parser.add_argument(*self.names, **self.options)


def arg(*names: str, **options: Any) -> Arg:
    """An argument, as ``parser.add_argument(*names, **options)`` would add it."""
    return Arg(names, options)


class Handler:
    """What a parsed command calls: the function ``target`` names (``"module:function"``),
    imported on the first call and called with the parsed arguments and ``ui`` (what the
    command line lends a command: ``gridbench.family.Ui``)."""

    __slots__ = ("target", "ui")

    def __init__(self, target: str, ui: Any) -> None:
        self.target = target
        self.ui = ui

    def __call__(self, args: argparse.Namespace) -> int:
        module, _, name = self.target.partition(":")
        function = getattr(importlib.import_module(module), name)
        return int(function(args, self.ui))

    def __repr__(self) -> str:
        return f"Handler({self.target!r})"


@dataclass(frozen=True, slots=True)
class Command:
    """One command (``gridbench list``) or action of a command (``gridbench io run``).

    ``run`` names the function that runs it, ``"module:function"`` called as
    ``function(args, ui) -> exit code``; a command of ``actions`` has none (its action
    does). ``dest`` is where the chosen action's name is parsed to (``io_action``).
    """

    name: str
    help: str | None = None
    run: str | None = None
    args: Sequence[Arg] = ()
    actions: Sequence[Command] = ()
    dest: str | None = None
    metavar: str = "ACTION"
    #: more keywords of the command's ArgumentParser: description, epilog, formatter_class
    parser: Mapping[str, Any] = field(default_factory=dict)

    def add_to(self, sub: argparse._SubParsersAction[Any], ui: Any) -> argparse.ArgumentParser:
        """Add this command's parser (and its actions') to ``sub``; returns it."""
        keywords = dict(self.parser)
        if self.help is not None:
            keywords["help"] = self.help
        p: argparse.ArgumentParser = sub.add_parser(self.name, **keywords)
        for a in self.args:
            a.add_to(p)
        if self.actions:
            actions = p.add_subparsers(dest=self.dest, required=True, metavar=self.metavar)
            for action in self.actions:
                action.add_to(actions, ui)
        if self.run is not None:
            p.set_defaults(func=Handler(self.run, ui))
        return p


@dataclass(frozen=True, slots=True)
class Commands:
    """The commands of a family or a command set (``gridbench.commands``), in the order
    ``gridbench --help`` lists them; ``name`` is the family's or the set's."""

    name: str
    commands: Sequence[Command]

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Any) -> None:
        """Add every command to ``sub`` (the :class:`gridbench.family.CommandSet` call)."""
        for command in self.commands:
            command.add_to(sub, ui)


# -- arguments many commands share ----------------------------------------------------

RESULTS = arg("--results", metavar="DIR", help=RESULTS_HELP)
RUN = arg("run", help=RUN_HELP)


def spec_args(*, what: str, example: str) -> tuple[Arg, Arg]:
    """The spec file (``what``: its help) and repeatable ``--set KEY=VALUE`` overrides."""
    return (
        arg("spec", help=what),
        arg(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"override a spec field, e.g. {example}",
        ),
    )


#: the web server's options (``gridbench serve``, ``gridbench study serve``)
SERVE_ARGS: tuple[Arg, ...] = (
    arg("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)"),
    arg("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}"),
    RESULTS,
    arg(
        "--token-env",
        metavar="VAR",
        help="environment variable holding the access token (required off loopback)",
    ),
    arg("--token-file", metavar="FILE", help="file holding the access token (first line)"),
    arg(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="extra Host header name to accept (e.g. the machine's DNS name)",
    ),
    arg(
        "--max-running",
        type=int,
        default=4,
        metavar="N",
        help="experiments running at once; more queue (default 4)",
    ),
    arg(
        "--max-queued",
        type=int,
        default=16,
        metavar="N",
        help="experiments waiting for a slot; more are refused (default 16)",
    ),
)


def spec_verbs(
    *,
    module: str,
    what: str,
    example: str,
    noun: str,
    run_help: str,
    report_help: str,
    run_args: Sequence[Arg] = (),
) -> tuple[Command, ...]:
    """The actions of a family whose runs start from a spec (``gridbench io``, ``gridbench
    net``): ``validate``, ``plan`` (with ``--json``), ``run`` and ``report``, in that
    order. ``module`` holds ``cmd_validate``, ``cmd_plan`` and ``cmd_run``; ``report`` is
    the generic one; ``run_args`` are the run action's own options."""
    spec = spec_args(what=what, example=example)
    json_arg = arg("--json", action="store_true", help="print the plan as JSON")
    return (
        Command(
            "validate",
            help=f"check {noun} and report every problem with its line",
            run=f"{module}:cmd_validate",
            args=spec,
        ),
        Command(
            "plan",
            help=f"show the steps {noun} runs and their estimated duration, without running them",
            run=f"{module}:cmd_plan",
            args=(*spec, json_arg),
        ),
        Command(
            "run",
            help=run_help,
            run=f"{module}:cmd_run",
            args=(*spec, RESULTS, *run_args),
        ),
        Command(
            "report",
            help=report_help,
            run="gridbench.cliargs:report_command",
            args=(RUN, RESULTS),
        ),
    )
