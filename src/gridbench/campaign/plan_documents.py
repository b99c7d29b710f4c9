"""The index of a campaign's documents and its test plan (IEEE 829): the items, the
features, the approach, the pass and suspension criteria, the schedule with each
family's estimate, and the environmental needs."""

from __future__ import annotations

from gridbench.campaign.document_parts import (
    case_slug,
    commas,
    criteria,
    design_slug,
    ident,
    nav,
    outcome_sentence,
    run_link,
    semicolons,
)
from gridbench.campaign.render import (
    Badge,
    Block,
    Cell,
    Code,
    Document,
    Heading,
    Items,
    Link,
    Pairs,
    Para,
    grid,
)
from gridbench.campaign.view import View
from gridbench.units import format_duration


def index_doc(v: View) -> Document:
    rows = []
    for u in v.units:
        runs = commas([run_link(r.final, f"r{r.rep}") for r in u.reps if r.final])
        inc = commas([Link(i.id, f"incidents.html#{i.id}") for i in v.incidents.of(u.key)])
        rows.append(
            (
                Link(u.component.id, f"{design_slug(u.component.id)}.html"),
                Link(u.unit.id, f"{case_slug(u.key)}.html"),
                u.record.get("family", "") or "",
                Badge(u.verdict),
                tuple(runs) or u.why_not_run or "–",
                tuple(inc) or "–",
            )
        )
    status = str(v.doc.get("status", ""))
    blocks: list[Block] = [
        Para.of(Badge(status), f" {outcome_sentence(v)}; {len(v.incidents.items)} incident(s)."),
        Heading("Components × units"),
        grid(("component", "unit", "family", "verdict", "runs", "incidents"), rows),
        Heading("Documents (IEEE 829)"),
        Items(
            tuple(
                (Link(label, f"{slug}.html"), " · ", Link("Markdown", f"{slug}.md"))
                for label, slug in nav(v)[1:]
            )
        ),
    ]
    if v.previous is not None:
        regs = sum(len(u.regressions) for u in v.previous.units)
        changed = sum(len(u.changes) for u in v.previous.units)
        blocks.append(
            Para.of(
                f"Against the previous campaign {v.previous.campaign}: {changed} significant "
                f"change(s), {regs} regression(s) (see the ",
                Link("summary", "summary.html#previous"),
                ").",
            )
        )
    return Document(
        "index", f"Campaign {v.name}", ident(v, "C"), tuple(blocks), v.parsed.spec.description
    )


def plan_doc(v: View) -> Document:
    spec = v.parsed.spec
    plan = spec.plan
    comps = spec.components
    items: list[Cell] = [*plan.items]
    items += [
        (f"{u.key}: ", Code(u.unit.spec), f" ({u.record.get('family', '?')} spec)") for u in v.units
    ]
    features: list[Cell] = [*plan.features]
    for c in comps:
        features += [f"{c.id}: {f}" for f in c.features]
    not_tested: list[Cell] = [*plan.not_tested]
    for c in comps:
        not_tested += [f"{c.id}: {f}" for f in c.not_tested]
    approach: list[Cell] = [plan.approach] if plan.approach else []
    approach += [f"{c.id}: {c.approach}" for c in comps if c.approach]
    approach.append(
        "each unit runs as its family's own command (gridbench [family] run SPEC --set ...) "
        "in a process of its own, into the results store; the campaign links its run "
        "folders and judges each run through its family"
    )
    passes_when = [(u.key, tuple(semicolons(criteria(u)))) for u in v.units]
    suspension = []
    for c in comps:
        if c.suspend is None:
            suspension.append((c.id, "none: a unit that does not pass never stops the others"))
        else:
            scope = "the whole campaign" if c.suspend.scope == "campaign" else "its component"
            text = f"a unit that ends {' or '.join(c.suspend.on)} suspends {scope}"
            text += "; resumption: " + (
                c.suspend.resumption or "'gridbench campaign run' again, once the cause is fixed"
            )
            suspension.append((c.id, text + " (the unit that suspended it runs again)"))
    hosts = _hosts(v)
    est_rows = []
    total = 0.0
    unknown = 0
    for u in v.units:
        est = u.record.get("estimate_s")
        reps = u.unit.repetitions
        if isinstance(est, int | float):
            total += est * reps
        else:
            unknown += 1
        est_rows.append(
            (
                u.key,
                str(reps),
                format_duration(round(est)) if isinstance(est, int | float) else "–",
                format_duration(round(est * reps))
                if isinstance(est, int | float)
                else (u.record.get("estimate_note") or "–"),
            )
        )
    blocks: list[Block] = [
        Heading("1. Test plan identifier"),
        Para.of(ident(v, "TP")),
        Heading("2. Introduction"),
        Para.of(spec.description or f"The evaluation campaign {spec.name}."),
        Pairs(
            (
                ("campaign file", Code(str(v.doc.get("source", "")))),
                ("results store", Code(str(v.folder.root))),
            )
        ),
        Heading("3. Test items"),
        Items(tuple(items)),
        Heading("4. Features to be tested"),
        Items(tuple(features)),
        Heading("5. Features not to be tested"),
        Items(tuple(not_tested)),
        Heading("6. Approach"),
        Items(tuple(approach)),
        Heading("7. Item pass/fail criteria"),
        *([Para.of(plan.pass_criteria)] if plan.pass_criteria else []),
        grid(("unit", "passes when"), passes_when),
        Heading("8. Suspension criteria and resumption requirements"),
        grid(("component", "criteria"), suspension),
        Para.of(
            "A campaign stopped by kill -9 or Ctrl-C resumes with 'gridbench campaign run "
            "FILE': what finished is not run again; a unit cut off midway is an incident and "
            "runs again."
        ),
        Heading("9. Test deliverables"),
        Items(
            (
                "this test plan; a test design per component; a test case per unit",
                "the test log, the test incident reports and the test summary report",
                "each unit's run folder in the results store (linked under runs/): its "
                "report.html, metrics.json and raw records",
                "summary.json (the verdicts, the incidents, the comparison)",
            )
        ),
        Heading("10. Schedule: units and estimates"),
        grid(("unit", "repetitions", "estimate each", "estimate"), est_rows),
        Para.of(
            f"Estimated in all: {format_duration(round(total))}"
            + (f" (and {unknown} unit(s) whose family gives no estimate)" if unknown else "")
            + ", from each family's own plan."
        ),
        Heading("11. Environmental needs"),
        grid(("host", "what it is", "units"), hosts),
        *([Para.of(spec.environment.notes)] if spec.environment.notes else []),
    ]
    return Document("test-plan", f"Test plan: {v.name}", ident(v, "TP"), tuple(blocks), nav=nav(v))


def _hosts(v: View) -> list[tuple[Cell, ...]]:
    declared = v.parsed.spec.environment.hosts
    users: dict[str, list[str]] = {}
    for u in v.units:
        for h in u.record.get("hosts") or u.unit.hosts or ["localhost"]:
            users.setdefault(str(h), []).append(u.key)
    names = list(declared) + [h for h in users if h not in declared]
    return [
        (
            h,
            declared.get(h, "this machine" if h == "localhost" else ""),
            ", ".join(users.get(h, [])),
        )
        for h in names
    ]
