"""``gridbench study``: validate, plan, serve, import and report usability studies
(docs/study.md).

Exit codes as for every family: 0 ok, 2 bad input (the spec, a CSV, the options) or a
results folder that refuses a write, 130 interrupted. Analysis and reports go through the
generic path (``Ui.analyze_and_show``).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from rich.table import Table

from gridbench.cliargs import print_json
from gridbench.errors import EXIT_OK, GridbenchError, ResultsError
from gridbench.family import Ui
from gridbench.fmt import safe_markup
from gridbench.study.model import StudySpec


def cmd_validate(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.study.importer import check_mapping
    from gridbench.study.load import load_study_spec

    spec, _ = load_study_spec(args.spec, args.set)
    check_mapping(spec)
    tasks = sum(len(t.tasks) for t in spec.tools)
    ui.console.print(
        f"[green]ok[/]: {safe_markup(args.spec)} is a valid study spec "
        f"({len(spec.tools)} tools, {tasks} timed tasks per participant, "
        f"{len(spec.participants)} participants, {len(spec.comparisons)} comparisons)"
    )
    for tool in spec.tools:
        ui.console.print(
            f"  tool {safe_markup(tool.id)}: {safe_markup(tool.title)}; tasks "
            + ", ".join(safe_markup(t.id) for t in tool.tasks)
        )
    for c in spec.comparisons:
        side = {"a": f"{c.a} better", "b": f"{c.b} better", "either": "two-sided"}[c.better]
        ui.console.print(
            f"  compare {safe_markup(c.a)} vs {safe_markup(c.b)} ({safe_markup(side)}): "
            + ", ".join(c.metrics)
        )
    q = spec.questionnaires
    parts = [
        n
        for n, on in (("SUS", q.sus), ("Likert", q.likert), ("failure scale", q.failure_scale))
        if on
    ]
    parts += [f"{len(q.background)} background questions", f"{len(q.free_text)} free-text"]
    ui.console.print("  questionnaires: " + ", ".join(parts))
    if not spec.participants:
        ui.console.print(
            "  [yellow]no participants declared[/]: fine for an import; "
            "'study serve' needs participants: to issue links"
        )
    return EXIT_OK


def plan_document(spec: StudySpec) -> dict[str, Any]:
    """The counterbalanced design as data: the square and each participant's orders."""
    from gridbench.study.design import balanced_latin_square, session_order

    tools = [t.id for t in spec.tools]
    square = (
        balanced_latin_square(len(tools)) if spec.order.latin_square else [list(range(len(tools)))]
    )
    people = []
    for who in spec.participants:
        order = session_order(spec, who)
        people.append(
            {
                "participant": who,
                "square_row": order.square_row,
                "tools": order.tool_order,
                "tasks": order.task_order,
            }
        )
    return {
        "name": spec.name,
        "tools": tools,
        "latin_square": spec.order.latin_square,
        "shuffle_tasks": spec.order.shuffle_tasks,
        "seed": spec.order.seed,
        "square": [[tools[i] for i in row] for row in square],
        "participants": people,
    }


def cmd_plan(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.study.load import load_study_spec
    from gridbench.testplan import plan_table

    spec, _ = load_study_spec(args.spec, args.set)
    doc = plan_document(spec)
    if args.json:
        return print_json(doc)
    if spec.plan is not None:
        declared = plan_table(spec.plan)
        t = Table(title=f"test plan: {safe_markup(spec.name)}")
        for column in declared.columns:
            t.add_column(column.title)
        for row in declared.rows:
            t.add_row(*(safe_markup(str(x)) for x in row))
        ui.console.print(t)
    square = doc["square"]
    what = "balanced Latin square (Williams)" if spec.order.latin_square else "fixed order"
    t = Table(title=f"tool order: {what}, {len(square)} rows")
    t.add_column("row", justify="right")
    for i in range(len(doc["tools"])):
        t.add_column(f"{i + 1}.")
    for i, row in enumerate(square):
        t.add_row(str(i), *(safe_markup(x) for x in row))
    ui.console.print(t)
    if not doc["participants"]:
        ui.console.print(
            "no participants declared: each gets the next row in the order of participants:"
        )
        return EXIT_OK
    shuffled = spec.order.shuffle_tasks
    t = Table(title="participants")
    for col in ("participant", "row", "tool order", *(("task order",) if shuffled else ())):
        t.add_column(col, justify="right" if col == "row" else "left")
    for p in doc["participants"]:
        cells = [safe_markup(p["participant"]), str(p["square_row"])]
        cells.append(safe_markup(" -> ".join(p["tools"])))
        if shuffled:
            tasks = "; ".join(f"{tool}: {', '.join(p['tasks'][tool])}" for tool in p["tools"])
            cells.append(safe_markup(tasks))
        t.add_row(*cells)
    ui.console.print(t)
    rows = len(square)
    n = len(doc["participants"])
    if n % rows:
        ui.console.print(
            f"[yellow]{n} participants over {rows} rows[/]: the square is balanced only with "
            f"a multiple of {rows} participants"
        )
    ui.console.print(
        f"tasks shuffled within each tool (seed {spec.order.seed}, recorded per session)"
        if shuffled
        else "tasks in the order the spec declares them (order.shuffle_tasks: false)"
    )
    return EXIT_OK


def cmd_import(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.study.importer import import_responses
    from gridbench.study.load import load_study_spec
    from gridbench.study.records import append
    from gridbench.study.runs import create_study_run, discard_run, mark_complete

    spec, data = load_study_spec(args.spec, args.set)
    responses = Path(args.responses)
    survey = Path(args.survey) if args.survey else None
    # everything is read and checked before the run folder exists: a bad CSV leaves none
    result = import_responses(
        spec, responses, survey_csv=survey, accept_low_sus=args.accept_low_sus
    )
    if not result.records:
        raise GridbenchError(
            "the CSV holds no answers",
            where=str(responses),
            fix="give the export with its data rows (docs/study.md, generic layout)",
        )
    for w in result.warnings[:50]:
        ui.err_console.print(f"[yellow]warning[/]: {safe_markup(w)}")
    if len(result.warnings) > 50:
        ui.err_console.print(f"[yellow]warning[/]: ... and {len(result.warnings) - 50} more")
    run = create_study_run(
        ui.results_root(args),
        spec,
        data,
        delivery="import",
        out=Path(args.out) if args.out else None,
        participants=None if spec.participants else len(result.participants),
    )
    try:
        for record in result.records:
            append(run.path, record)
        mark_complete(
            run,
            imported={
                "responses": responses.name,
                "survey": survey.name if survey else None,
                "rows": result.rows,
                "records": len(result.records),
                "warnings": list(result.warnings[:200]),
            },
        )
    except (OSError, GridbenchError) as exc:
        discard_run(run)  # half an import is worse than none: nothing is left behind
        raise ResultsError(
            f"the imported records could not be written: {exc}",
            where=str(run.path),
            fix="free disk space or fix the folder's permissions, then import again",
        ) from None
    kinds = Counter(r.type for r in result.records)
    ui.console.print(
        f"imported {len(result.records)} records ({len(result.participants)} participants, "
        f"{result.rows} rows: "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        + f") into [cyan]{safe_markup(run.path)}[/]"
    )
    return ui.analyze_and_show(run.path)


def cmd_report(args: argparse.Namespace, ui: Ui) -> int:
    """Same as ``gridbench report RUN``, kept under ``study`` for the habit."""
    from gridbench.store.catalogue import resolve_run
    from gridbench.study.report import FREE_TEXT_KEY

    run = resolve_run(args.run, ui.results_root(args))
    if args.free_text is not None:  # remembered: every later report of the run follows it
        run.update_experiment(**{FREE_TEXT_KEY: args.free_text == "keep"})
    return ui.analyze_and_show(run.path, as_json=args.json)
