"""The generic commands on a run of any family in the results store: ``analyze``,
``report``, ``list`` and ``show`` (declared in :mod:`gridbench.cli.declared`; each takes
the parsed arguments and the command line's :class:`~gridbench.family.Ui`)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from gridbench.cli.ui import analyze_and_show, results_root
from gridbench.console import SETTINGS, console, safe_markup
from gridbench.errors import EXIT_OK

if TYPE_CHECKING:
    from gridbench.family import Ui


def cmd_analyze(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, results_root(args))
    return analyze_and_show(run.path, as_json=args.json)


def cmd_report(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, results_root(args))
    return analyze_and_show(run.path)


def cmd_list(args: argparse.Namespace, ui: Ui) -> int:
    """Every run of the results root, newest first: one summary row each, from the
    store's index (:mod:`gridbench.listing`)."""
    from gridbench.listing import catalogue
    from gridbench.report.records_table import Column, print_records
    from gridbench.states import TERMINAL_STYLES, state_tone, verdict_tone

    root = results_root(args)
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

    run = resolve_run(args.run, results_root(args))
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
