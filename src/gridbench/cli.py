"""The ``gridbench`` command line: the generic commands that work on a run of any
benchmark family (list, show, analyze, report, cleanup, compare, history, serve), plus the
commands each family adds through ``Family.add_commands``.

Every command is a declaration (:mod:`gridbench.commandline`: name, help, arguments, and
the function that runs it as ``"module:function"``), so the parser is built without
importing any command's code: ``--help`` and ``--version`` answer at once, and a command
imports what it needs when it runs (docs/architecture.md, "Adding a command").

Exit codes: 0 success; 1 a threshold failed; 2 bad input (spec, results, usage);
3 the backend failed or could not be reached; 4 the measurement is invalid (with
``--fail-invalid``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench import __version__
from gridbench.commandline import RESULTS, RUN, RUN_HELP, SERVE_ARGS, Command, arg
from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BackendError,
    GridbenchError,
    resource_error,
)

if TYPE_CHECKING:
    from rich.console import Console

    from gridbench.family import CleanupOutcome, Ui


class LazyConsole:
    """A rich Console made on first use: rich costs tens of milliseconds to import, which
    ``gridbench --help`` and ``--version`` need not pay."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._made: Console | None = None

    @property
    def real(self) -> Console:
        """The console itself."""
        if self._made is None:
            from rich.console import Console

            self._made = Console(**self._options)
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


# ":fire:" in data stays text; outside a terminal (a pipe, a log) a line is never wrapped at
# 80 columns, so a path stays whole (issue 41)
console = LazyConsole(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())
err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def safe_markup(text: object) -> str:
    """:func:`gridbench.fmt.safe_markup` (imported when first needed: it brings rich)."""
    from gridbench.fmt import safe_markup as made_safe

    return made_safe(text)


class _Settings:
    """What the whole command line was asked for, beyond one command's arguments."""

    verbose = False


SETTINGS = _Settings()


def _results_root(args: argparse.Namespace) -> Path:
    from gridbench.store.layout import results_root

    return results_root(getattr(args, "results", None))


def _warm_dashboard(run_path: Path) -> None:
    """Pre-build the dashboard's view of the run, so that its first page view is fast even
    for a million jobs (docs/dashboard.md)."""
    from gridbench.web.results import warm

    warm(run_path, run_path.parent)


class CliUi:
    """What the command line lends each family's commands (``gridbench.family.Ui``)."""

    @property
    def console(self) -> Console:
        """Standard output's console."""
        return console.real

    @property
    def err_console(self) -> Console:
        """Standard error's console."""
        return err_console.real

    def results_root(self, args: argparse.Namespace) -> Path:
        """The results root of ``--results``, $GRIDBENCH_RESULTS or ./results."""
        return _results_root(args)

    def analyze_and_show(self, run_path: Path, *, as_json: bool = False) -> int:
        """Analyse through the run's family, write the reports, show the summary."""
        return _analyze_and_show(run_path, as_json=as_json)

    def serve(self, args: argparse.Namespace) -> int:
        """The dashboard (``gridbench serve``) with ``args``' options."""
        from gridbench.web.command import cmd_serve

        return cmd_serve(args)


def _analyze_and_show(run_path: Path, *, as_json: bool = False) -> int:
    from gridbench.pipeline import analyze_and_report
    from gridbench.report.terminal import render_report

    done = analyze_and_report(run_path, after=(_warm_dashboard,))
    if as_json:
        print(json.dumps(done.metrics, indent=1, default=str))
        return done.exit_code
    render_report(done.report, console.real, verbose=SETTINGS.verbose)
    if "html" in done.paths:
        console.print(f"HTML report: [cyan]{safe_markup(done.paths['html'])}[/]")
    csvs = [p for p in done.paths.values() if p.suffix == ".csv"]
    if csvs:
        console.print(
            f"tables (CSV): [cyan]{safe_markup(csvs[0].parent)}[/]; JSON: "
            f"[cyan]{safe_markup(done.paths.get('report_json', ''))}[/]"
        )
    return done.exit_code


# -- generic commands: any family's run -------------------------------------------------
def cmd_analyze(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_show(run.path, as_json=args.json)


def cmd_report(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_show(run.path)


def cmd_list(args: argparse.Namespace, ui: Ui) -> int:
    """Every run of the results root, newest first: one summary row each, from the
    store's index (:mod:`gridbench.listing`)."""
    from gridbench.listing import catalogue
    from gridbench.report.records_table import Column, print_records
    from gridbench.states import TERMINAL_STYLES, state_tone, verdict_tone

    root = _results_root(args)
    runs = catalogue(root)
    if args.json:
        print(json.dumps(runs, indent=1, default=str))
        return EXIT_OK
    if not runs:  # a sentence, not an empty table; a folder not made yet is said so
        where = "" if root.is_dir() else " (the folder does not exist yet)"
        console.print(f"no runs in {safe_markup(root)}{where}; 'gridbench demo' makes one")
        return EXIT_OK
    # the families' own columns (job flow: trials), each heading once, in first-seen order
    headings = list(dict.fromkeys(h for r in runs for h, _, _ in r["columns"]))
    # ids, states, verdicts and counts stay whole at any width (issue 41); the rest wraps
    columns = [
        Column("id", whole=True),
        Column("status", whole=True),
        Column("verdict", whole=True),
        *(Column(h, whole=True) for h in headings),
        *(Column(h) for h in ("kind", "name", "target", "variant")),
        Column("created", whole=True),
    ]
    rows = []
    for r in runs:
        cols = {h: text for h, text, _ in r["columns"]}
        cells = (
            r.get("id"),
            r.get("status", ""),
            r.get("verdict", ""),
            *(cols.get(h, "–") for h in headings),
            r["kind"],
            r.get("name"),
            r["target"],
            r["variant"],
            _when(r.get("created")),
        )
        shown = [safe_markup(v) for v in cells]
        tones = ((1, state_tone(r.get("status"))), (2, verdict_tone(r.get("verdict"))))
        for i, tone in tones:
            style = TERMINAL_STYLES[tone]  # one vocabulary: the colour follows the words
            shown[i] = f"[{style}]{shown[i]}[/]" if style and shown[i] else shown[i]
        rows.append(shown)
    print_records(console.real, columns, rows, title=f"experiments in {safe_markup(root)}")
    return EXIT_OK


def _when(created: object) -> str:
    """An ISO time as the list shows it: to the minute, UTC (``2026-11-29 04:50``); what
    is not such a time, as it is."""
    text = str(created or "")
    if len(text) >= 16 and text[10] == "T" and text[:4].isdigit():
        return text[:10] + " " + text[11:16]
    return text


def cmd_show(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.family import family_of
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    exp = run.read_experiment()
    family_of(run)  # a run no family reads is an error before its record is shown
    # the summary first (issue 41): what the run is and found, before its record
    if run.metrics_file.exists():
        from gridbench.pipeline import report_of
        from gridbench.report.terminal import render_report

        _, _, report = report_of(run)
        render_report(report, console.real, verbose=SETTINGS.verbose)
    else:
        console.print(f"[dim]not analysed yet: run 'gridbench analyze {safe_markup(run.path)}'[/]")
    if SETTINGS.verbose:
        console.print_json(data=exp, ensure_ascii=True)  # bidi controls as \\u escapes
        return EXIT_OK
    # the record's short fields; a long list (an io run's raw files) is counted, not listed
    short = {k: v for k, v in exp.items() if not isinstance(v, list | dict)}
    long = [k for k, v in exp.items() if isinstance(v, list | dict)]
    console.print_json(data=short, ensure_ascii=True)  # bidi controls as \\u escapes
    if long:
        console.print(
            f"[dim]{len(long)} more field(s) ({safe_markup(', '.join(long))}): "
            f"'gridbench show RUN --verbose' prints them; the record is "
            f"{safe_markup(run.experiment_file)}[/]",
            soft_wrap=True,
        )
    return EXIT_OK


def cmd_cleanup(args: argparse.Namespace, ui: Ui) -> int:
    """Show what cleanup would run and signal (the family's dry run), ask, then do it.

    Nothing in a run folder is trusted (docs/concepts.md): the plan is shown first and
    acted on only when confirmed at the terminal or with ``--yes``; with no terminal and
    no ``--yes``, nothing is done.
    """
    from gridbench.family import Cleanable, family_of, not_applicable
    from gridbench.store.catalogue import resolve_run

    if args.lab is not None:
        return _cleanup_lab(args)
    if args.run is None:
        raise GridbenchError(
            "cleanup needs a run, or --lab NAME",
            fix="'gridbench cleanup RUN' (an id from 'gridbench list', or latest), or "
            "'gridbench cleanup --lab NAME' for a lab",
        )
    done = _cleanup_campaign(args)  # a campaign folder: every unit's run it left behind
    if done is not None:
        return done
    run = resolve_run(args.run, _results_root(args))
    fam = family_of(run)
    if not isinstance(fam, Cleanable):
        raise not_applicable(fam, "cleanup", "its runs leave nothing behind to cancel")
    plan = fam.cleanup(run, dry_run=True, force=args.force)
    _print_outcome(plan)
    if args.dry_run:
        return EXIT_BACKEND if plan.errors else EXIT_OK
    if not args.yes and not _confirmed(run.path):
        console.print("not confirmed: nothing was done")
        return EXIT_OK
    outcome = fam.cleanup(run, dry_run=False, force=args.force)
    _print_outcome(outcome)
    return EXIT_BACKEND if outcome.errors else EXIT_OK


def _cleanup_campaign(args: argparse.Namespace) -> int | None:
    """``cleanup CAMPAIGN`` (a campaign folder or id): the plan for every unit it left
    behind, confirm, act; None when ``args.run`` names no campaign."""
    from gridbench.campaign.cleanup import campaign_named, cleanup_campaign

    campaign = campaign_named(args.run, _results_root(args))
    if campaign is None:
        return None
    plan = cleanup_campaign(campaign, dry_run=True, force=args.force)
    _print_outcome(plan)
    if args.dry_run:
        return EXIT_BACKEND if plan.errors else EXIT_OK
    if not args.yes and not _confirmed(campaign.path):
        console.print("not confirmed: nothing was done")
        return EXIT_OK
    outcome = cleanup_campaign(campaign, dry_run=False, force=args.force)
    _print_outcome(outcome)
    return EXIT_BACKEND if outcome.errors else EXIT_OK


def _cleanup_lab(args: argparse.Namespace) -> int:
    """``cleanup --lab NAME``: show what the lab's book records, confirm, remove it."""
    from gridbench.hosts.lab import lab_down, lab_status

    if args.run is not None:
        raise GridbenchError(
            "give a run or --lab NAME, not both", fix="clean up the lab and the run in turn"
        )
    lines, _ = lab_status(args.lab)
    console.print(f"lab {safe_markup(args.lab)} (every recorded namespace, link and process):")
    for line in lines:
        console.print(f"  {safe_markup(line)}")
    if args.dry_run:
        return EXIT_OK
    if not args.yes and not _confirmed(Path(f"lab {args.lab}")):
        console.print("not confirmed: nothing was done")
        return EXIT_OK
    errors = lab_down(args.lab, lambda line: console.print(safe_markup(line)))
    for e in errors:
        err_console.print(f"[red]not removed[/]: {safe_markup(e)}")
    if not errors:
        console.print(f"lab {safe_markup(args.lab)} removed")
    return EXIT_BACKEND if errors else EXIT_OK


def _print_outcome(outcome: CleanupOutcome) -> None:
    for line in outcome.lines:
        console.print(safe_markup(line))
    for e in outcome.errors:
        err_console.print(f"[red]{safe_markup(e)}[/]")


def _confirmed(run_path: Path) -> bool:
    """The answer at the terminal to "clean up as above?"; no terminal is an error."""
    if not sys.stdin.isatty():
        raise GridbenchError(
            "cleanup needs confirmation: it runs and signals what the plan above lists",
            where=str(run_path),
            fix="read the plan above ('gridbench cleanup RUN --dry-run' shows it) and pass "
            "--yes to act on it, or run the command at a terminal to be asked",
        )
    answer = console.input(safe_markup("Run and signal what is listed above? [y/N] "))
    return answer.strip().lower() in ("y", "yes")


# -- the command line: declared (gridbench.commandline) ------------------------------------
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
        run="gridbench.cli:cmd_analyze",
        args=(
            RUN,
            RESULTS,
            arg("--json", action="store_true", help="print metrics JSON (docs/metrics.md)"),
        ),
    ),
    Command(
        "report",
        help="regenerate the HTML/CSV/JSON reports of a run",
        run="gridbench.cli:cmd_report",
        args=(RUN, RESULTS),
    ),
    Command(
        "list",
        help="list the runs of every family in the results store",
        run="gridbench.cli:cmd_list",
        args=(RESULTS, _JSON),
    ),
    Command(
        "show",
        help="show one run's record and summary",
        run="gridbench.cli:cmd_show",
        args=(RUN, RESULTS),
    ),
    Command(
        "cleanup",
        help="cancel the jobs and delete the reservations a crashed or killed run left "
        "behind (or, with --lab, what a killed 'lab up' made)",
        run="gridbench.cli:cmd_cleanup",
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


#: The verbs that take a spec and work for a spec of any family.
SPEC_VERBS = ("validate", "plan", "run", "check")


def route_spec(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``gridbench VERB SPEC ...`` for a spec of another family than job flow: that
    family's ``VERB`` (``gridbench io run SPEC``), found from the spec itself; the words
    unchanged when the spec cannot be read (the verb's own loader then says why)."""
    if len(argv) < 2 or argv[0] not in SPEC_VERBS or argv[1].startswith("-"):
        return argv
    from gridbench.family import DEFAULT_KIND, command_of, family_of_spec
    from gridbench.specload import parse_yaml, plain_data, read_spec_text

    try:
        data = plain_data(parse_yaml(read_spec_text(argv[1]), argv[1]))
    except (GridbenchError, OSError, ValueError):
        return argv
    if argv[0] == "check" and isinstance(data, dict) and set(data) == {"hosts"}:
        return ["hosts", "check", *argv[1:]]  # an inventory of hosts (docs/hosts.md)
    if argv[0] != "check" and isinstance(data, dict) and "components" in data:
        return ["campaign", *argv]  # a campaign of units (docs/campaigns.md)
    fam = family_of_spec(data)
    if fam is None or fam.name == DEFAULT_KIND:
        return argv
    words = command_of(fam)
    verbs = _verbs(parser, words)
    if argv[0] not in verbs:
        raise GridbenchError(
            f"{argv[1]} is a {fam.name} spec, and {fam.name} has no '{argv[0]}'",
            fix="one of: "
            + ", ".join(
                f"gridbench {' '.join([*words, v])} {argv[1]}"
                for v in sorted(verbs - {"report"})  # report takes a run, not a spec
            ),
        )
    return [*words, *argv]


def _verbs(parser: argparse.ArgumentParser, words: list[str]) -> set[str]:
    """The subcommands under ``gridbench WORDS``."""
    for action in parser._actions:  # argparse keeps its subparsers there (no public API)
        if isinstance(action, argparse._SubParsersAction):
            if not words:
                return set(action.choices)
            sub = action.choices.get(words[0])
            return _verbs(sub, words[1:]) if sub is not None else set()
    return set()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # -v/--verbose is global but users put it after the command (k6 and fio take it there)
    cut = argv.index("--") if "--" in argv else len(argv)
    verbose = any(a in ("-v", "--verbose") for a in argv[:cut])
    head = [a for a in argv[:cut] if a not in ("-v", "--verbose")]
    if head[:1] == ["--version"]:  # what argparse's version action prints, with no parser
        print(f"gridbench {__version__}")
        return EXIT_OK
    try:
        parser = build_parser()
        head = route_spec(parser, head)
        args = parser.parse_args([*(["--verbose"] if verbose else []), *head, *argv[cut:]])
    except KeyboardInterrupt:  # Ctrl-C while the parser's imports load
        return EXIT_INTERRUPTED
    except GridbenchError as exc:  # a spec routed to a family without that verb
        err_console.print(f"[red]error[/]: {safe_markup(exc)}")
        return EXIT_INPUT
    SETTINGS.verbose = bool(args.verbose)
    import logging

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except BackendError as exc:
        err_console.print(f"[red]error[/]: {safe_markup(exc)}")
        return EXIT_BACKEND
    except GridbenchError as exc:
        err_console.print(f"[red]error[/]: {safe_markup(exc)}")
        return EXIT_INPUT
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (keeps the exit flush quiet)
        return EXIT_OK
    except OSError as exc:  # a full disk or a read-only store is the machine's, not a bug
        err = resource_error(exc)
        if err is None:
            return _internal_error(args, exc)
        err_console.print(f"[red]error[/]: {safe_markup(err)}")
        return EXIT_INPUT
    except Exception as exc:
        return _internal_error(args, exc)


def _internal_error(args: argparse.Namespace, exc: Exception) -> int:
    """A bug of ours: one line, the trace only on request (-v)."""
    if args.verbose:
        raise exc
    err_console.print(
        f"[red]internal error[/]: {safe_markup(f'{type(exc).__name__}: {exc}')}\n"
        "  fix: re-run with -v for the traceback and report it; recorded results are kept "
        "and can be re-analysed with 'gridbench analyze'"
    )
    return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
