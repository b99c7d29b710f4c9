"""The whole command line as declarations (:mod:`gridbench.commandline`): the generic
commands on the results store (:data:`GENERIC`), the core's tools (:data:`TOOLS`), and
:func:`build_parser`, which adds every family's and command set's commands to them. A
command's code is named as ``"module:function"`` and imported only when it runs, so
``--help`` imports none (docs/architecture.md, "Adding a command")."""

from __future__ import annotations

import argparse
import importlib

from gridbench import __version__
from gridbench.cli.ui import CliUi
from gridbench.commandline import RESULTS, RUN, RUN_HELP, SERVE_ARGS, Command, arg

DESCRIPTION = (
    "Evaluate distributed computing infrastructure: job flow through schedulers and grid "
    "CEs, storage, and every benchmark family installed. Per-component latency and "
    "throughput, the bottleneck, the knee, and whether the measurement can be trusted."
)
EPILOG = (
    "Exit codes: 0 ok, 1 threshold failed, 2 bad input, 3 backend failed, 4 invalid "
    "measurement (--fail-invalid), 130 interrupted. Docs: docs/."
)
_JSON = arg("--json", action="store_true")

#: The generic commands on the results store (a run of any family), after the families'
#: and the command sets' commands in ``gridbench --help``.
GENERIC: tuple[Command, ...] = (
    Command(
        "analyze",
        help="(re-)analyse a run of any family and rewrite its reports",
        run="gridbench.cli.store_commands:cmd_analyze",
        args=(
            RUN,
            RESULTS,
            arg("--json", action="store_true", help="print metrics JSON (docs/metrics.md)"),
        ),
    ),
    Command(
        "report",
        help="regenerate the HTML/CSV/JSON reports of a run",
        run="gridbench.cli.store_commands:cmd_report",
        args=(RUN, RESULTS),
    ),
    Command(
        "list",
        help="list the runs of every family in the results store",
        run="gridbench.cli.store_commands:cmd_list",
        args=(RESULTS, _JSON),
    ),
    Command(
        "show",
        help="show one run's record and summary",
        run="gridbench.cli.store_commands:cmd_show",
        args=(RUN, RESULTS),
    ),
    Command(
        "cleanup",
        help="cancel the jobs and delete the reservations a crashed or killed run left "
        "behind (or, with --lab, what a killed 'lab up' made)",
        run="gridbench.cli.cleanup:cmd_cleanup",
        args=(
            RESULTS,
            arg("run", nargs="?", help=RUN_HELP),
            arg(
                "--lab",
                metavar="NAME",
                help="instead of a run: remove what 'gridbench lab up --name NAME' made "
                "(after a kill -9 too); the same as 'gridbench lab down --name NAME' "
                "(docs/hosts.md)",
            ),
            arg("--dry-run", action="store_true", help="only show what would be run and signalled"),
            arg(
                "-y",
                "--yes",
                action="store_true",
                help="act on the plan without asking for confirmation",
            ),
            arg(
                "--force",
                action="store_true",
                help="clean up even though the run's process still seems alive",
            ),
        ),
    ),
)

_COMPARE_OPTIONS = (
    RESULTS,
    arg("--json", action="store_true", help="print the result as JSON (docs/compare.md)"),
    arg("--alpha", type=float, default=0.05, help="significance level (default 0.05)"),
    arg(
        "--min-effect",
        type=float,
        default=0.05,
        metavar="FRACTION",
        help="smallest relative change called significant (default 0.05 = 5%%)",
    ),
    arg(
        "--max-samples",
        type=int,
        default=20_000,  # gridbench.compare.model.Settings().max_samples (a test keeps them equal)
        metavar="N",
        help="cap on per-job samples per experiment, point and segment (default %(default)s)",
    ),
)
_LAB_NAME = arg("--name", default="lab", help="the lab's name (default lab)")

#: The core's other commands (comparisons, the dashboard, hosts), last in --help.
TOOLS: tuple[Command, ...] = (
    Command(
        "compare",
        help="compare two or more experiments point by point (the first is the baseline)",
        run="gridbench.compare.command:cmd_compare",
        args=(
            arg("experiments", nargs="+", metavar="ID", help="ids, unique prefixes or paths"),
            arg(
                "--metric",
                action="append",
                default=[],
                metavar="PATTERN",
                help="compare only these metrics (name or glob, repeatable), e.g. "
                "'latency.overall.*'",
            ),
            arg("--all", action="store_true", help="show every metric, not only key ones"),
            arg(
                "--no-samples",
                action="store_true",
                help="do not read per-job latencies from the events (faster; per-trial tests only)",
            ),
            arg(
                "--fail-on-regression",
                action="store_true",
                help="exit 1 when any significant change is a regression",
            ),
            *_COMPARE_OPTIONS,
        ),
    ),
    Command(
        "history",
        help="one metric across every run of the same spec name",
        run="gridbench.compare.command:cmd_history",
        args=(
            arg("experiment", metavar="ID", help="any run of the spec (id, prefix, path, latest)"),
            arg(
                "--metric",
                required=True,
                metavar="PATH",
                help="a job-flow metric path, e.g. latency.overall.p99, "
                "throughput.overall.steady, knee.capacity_per_s (docs/metrics.md); for another "
                "family, a figure key",
            ),
            *_COMPARE_OPTIONS,
        ),
    ),
    Command(
        "serve",
        help="web dashboard: configure, run and watch experiments live, read and compare results",
        run="gridbench.web.command:cmd_serve",
        args=SERVE_ARGS,
    ),
    Command(
        "hosts",
        help="the inventory of hosts: check that each one answers",
        dest="hosts_command",
        metavar="VERB",
        actions=(
            Command(
                "check",
                help="reach each host of an inventory over SSH: Python and gridbench there, "
                "clock offset, node_exporter; exit 1 if any host fails (docs/hosts.md)",
                run="gridbench.hosts.command:cmd_hosts_check",
                args=(
                    arg(
                        "inventory", metavar="INVENTORY", help="the hosts file (hosts: at its top)"
                    ),
                    arg(
                        "--host",
                        action="append",
                        metavar="NAME",
                        help="check only this host (repeatable)",
                    ),
                    arg(
                        "--write",
                        action="store_true",
                        help="write each host's measured clock offset into the inventory "
                        "(clock_offset_ms), for the sampler to use",
                    ),
                ),
            ),
        ),
    ),
    Command(
        "lab",
        help="several hosts on this machine: namespaces on a bridge with sshd and "
        "node_exporter each, shaped links, an inventory (root only; docs/hosts.md)",
        dest="lab_command",
        metavar="VERB",
        actions=(
            Command(
                "up",
                help="make a lab of N hosts and write its inventory",
                run="gridbench.hosts.command:cmd_lab_up",
                parser={
                    "description": "Make N hosts NAME-1..NAME-N: a network namespace each on a "
                    "Linux bridge, with its own address in a free private /24, sshd (throw-away "
                    "keys) and node_exporter on :9100; an inventory for the families in the "
                    "lab's folder (/run/gridbench-lab/NAME). Root only."
                },
                args=(
                    arg("--hosts", type=int, default=3, metavar="N", help="how many (default 3)"),
                    arg(
                        "--rate",
                        metavar="RATE",
                        help="shape every host's link both ways with tc tbf, e.g. 20mbit",
                    ),
                    arg(
                        "--latency",
                        action="append",
                        default=[],
                        metavar="HOST[:PORTS]:DELAY",
                        help="reach HOST's ports (default 22,5201) through Toxiproxy, the round "
                        "trip grown by DELAY: lab-2:50ms, lab-2:7000:50ms (repeatable; the "
                        "proxies' addresses are in the inventory)",
                    ),
                    _LAB_NAME,
                ),
            ),
            Command(
                "status",
                help="what runs in a lab",
                run="gridbench.hosts.command:cmd_lab_status",
                args=(_LAB_NAME,),
            ),
            Command(
                "down",
                help="remove a lab: exactly what it made (also after a kill -9 of 'lab up')",
                run="gridbench.hosts.command:cmd_lab_down",
                args=(_LAB_NAME,),
            ),
        ),
    ),
)

#: Modules that add commands themselves, as before declarations: each has
#: ``register(subparsers)``, which adds its parser(s) and sets ``func(args)`` returning an
#: exit code; added after :data:`GENERIC`, before :data:`TOOLS`. Imported for every
#: ``--help``: a new command is better a declaration (docs/architecture.md).
COMMAND_MODULES: tuple[str, ...] = (
    "gridbench.campaign.command",  # campaign, exclude, include
)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, from the declarations: every family's commands (job flow
    first, then by name), every command set's (``gridbench.commands``), the generic ones,
    then :data:`COMMAND_MODULES`' and :data:`TOOLS`. No command's code is imported."""
    from gridbench.family import command_sets, families

    ap = argparse.ArgumentParser(prog="gridbench", description=DESCRIPTION, epilog=EPILOG)
    ap.add_argument("--version", action="version", version=f"gridbench {__version__}")
    ap.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="the full report tables after a run, and log warnings and details "
        "(anywhere on the line: 'gridbench run SPEC --verbose')",
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ui = CliUi()
    for fam in families():
        fam.add_commands(sub, ui)
    for commands in command_sets():  # what-if models: commands that are no family
        commands.add_commands(sub, ui)
    for command in GENERIC:
        command.add_to(sub, ui)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    for command in TOOLS:
        command.add_to(sub, ui)
    return ap
