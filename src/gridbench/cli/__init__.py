"""The ``gridbench`` command line: the generic commands that work on a run of any
benchmark family (list, show, analyze, report, cleanup, compare, history, serve), plus the
commands each family adds through ``Family.add_commands``.

Every command is a declaration (:mod:`gridbench.commandline`: name, help, arguments, and
the function that runs it as ``"module:function"``), so the parser is built without
importing any command's code: ``--help`` and ``--version`` answer at once, and a command
imports what it needs when it runs (docs/architecture.md, "Adding a command").

This package's ``main`` parses the line and runs the command; its neighbours each hold one
job: :mod:`.declared` (the declarations and the parser), :mod:`.ui` (what the command line
lends a family's commands), :mod:`.store_commands` and :mod:`.cleanup` (the generic
commands' code); the consoles are :mod:`gridbench.console`.

Exit codes: 0 success; 1 a threshold failed; 2 bad input (spec, results, usage);
3 the backend failed or could not be reached; 4 the measurement is invalid (with
``--fail-invalid``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gridbench import __version__
from gridbench.console import SETTINGS, err_console, safe_markup
from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BackendError,
    GridbenchError,
    resource_error,
)

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
        from gridbench.cli.declared import build_parser  # not for --version: no parser

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
