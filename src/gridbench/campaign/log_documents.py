"""A campaign's test log and its test incident reports (IEEE 829)."""

from __future__ import annotations

from gridbench.campaign.document_parts import case_slug, duration, ident, log_link, nav, run_link
from gridbench.campaign.incidents import SEVERITIES
from gridbench.campaign.render import (
    Badge,
    Block,
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


def log_doc(v: View) -> Document:
    rows = []
    for i, a in enumerate(v.state.attempts, 1):
        d = duration(a)
        j = v.judged.get(a.name)
        rows.append(
            (
                str(i),
                Link(a.unit, f"{case_slug(a.unit)}.html"),
                str(a.rep),
                str(a.attempt),
                a.started,
                a.ended or "–",
                format_duration(round(d)) if d is not None else "–",
                ", ".join(a.hosts) or "localhost",
                Badge(j.outcome if j else (a.outcome or "running")),
                "–" if a.exit is None else str(a.exit),
                run_link(a),
                log_link(a),
            )
        )
    sessions = [
        (
            str(s.get("at", "")),
            "resumed" if s.get("resumed") else "started",
            f"process {s.get('pid')}",
        )
        for s in v.state.sessions
    ]
    events = []
    for s in v.state.suspensions:
        what = "campaign" if s.get("scope") == "campaign" else f"component {s.get('component')}"
        events.append(
            (str(s.get("at", "")), f"{what} suspended by {s.get('by')} ({s.get('outcome')})")
        )
    for (unit, rep), by in v.state.blocked.items():
        events.append(("", f"{unit} r{rep} not run: {by} did not pass (after:)"))
    blocks: list[Block] = [
        Heading("1. Test log identifier"),
        Para.of(ident(v, "TL")),
        Heading("2. Description"),
        Para.of(
            f"Every repetition of every unit the campaign started, in order, with its run "
            f"folder in the results store {v.folder.root} (linked) and what its command "
            "printed (log)."
        ),
        grid(("at", "session", "by"), sessions),
        Heading("3. Activity and event entries"),
        grid(
            (
                "#",
                "unit",
                "rep",
                "attempt",
                "started",
                "ended",
                "took",
                "hosts",
                "outcome",
                "exit",
                "run",
                "log",
            ),
            rows,
            "nothing was run yet",
        ),
        Heading("Other events"),
        grid(("at", "event"), events),
    ]
    return Document("test-log", f"Test log: {v.name}", ident(v, "TL"), tuple(blocks), nav=nav(v))


def incidents_doc(v: View) -> Document:
    items = v.incidents.items
    rows = [(Link(i.id, f"#{i.id}"), Badge(i.severity), i.kind, i.unit, i.summary) for i in items]
    blocks: list[Block] = [
        Heading("Test incident reports"),
        Para.of(
            f"{len(items)} incident(s): "
            + ", ".join(f"{sum(1 for i in items if i.severity == s)} {s}" for s in SEVERITIES)
            + "."
        ),
        grid(("id", "severity", "kind", "unit", "summary"), rows, "no incident"),
    ]
    for i in items:
        a = next((x for x in v.state.attempts if x.name == i.attempt), None)
        blocks += [
            Heading(f"{i.id}: {i.kind} in {i.unit}", 3, i.id),
            Pairs(
                (
                    ("identifier", f"{ident(v, 'TIR')}-{i.id}"),
                    ("summary", i.summary),
                    ("severity", Badge(i.severity)),
                    ("when", i.at or "–"),
                    ("test case", Link(f"TC-{i.unit}", f"{case_slug(i.unit)}.html")),
                    ("run", run_link(a) if a is not None else (i.run or "–")),
                    ("reproduce", Code(i.reproduce) if i.reproduce else "–"),
                    *((("note", i.note),) if i.note else ()),
                )
            ),
            Items(tuple(i.evidence)) if i.evidence else Para.of("(no further evidence)"),
        ]
    return Document(
        "incidents",
        f"Test incident reports: {v.name}",
        ident(v, "TIR"),
        tuple(blocks),
        nav=nav(v),
    )
