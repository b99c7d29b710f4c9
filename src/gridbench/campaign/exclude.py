"""``gridbench exclude RUN TRIAL --reason "..."`` and ``gridbench include RUN TRIAL``:
a trial excluded by hand with a reason, or taken back (:mod:`gridbench.store.exclusions`).
The decision is appended beside the run (``exclusions.jsonl``; no measured file is
rewritten), then the run is analysed again, so that every figure, report, comparison,
the dashboard and the campaign documents go without the trial and say why.
"""

from __future__ import annotations

import argparse
from typing import Any

from gridbench.cliargs import RUN_HELP, add_results_arg


def _act(args: argparse.Namespace, *, excluded: bool) -> int:
    from rich.console import Console

    from gridbench.errors import EXIT_OK, ResultsError
    from gridbench.family import family_of, not_applicable
    from gridbench.fmt import safe_markup
    from gridbench.pipeline import analyze_and_report
    from gridbench.store import exclusions
    from gridbench.store.catalogue import resolve_run
    from gridbench.store.layout import results_root

    con = Console(highlight=False, emoji=False)
    run = resolve_run(args.run, results_root(args.results))
    fam = family_of(run)
    if not isinstance(fam, exclusions.Trialled):
        raise not_applicable(
            fam,
            "exclude",
            "its runs have no trials to exclude (a figure's repetitions "
            "are judged by its family's own validity rules)",
        )
    trials = fam.excludable_ids(run)
    if args.trial not in trials:
        from difflib import get_close_matches

        near = get_close_matches(args.trial, trials, 1, 0.5)
        raise ResultsError(
            f"the run has no trial {args.trial!r}",
            where=str(run.path),
            fix=(f"did you mean {near[0]!r}? " if near else "")
            + f"its trials: {', '.join(trials) or 'none'}",
        )
    in_force = exclusions.in_force(run)
    if not excluded and args.trial not in in_force:
        con.print(f"trial {safe_markup(args.trial)} is not excluded: nothing to take back")
        return EXIT_OK
    exclusions.record(run, args.trial, excluded=excluded, reason=args.reason or "")
    word = "excluded by hand" if excluded else "included again"
    con.print(
        f"{safe_markup(run.path.name)}: trial {safe_markup(args.trial)} {word}"
        + (f" ({safe_markup(args.reason)})" if args.reason else "")
    )
    done = analyze_and_report(run.path)
    con.print(
        f"re-analysed: verdict {safe_markup(done.family.verdict(done.metrics))}; report "
        f"[cyan]{safe_markup(done.paths.get('html', ''))}[/]; a campaign that ran it: "
        "'gridbench campaign report CAMPAIGN'"
    )
    return EXIT_OK


def cmd_exclude(args: argparse.Namespace) -> int:
    return _act(args, excluded=True)


def cmd_include(args: argparse.Namespace) -> int:
    return _act(args, excluded=False)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``gridbench exclude`` and ``gridbench include``."""
    p = sub.add_parser(
        "exclude",
        help="exclude a trial of a run by hand, with the reason (every report says it)",
        description="Exclude a trial of a run by hand, with the reason: recorded beside the "
        "run (exclusions.jsonl; no measured file is rewritten), then the run is analysed "
        "again without it. Reports, compare, the dashboard and campaign documents show the "
        "exclusion and its reason; 'gridbench include' takes it back.",
    )
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("trial", help="the trial's id (its folder under trials/, e.g. p01-t02)")
    p.add_argument("--reason", required=True, help="why the trial does not measure the system")
    add_results_arg(p)
    p.set_defaults(func=cmd_exclude)
    q = sub.add_parser(
        "include",
        help="take back a trial's exclusion by hand (its figures count again)",
        description="Take back an exclusion made with 'gridbench exclude' (recorded too), "
        "then analyse the run again with the trial.",
    )
    q.add_argument("run", help=RUN_HELP)
    q.add_argument("trial", help="the trial's id")
    q.add_argument("--reason", default="", help="why it counts again (optional)")
    add_results_arg(q)
    q.set_defaults(func=cmd_include)
