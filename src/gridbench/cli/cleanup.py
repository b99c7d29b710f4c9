"""``gridbench cleanup``: what a crashed or killed run, a campaign's units or a lab left
behind, shown as a plan first and acted on only when confirmed (declared in
:mod:`gridbench.cli.declared`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gridbench.cli.ui import results_root
from gridbench.console import console, err_console, safe_markup
from gridbench.errors import EXIT_BACKEND, EXIT_OK, GridbenchError

if TYPE_CHECKING:
    from gridbench.family import CleanupOutcome, Ui


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
    run = resolve_run(args.run, results_root(args))
    fam = family_of(run)
    if not isinstance(fam, Cleanable):
        raise not_applicable(fam, "cleanup", "its runs leave nothing behind to cancel")
    return _plan_then_act(
        lambda dry_run: fam.cleanup(run, dry_run=dry_run, force=args.force), run.path, args
    )


def _cleanup_campaign(args: argparse.Namespace) -> int | None:
    """``cleanup CAMPAIGN`` (a campaign folder or id): the plan for every unit it left
    behind, confirm, act; None when ``args.run`` names no campaign."""
    from gridbench.campaign.cleanup import campaign_named, cleanup_campaign

    campaign = campaign_named(args.run, results_root(args))
    if campaign is None:
        return None
    return _plan_then_act(
        lambda dry_run: cleanup_campaign(campaign, dry_run=dry_run, force=args.force),
        campaign.path,
        args,
    )


def _plan_then_act(
    cleanup: Callable[[bool], CleanupOutcome], path: Path, args: argparse.Namespace
) -> int:
    """The plan (``cleanup(True)``, a dry run) shown; then, unless ``--dry-run``, and once
    confirmed (``--yes`` or at the terminal), ``cleanup(False)`` and what it did. Exit 3
    when either had errors."""
    plan = cleanup(True)
    _print_outcome(plan)
    if args.dry_run:
        return EXIT_BACKEND if plan.errors else EXIT_OK
    if not args.yes and not _confirmed(path):
        console.print("not confirmed: nothing was done")
        return EXIT_OK
    outcome = cleanup(False)
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
