"""The ``gridbench`` command line: the generic commands that work on a run of any
benchmark family (list, show, analyze, report, cleanup, compare, history, serve), plus the
commands each family adds through ``Family.add_commands``.

Exit codes: 0 success; 1 a threshold failed; 2 bad input (spec, results, usage);
3 the backend failed or could not be reached; 4 the measurement is invalid (with
``--fail-invalid``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gridbench import __version__
from gridbench.cliargs import RUN_HELP, add_results_arg, add_run_arg
from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BackendError,
    GridbenchError,
    resource_error,
)
from gridbench.family import (
    Cleanable,
    CleanupOutcome,
    command_sets,
    families,
    kind_of,
    not_applicable,
)
from gridbench.fmt import safe_markup

console = Console(highlight=False, emoji=False)  # ":fire:" in data stays text
err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


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

    def __init__(self) -> None:
        self.console = console
        self.err_console = err_console

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
    render_report(done.report, console, verbose=SETTINGS.verbose)
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
def cmd_analyze(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_show(run.path, as_json=args.json)


def cmd_report(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_show(run.path)


def cmd_list(args: argparse.Namespace) -> int:
    from gridbench.family import family
    from gridbench.states import TERMINAL_STYLES, state_tone, verdict_tone
    from gridbench.store.catalogue import list_runs

    runs = list_runs(_results_root(args))
    own: dict[str, dict[str, str]] = {}  # run id -> its family's own columns (heading: text)
    for r in runs:
        r["kind"] = kind_of(r)
        try:
            entry = family(r["kind"]).catalogue(r)
            r["target"], r["variant"] = entry.target, entry.variant
            own[str(r.get("id"))] = {c.heading: c.text for c in entry.columns}
        except GridbenchError as exc:  # a plugin that is not installed here
            r["target"], r["variant"] = "", f"({exc.message})"
    if args.json:
        print(json.dumps(runs, indent=1, default=str))
        return EXIT_OK
    root = _results_root(args)
    if not runs:  # a sentence, not an empty table; a folder not made yet is said so
        where = "" if root.is_dir() else " (the folder does not exist yet)"
        console.print(f"no runs in {safe_markup(root)}{where}; 'gridbench demo' makes one")
        return EXIT_OK
    # the families' own columns (job flow: trials), each heading once, in first-seen order
    headings = list(dict.fromkeys(h for cols in own.values() for h in cols))
    t = Table(title=f"experiments in {root}")
    for col in ("id", "name", "kind", "target", "variant", "status", *headings, "verdict"):
        t.add_column(col, overflow="fold")  # ids stay whole on a narrow terminal
    t.add_column("created", overflow="fold")
    for r in runs:
        cols = own.get(str(r.get("id")), {})
        cells = (
            r.get("id"),
            r.get("name"),
            r["kind"],
            r["target"],
            r["variant"],
            r.get("status", ""),
            *(cols.get(h, "–") for h in headings),
            r.get("verdict", ""),
            r.get("created", ""),
        )
        shown = [safe_markup(v) for v in cells]
        verdict_at = 6 + len(headings)
        tones = ((5, state_tone(r.get("status"))), (verdict_at, verdict_tone(r.get("verdict"))))
        for i, tone in tones:
            style = TERMINAL_STYLES[tone]  # one vocabulary: the colour follows the words
            shown[i] = f"[{style}]{shown[i]}[/]" if style and shown[i] else shown[i]
        t.add_row(*shown)
    console.print(t)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from gridbench.family import family_of
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    exp = run.read_experiment()
    family_of(run)  # a run no family reads is an error before its record is shown
    console.print_json(data=exp, ensure_ascii=True)  # bidi controls as \\u escapes, not obeyed
    if run.metrics_file.exists():
        from gridbench.pipeline import report_of
        from gridbench.report.terminal import render_report

        _, _, report = report_of(run)
        render_report(report, console, verbose=SETTINGS.verbose)
    else:
        console.print(f"[dim]not analysed yet: run 'gridbench analyze {safe_markup(run.path)}'[/]")
    return EXIT_OK


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Show what cleanup would run and signal (the family's dry run), ask, then do it.

    Nothing in a run folder is trusted (docs/concepts.md): the plan is shown first and
    acted on only when confirmed at the terminal or with ``--yes``; with no terminal and
    no ``--yes``, nothing is done.
    """
    from gridbench.family import family_of
    from gridbench.store.catalogue import resolve_run

    if args.lab is not None:
        return _cleanup_lab(args)
    if args.run is None:
        raise GridbenchError(
            "cleanup needs a run, or --lab NAME",
            fix="'gridbench cleanup RUN' (an id from 'gridbench list', or latest), or "
            "'gridbench cleanup --lab NAME' for a lab",
        )
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


# -- parser --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="gridbench",
        description="Evaluate distributed computing infrastructure: job flow through "
        "schedulers and grid CEs, storage, and every benchmark family installed. Per-"
        "component latency and throughput, the bottleneck, the knee, and whether the "
        "measurement can be trusted.",
        epilog="Exit codes: 0 ok, 1 threshold failed, 2 bad input, 3 backend failed, "
        "4 invalid measurement (--fail-invalid), 130 interrupted. Docs: docs/.",
    )
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
    for commands in command_sets():  # what-if models, hosts: commands that are no family
        commands.add_commands(sub, ui)

    # the generic commands on the results store: (name, help, takes a run, handler)
    generic: tuple[tuple[str, str, bool, Callable[[argparse.Namespace], int]], ...] = (
        ("analyze", "(re-)analyse a run of any family and rewrite its reports", True, cmd_analyze),
        ("report", "regenerate the HTML/CSV/JSON reports of a run", True, cmd_report),
        ("list", "list the runs of every family in the results store", False, cmd_list),
        ("show", "show one run's record and summary", True, cmd_show),
        (
            "cleanup",
            "cancel the jobs and delete the reservations a crashed or killed run left "
            "behind (or, with --lab, what a killed 'lab up' made)",
            False,  # RUN, or --lab NAME: added below
            cmd_cleanup,
        ),
    )
    parsers: dict[str, argparse.ArgumentParser] = {}
    for name, help_text, takes_run, handler in generic:
        p = parsers[name] = sub.add_parser(name, help=help_text)
        if takes_run:
            add_run_arg(p)
        add_results_arg(p)
        p.set_defaults(func=handler)
    parsers["analyze"].add_argument(
        "--json", action="store_true", help="print metrics JSON (docs/metrics.md)"
    )
    parsers["list"].add_argument("--json", action="store_true")
    p = parsers["cleanup"]
    p.add_argument("run", nargs="?", help=RUN_HELP)
    p.add_argument(
        "--lab",
        metavar="NAME",
        help="instead of a run: remove what 'gridbench lab up --name NAME' made (after a "
        "kill -9 too); the same as 'gridbench lab down --name NAME' (docs/hosts.md)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="only show what would be run and signalled"
    )
    p.add_argument(
        "-y", "--yes", action="store_true", help="act on the plan without asking for confirmation"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="clean up even though the run's process still seems alive",
    )

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return ap


# Subcommands that live in their own package: each module has ``register(subparsers)``,
# which adds its parser(s) and sets ``func`` returning an exit code.
COMMAND_MODULES: tuple[str, ...] = (
    "gridbench.compare.command",
    "gridbench.web.command",
    "gridbench.hosts.command",
)


#: The verbs that take a spec and work for a spec of any family.
SPEC_VERBS = ("validate", "plan", "run", "check")


def route_spec(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``gridbench VERB SPEC ...`` for a spec of another family than job flow: that
    family's ``VERB`` (``gridbench io run SPEC``), found from the spec itself; the words
    unchanged when the spec cannot be read (the verb's own loader then says why)."""
    from gridbench.family import DEFAULT_KIND, command_of, family_of_spec
    from gridbench.specload import parse_yaml, plain_data, read_spec_text

    if len(argv) < 2 or argv[0] not in SPEC_VERBS or argv[1].startswith("-"):
        return argv
    try:
        data = plain_data(parse_yaml(read_spec_text(argv[1]), argv[1]))
    except (GridbenchError, OSError, ValueError):
        return argv
    if argv[0] == "check" and isinstance(data, dict) and set(data) == {"hosts"}:
        return ["hosts", "check", *argv[1:]]  # an inventory of hosts (docs/hosts.md)
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
