"""``gridbench campaign validate|plan|run|status|report CAMPAIGN`` (docs/campaigns.md).

Light at import (the command line is built from it): every module the actions need is
imported in the action.

Exit codes: 0 every unit passed (validate, plan: the file is good); 1 a unit did not pass
or the campaign was suspended; 2 a bad campaign file (every problem with its file:line
and the fix); 130 interrupted (``campaign run`` again resumes).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gridbench.cliargs import add_results_arg

EPILOG = """examples:
  gridbench campaign validate examples/campaign-xtreemos.yaml
  gridbench campaign plan examples/campaign-xtreemos.yaml
  gridbench campaign run examples/campaign-xtreemos.yaml      # again: resumes, or a new one
  gridbench campaign status examples/campaign-xtreemos.yaml
  gridbench campaign report examples/campaign-xtreemos.yaml   # the IEEE 829 documents again
  gridbench exclude RUN p01-t02 --reason "the bridge was down"  # then: campaign report"""


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, emoji=False)


def _err(message: str) -> None:
    from rich.console import Console

    from gridbench.fmt import safe_markup

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[red]error[/]: {safe_markup(message)}"
    )


def _root(args: argparse.Namespace) -> Path:
    from gridbench.store.layout import results_root

    return results_root(getattr(args, "results", None)).resolve()


def _load_checked(path: str) -> tuple[Any, list[Any]]:
    """The campaign and its units (families found), or the SpecError naming every
    problem."""
    from gridbench.campaign.model import load_campaign, resolve_units

    parsed = load_campaign(path)
    return parsed, resolve_units(parsed)


def cmd_validate(args: argparse.Namespace) -> int:
    from gridbench.campaign.units import validate_units
    from gridbench.errors import EXIT_INPUT, EXIT_OK
    from gridbench.fmt import safe_markup

    parsed, units = _load_checked(args.campaign)
    errors = validate_units(parsed, units)
    if errors:
        for e in errors:
            _err(e)
        return EXIT_INPUT
    con = _console()
    reps = sum(u.spec.repetitions for u in units)
    fams = sorted({u.family for u in units})
    con.print(
        f"[green]ok[/]: {safe_markup(args.campaign)} is a valid campaign "
        f"({len(parsed.spec.components)} components, {len(units)} units in "
        f"{len(fams)} families: {', '.join(fams)}; {reps} repetitions)"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from rich.table import Table

    from gridbench.campaign.run_plan import prepare
    from gridbench.errors import EXIT_INPUT, EXIT_OK
    from gridbench.fmt import safe_markup
    from gridbench.units import format_duration

    parsed, units = _load_checked(args.campaign)
    plan, errors = prepare(parsed, units)
    if errors:
        for e in errors:
            _err(e)
        return EXIT_INPUT
    rows = []
    total, unknown = 0.0, 0
    for u in units:
        est = plan.estimates.get(u.key)
        secs = est.total_seconds if est is not None else None
        if secs is None:
            unknown += 1
        else:
            total += secs
        rows.append(
            {
                "unit": u.key,
                "family": u.family,
                "spec": u.spec.spec,
                "repetitions": u.spec.repetitions,
                "hosts": list(u.hosts),
                "estimated_seconds": None if secs is None else round(secs, 1),
                "note": est.note if est is not None else "",
            }
        )
    if args.json:
        doc = {
            "name": parsed.spec.name,
            "units": rows,
            "estimated_seconds": round(total, 1),
            "unknown": unknown,
        }
        print(json.dumps(doc, indent=1))
        return EXIT_OK
    con = _console()
    t = Table(title=f"campaign plan: {safe_markup(parsed.spec.name)}")
    for col in ("unit", "family", "spec", "repetitions", "hosts", "estimate"):
        t.add_column(col, justify="right" if col in ("repetitions", "estimate") else "left")
    for r in rows:
        secs = r["estimated_seconds"]
        t.add_row(
            safe_markup(r["unit"]),
            safe_markup(r["family"]),
            safe_markup(r["spec"]),
            str(r["repetitions"]),
            safe_markup(", ".join(r["hosts"])),
            format_duration(round(secs)) if secs is not None else safe_markup(r["note"] or "–"),
        )
    con.print(t)
    con.print(
        f"{len(units)} units; estimated in all: {format_duration(round(total))}"
        + (f" (and {unknown} unit(s) whose family gives no estimate)" if unknown else "")
        + "; the campaign's own work adds well under a second a unit"
    )
    con.print("[dim]dry run: nothing was started[/]")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from gridbench.campaign.documents import write_documents
    from gridbench.campaign.folder import INTERRUPTED
    from gridbench.campaign.run_plan import plan_of
    from gridbench.campaign.runner import CampaignRunner
    from gridbench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_THRESHOLD
    from gridbench.fmt import safe_markup, visible

    parsed, units = _load_checked(args.campaign)
    con = _console()
    runner = CampaignRunner(
        parsed,
        plan_of(parsed, units),
        _root(args),
        new=args.new,
        parallel=args.parallel,
        say=lambda line: con.print(visible(line), markup=False, highlight=False),
    )
    status = runner.execute()
    assert runner.folder is not None
    view, index = write_documents(runner.folder)
    _show(con, view)
    con.print(f"documents: [cyan]{safe_markup(index)}[/] (and .md beside each)")
    if status == INTERRUPTED:
        return EXIT_INTERRUPTED
    return EXIT_OK if view.counts()["passed"] == len(view.units) else EXIT_THRESHOLD


def _show(con: Any, view: Any) -> None:
    from rich.table import Table

    from gridbench.campaign.document_parts import outcome_sentence
    from gridbench.fmt import safe_markup
    from gridbench.states import TERMINAL_STYLES

    tones = {"passed": "ok", "failed": "bad", "error": "bad", "timeout": "bad"}
    t = Table(
        title=f"campaign {safe_markup(view.folder.id)} ({safe_markup(view.doc.get('status'))})"
    )
    for col in ("component", "unit", "family", "verdict", "runs", "why"):
        t.add_column(col, overflow="fold")
    for u in view.units:
        style = TERMINAL_STYLES[tones.get(u.verdict, "info")]  # type: ignore[index]
        verdict = f"[{style}]{u.verdict}[/]" if style else u.verdict
        runs = ", ".join(r.final.run or "–" for r in u.reps if r.final is not None)
        why = "; ".join(x for r in u.reps if r.judged for x in r.judged.reasons) or u.why_not_run
        t.add_row(
            safe_markup(u.component.id),
            safe_markup(u.unit.id),
            safe_markup(u.record.get("family", "")),
            verdict,
            safe_markup(runs or "–"),
            safe_markup(why),
        )
    con.print(t)
    incidents = view.incidents.items
    con.print(f"{safe_markup(outcome_sentence(view))}; {len(incidents)} incident(s)")
    for i in incidents:
        con.print(
            f"  {i.id} [{'red' if i.severity != 'minor' else 'yellow'}]{i.severity}[/] "
            f"{safe_markup(i.summary)}"
        )
    if view.previous is not None:
        regs = sum(len(u.regressions) for u in view.previous.units)
        changed = sum(len(u.changes) for u in view.previous.units)
        con.print(
            f"against the previous campaign {safe_markup(view.previous.campaign)}: {changed} "
            f"significant change(s), {regs} regression(s)"
        )


def _campaign_of(args: argparse.Namespace) -> Any:
    """The campaign ``args.campaign`` names: a campaign file (its latest campaign), a
    campaign folder, or a campaign id under the results root."""
    from gridbench.campaign.folder import find_campaign, named
    from gridbench.errors import ResultsError, SpecError

    root = _root(args)
    ref = args.campaign
    if Path(ref).is_file():
        from gridbench.campaign.model import load_campaign

        name = load_campaign(ref).spec.name
        found = named(root, name)
        if not found:
            raise SpecError(
                f"campaign {name!r} has not been run in {root}",
                where=ref,
                fix=f"'gridbench campaign run {ref}' (or give --results)",
            )
        return found[-1]
    c = find_campaign(root, ref)
    if c is None:
        raise ResultsError(
            f"no campaign {ref!r}",
            where=str(root / "campaigns"),
            fix="give a campaign file, a campaign folder, or its id (under campaigns/)",
        )
    return c


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> str:
    return str(value) if type(value) is int else "?"


def cmd_status(args: argparse.Namespace) -> int:
    from gridbench.campaign.folder import RUNNING
    from gridbench.campaign.processes import alive
    from gridbench.campaign.view import load_view
    from gridbench.errors import EXIT_OK
    from gridbench.fmt import safe_markup

    folder = _campaign_of(args)
    st = folder.read_state()
    runner = _mapping(st.get("runner"))  # campaign.json is foreign input: types checked
    status = str(st.get("status"))
    if status == RUNNING and not alive(runner.get("pid"), runner.get("create_time")):
        status = "stopped (killed): 'gridbench campaign run' resumes it"
    if args.json:
        print(json.dumps({**st, "status": status}, indent=1, default=str))
        return EXIT_OK
    con = _console()
    progress = _mapping(st.get("progress"))
    running = st.get("running")
    running = [str(x) for x in running] if isinstance(running, list) else []
    con.print(
        f"campaign {safe_markup(folder.id)}: {safe_markup(status)}; "
        f"{_number(progress.get('done'))} of {_number(progress.get('total'))} repetitions "
        "finished" + (f"; running: {safe_markup(', '.join(running))}" if running else "")
    )
    _show(con, load_view(folder, compare=False))
    con.print(f"folder: [cyan]{safe_markup(folder.path)}[/]")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from gridbench.campaign.documents import write_documents
    from gridbench.errors import EXIT_OK, EXIT_THRESHOLD
    from gridbench.fmt import safe_markup

    folder = _campaign_of(args)
    view, index = write_documents(folder)
    con = _console()
    _show(con, view)
    con.print(f"documents: [cyan]{safe_markup(index)}[/] (and .md beside each)")
    return EXIT_OK if view.counts()["passed"] == len(view.units) else EXIT_THRESHOLD


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``gridbench campaign``, and ``exclude``/``include``."""
    from gridbench.campaign.exclude import register as register_exclusions

    p = sub.add_parser(
        "campaign",
        help="evaluation campaigns (IEEE 829): components of units across families; "
        "plan, run (resumable), status and the documents",
        description="An evaluation campaign: components, each with units (a spec of any "
        "family with --set overrides, pass criteria and repetitions). run writes a "
        "campaign folder in the results store linking each unit's run folder, and the "
        "IEEE 829 documents (test plan, designs, cases, log, incidents, summary) as HTML "
        "and Markdown. See docs/campaigns.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    csub = p.add_subparsers(dest="campaign_action", required=True, metavar="ACTION")
    helps = {
        "validate": "check the campaign file and every unit's spec (each problem with its "
        "file:line and the fix)",
        "plan": "every unit with its family's estimate, and the total (nothing is run)",
        "run": "run the units not finished yet (a campaign stopped midway resumes), then "
        "write the documents",
        "status": "the latest campaign of this file (or a campaign folder or id): progress "
        "and verdicts",
        "report": "write the IEEE 829 documents again (after 'gridbench exclude', say)",
    }
    handlers = {
        "validate": cmd_validate,
        "plan": cmd_plan,
        "run": cmd_run,
        "status": cmd_status,
        "report": cmd_report,
    }
    for name, text in helps.items():
        q = csub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        what = (
            "a campaign file (YAML)"
            if name in ("validate", "plan", "run")
            else ("a campaign file (its latest campaign), a campaign folder or a campaign id")
        )
        q.add_argument("campaign", help=what)
        if name in ("run", "status", "report", "plan"):
            add_results_arg(q)
        q.set_defaults(func=handlers[name])
        if name == "plan":
            q.add_argument("--json", action="store_true", help="print the plan as JSON")
        if name == "status":
            q.add_argument("--json", action="store_true", help="print campaign.json")
        if name == "run":
            q.add_argument(
                "--new",
                action="store_true",
                help="start a new campaign even though the last one of this name is "
                "unfinished (it is kept as it is)",
            )
            q.add_argument(
                "--parallel",
                type=int,
                default=1,
                metavar="N",
                help="run up to N units at once where their hosts do not overlap (default 1)",
            )
    register_exclusions(sub)
