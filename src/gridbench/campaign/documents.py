"""The IEEE 829 documents of a campaign, from its folder and its units' runs: the test
plan, a test design per component, a test case per unit, the test log, the incident
reports and the test summary (with the comparison against the previous campaign and the
trend), each as self-contained HTML and as Markdown, under ``CAMPAIGN/docs/``, with an
index and ``summary.json`` (what the dashboard's campaign page and the trend read).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gridbench.campaign.folder import (
    COPY_FILE,
    DOCS_DIR,
    RUNS_DIR,
    SUMMARY_FILE,
    UNITS_DIR,
    Attempt,
    CampaignDir,
    State,
    replay,
)
from gridbench.campaign.model import ComponentSpec, Parsed, UnitSpec, parse_campaign, unit_key
from gridbench.campaign.previous import Previous, compare_with_previous, trend
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
    Pre,
    document_html,
    document_md,
    grid,
)
from gridbench.campaign.verdicts import (
    SEVERITIES,
    Incidents,
    Judged,
    attempt_incidents,
    count,
    judge,
    unit_verdict,
)
from gridbench.errors import GridbenchError
from gridbench.fmt import fmt_val
from gridbench.store.layout import write_json, write_text_atomic
from gridbench.units import format_duration

SUMMARY_SCHEMA = "gridbench.campaign-summary/1"


@dataclass
class RepView:
    rep: int
    final: Attempt | None
    judged: Judged | None

    @property
    def outcome(self) -> str:
        if self.judged is not None:
            return self.judged.outcome
        return (self.final.outcome or "running") if self.final is not None else "not run"


@dataclass
class UnitView:
    key: str
    component: ComponentSpec
    unit: UnitSpec
    record: dict[str, Any]
    reps: list[RepView]
    why_not_run: str = ""

    @property
    def verdict(self) -> str:
        return unit_verdict([r.outcome for r in self.reps])

    @property
    def title(self) -> str:
        return self.unit.title or self.key


@dataclass
class View:
    """Everything the documents say, read once from the campaign folder."""

    folder: CampaignDir
    doc: dict[str, Any]  # campaign.json
    parsed: Parsed
    state: State
    units: list[UnitView]
    incidents: Incidents
    previous: Previous | None
    judged: dict[str, Judged] = field(default_factory=dict)  # attempt name -> judged
    trend: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.parsed.spec.name

    def counts(self, units: Sequence[UnitView] | None = None) -> dict[str, int]:
        return count(u.verdict for u in (self.units if units is None else units))

    def of(self, comp: ComponentSpec) -> list[UnitView]:
        return [u for u in self.units if u.component.id == comp.id]


def _judge_attempt(root: Path, a: Attempt, require_valid: bool) -> Judged | None:
    """An attempt's outcome now: a run that ran to a verdict is judged again from its
    run (a trial excluded since counts); the others keep what the log says."""
    if a.outcome in ("passed", "failed") and a.run:
        return judge(root, a, require_valid=require_valid)
    if a.outcome is None:
        return None
    return Judged(a.outcome, a.reasons)


def load_view(folder: CampaignDir, *, compare: bool = True) -> View:
    """The campaign as its documents show it."""
    doc = folder.read_state()
    base = Path(str(doc.get("base") or folder.path))
    parsed = parse_campaign(folder.copy_text(), str(folder.path / COPY_FILE), base)
    state = replay(folder.events())
    records = doc.get("units") or {}
    judged: dict[str, Judged] = {}
    valid_of = {unit_key(c, u): u.pass_.valid for c, u in parsed.spec.units()}
    for a in state.attempts:
        j = _judge_attempt(folder.root, a, valid_of.get(a.unit, False))
        if j is not None:
            judged[a.name] = j
    units = []
    for comp, unit in parsed.spec.units():
        key = unit_key(comp, unit)
        reps = []
        for r in range(1, unit.repetitions + 1):
            final = state.final(key, r)
            reps.append(RepView(r, final, judged.get(final.name) if final else None))
        why = ""
        sus = state.suspended.get("*") or state.suspended.get(comp.id)
        blocked = [by for (u, _), by in state.blocked.items() if u == key]
        if sus and any(r.final is None for r in reps):
            why = f"suspended: {sus} did not pass (suspension criteria)"
        elif blocked:
            why = f"not run: {blocked[0]} did not pass (after:)"
        units.append(UnitView(key, comp, unit, dict(records.get(key) or {}), reps, why))
    incidents = Incidents()
    for a in state.attempts:
        rec = records.get(a.unit) or {}
        attempt_incidents(
            incidents, folder, state, a, judged.get(a.name), str(rec.get("command", ""))
        )
    previous = None
    if compare:
        try:
            previous = compare_with_previous(folder, parsed.spec.alpha, parsed.spec.min_effect)
        except GridbenchError:
            previous = None
    if previous is not None:
        for uc in previous.units:
            for ch in uc.regressions:
                rec = records.get(uc.unit) or {}
                incidents.add(
                    "regression",
                    None,
                    uc.unit,
                    f"{uc.unit} (repetition {uc.rep}) regressed against campaign "
                    f"{previous.campaign}: {ch.metric} at {ch.point} "
                    f"{fmt_val(ch.before)} → {fmt_val(ch.after)} ({_rel(ch.relative)})",
                    evidence=[
                        f"{ch.test or 'test'}: adjusted p = {fmt_val(ch.p_adjusted)}",
                        f"before: run {uc.before}; now: run {uc.after}",
                        f"gridbench compare {uc.before} {uc.after}",
                    ],
                    reproduce=str(rec.get("command", "")),
                    run=uc.after,
                    at=str(doc.get("finished") or doc.get("updated") or ""),
                )
    return View(folder, doc, parsed, state, units, incidents, previous, judged)


def _commas(cells: Sequence[Cell]) -> tuple[Cell, ...]:
    out: list[Cell] = []
    for i, c in enumerate(cells):
        out += [", ", c] if i else [c]
    return tuple(out)


def _rel(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:+.1f}%"


# -- links -----------------------------------------------------------------------------


def run_link(a: Attempt | None, text: str | None = None) -> Cell:
    """A link to an attempt's run report, through the campaign's link to its folder."""
    if a is None or not a.run:
        return "–"
    return Link(text or a.run, f"../{RUNS_DIR}/{a.name}/report.html")


def log_link(a: Attempt) -> Cell:
    return Link("log", f"../{UNITS_DIR}/{a.name}.log")


def case_slug(key: str) -> str:
    return f"case-{key}"


def design_slug(comp: str) -> str:
    return f"design-{comp}"


def _dt(x: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(x) if x else None
    except ValueError:
        return None


def duration(a: Attempt) -> float | None:
    s, e = _dt(a.started), _dt(a.ended)
    return (e - s).total_seconds() if s and e else None


# -- the documents ---------------------------------------------------------------------


def _nav(v: View) -> tuple[tuple[str, str], ...]:
    return (
        ("Campaign", "index"),
        ("Test plan", "test-plan"),
        *((f"Design {c.id}", design_slug(c.id)) for c in v.parsed.spec.components),
        ("Test log", "test-log"),
        ("Incidents", "incidents"),
        ("Summary", "summary"),
    )


def _ident(v: View, kind: str, suffix: str = "") -> str:
    return f"{kind}-{v.folder.id}" + (f"-{suffix}" if suffix else "")


def _outcome_sentence(v: View, units: Sequence[UnitView] | None = None) -> str:
    us = v.units if units is None else units
    c = v.counts(us)
    parts = [f"{c['passed']} of {len(us)} units passed"]
    for k in ("failed", "error", "timeout", "not run"):
        if c.get(k):
            parts.append(f"{c[k]} {k}")
    return "; ".join(parts)


def _criteria(u: UnitView) -> list[Cell]:
    out: list[Cell] = ["the family's own verdict: every threshold of the spec met, no check failed"]
    out += [
        f"threshold (campaign) {t.metric} {t.op} {t.value}"
        + (f" at point {t.point}" if t.point != "all" else "")
        for t in u.unit.pass_.thresholds
    ]
    out.append(
        "the measurement must be valid (its family's validity rules)"
        if u.unit.pass_.valid
        else "validity flags are incidents (minor), not failures"
    )
    if u.unit.repetitions > 1:
        out.append(f"every one of {u.unit.repetitions} repetitions passes")
    return out


def index_doc(v: View) -> Document:
    rows = []
    for u in v.units:
        runs = _commas([run_link(r.final, f"r{r.rep}") for r in u.reps if r.final])
        inc = _commas([Link(i.id, f"incidents.html#{i.id}") for i in v.incidents.of(u.key)])
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
        Para.of(Badge(status), f" {_outcome_sentence(v)}; {len(v.incidents.items)} incident(s)."),
        Heading("Components × units"),
        grid(("component", "unit", "family", "verdict", "runs", "incidents"), rows),
        Heading("Documents (IEEE 829)"),
        Items(
            tuple(
                (Link(label, f"{slug}.html"), " · ", Link("Markdown", f"{slug}.md"))
                for label, slug in _nav(v)[1:]
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
        "index", f"Campaign {v.name}", _ident(v, "C"), tuple(blocks), v.parsed.spec.description
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
    criteria = [(u.key, tuple(_join(_criteria(u)))) for u in v.units]
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
        Para.of(_ident(v, "TP")),
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
        grid(("unit", "passes when"), criteria),
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
    return Document(
        "test-plan", f"Test plan: {v.name}", _ident(v, "TP"), tuple(blocks), nav=_nav(v)
    )


def _join(cells: Sequence[Cell]) -> list[Cell]:
    out: list[Cell] = []
    for i, c in enumerate(cells):
        out.append(c if i == 0 else ("; ", c))
    return out


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


def design_doc(v: View, comp: ComponentSpec) -> Document:
    units = v.of(comp)
    features: list[Cell] = list(comp.features)
    for u in units:
        features += [f"{u.unit.id}: {f}" for f in u.unit.features]
    rows = [
        (
            Link(f"TC-{u.key}", f"{case_slug(u.key)}.html"),
            u.title,
            u.record.get("family", ""),
            Code(u.unit.spec),
            str(u.unit.repetitions),
            ", ".join(u.unit.after) or "–",
        )
        for u in units
    ]
    blocks: list[Block] = [
        Heading("1. Test design specification identifier"),
        Para.of(_ident(v, "TD", comp.id)),
        *([Para.of(comp.description)] if comp.description else []),
        Heading("2. Features to be tested"),
        Items(tuple(features)),
        Heading("3. Approach refinements"),
        Para.of(comp.approach or "each unit's spec, as its family runs it"),
        Heading("4. Test identification"),
        grid(("test case", "unit", "family", "spec", "repetitions", "after"), rows),
        Heading("5. Feature pass/fail criteria"),
        grid(("unit", "passes when"), [(u.key, tuple(_join(_criteria(u)))) for u in units]),
        Heading("Features not tested"),
        Items(tuple(comp.not_tested)),
    ]
    return Document(
        design_slug(comp.id),
        f"Test design: {comp.title or comp.id}",
        _ident(v, "TD", comp.id),
        tuple(blocks),
        nav=_nav(v),
    )


def _spec_text(u: UnitView) -> str:
    path = u.record.get("spec_path")
    if isinstance(path, str):
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            pass
    return "(the spec file is no longer there; each run keeps its spec.yaml)"


def case_doc(v: View, u: UnitView) -> Document:
    rec = u.record
    sets = rec.get("sets") or list(u.unit.set)
    blocks: list[Block] = [
        Heading("1. Test case specification identifier"),
        Para.of(f"TC-{u.key}"),
        Heading("2. Test items"),
        Pairs(
            (
                ("component", Link(u.component.id, f"{design_slug(u.component.id)}.html")),
                ("family", str(rec.get("family", ""))),
                ("spec", Code(u.unit.spec)),
                ("run name", str(rec.get("run_name", ""))),
                ("features", "; ".join(u.unit.features) or "–"),
            )
        ),
        Heading("3. Input specifications"),
        Para.of("The spec as the campaign names it, with these overrides:"),
        Items(tuple(Code(s) for s in sets)) if sets else Para.of("(no overrides)"),
        Pre(_spec_text(u)),
        Heading("4. Output specifications (pass criteria)"),
        Items(tuple(_criteria(u))),
        Heading("5. Environmental needs"),
        Para.of("hosts: " + ", ".join(rec.get("hosts") or u.unit.hosts or ["localhost"])),
        Heading("6. Special procedural requirements"),
        Pairs(
            (
                ("command", Code(str(rec.get("command", "")))),
                ("repetitions", str(u.unit.repetitions)),
                ("timeout", format_duration(u.unit.timeout) if u.unit.timeout else "none"),
            )
        ),
        Heading("7. Intercase dependencies"),
        Para.of("runs after " + ", ".join(u.unit.after) + " passed" if u.unit.after else "none"),
        Heading("Result"),
        Para.of(Badge(u.verdict), f" {u.why_not_run}" if u.why_not_run else ""),
        grid(
            ("repetition", "outcome", "run", "why"),
            [
                (
                    str(r.rep),
                    Badge(r.outcome),
                    run_link(r.final),
                    "; ".join(r.judged.reasons) if r.judged else "",
                )
                for r in u.reps
            ],
        ),
    ]
    return Document(
        case_slug(u.key), f"Test case: {u.title}", f"TC-{u.key}", tuple(blocks), nav=_nav(v)
    )


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
        Para.of(_ident(v, "TL")),
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
    return Document("test-log", f"Test log: {v.name}", _ident(v, "TL"), tuple(blocks), nav=_nav(v))


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
                    ("identifier", f"{_ident(v, 'TIR')}-{i.id}"),
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
        _ident(v, "TIR"),
        tuple(blocks),
        nav=_nav(v),
    )


def _component_rows(v: View) -> list[tuple[Cell, ...]]:
    rows: list[tuple[Cell, ...]] = []
    for c in v.parsed.spec.components:
        us = v.of(c)
        incs = [i for u in us for i in v.incidents.of(u.key)]
        c_counts = v.counts(us)
        verdict = (
            "passed"
            if c_counts["passed"] == len(us)
            else ("not run" if c_counts["not run"] == len(us) else "failed")
        )
        rows.append(
            (
                Link(c.id, f"{design_slug(c.id)}.html"),
                f"{c_counts['passed']} of {len(us)}",
                Badge(verdict),
                str(len(incs)),
                _outcome_sentence(v, us),
            )
        )
    return rows


def summary_doc(v: View) -> Document:
    spec = v.parsed.spec
    attempts = v.state.attempts
    variances: list[Cell] = []
    for u in v.units:
        if u.why_not_run:
            variances.append(f"{u.key}: {u.why_not_run}")
        elif u.verdict == "not run":
            variances.append(f"{u.key}: not run (the campaign did not reach it)")
        extra = [a for a in attempts if a.unit == u.key and a.attempt > 1]
        if extra:
            variances.append(
                f"{u.key}: {len(extra)} more attempt(s) than planned (a repetition killed "
                "midway, interrupted, or run again on resumption)"
            )
        est = u.record.get("estimate_s")
        took = [d for r in u.reps if r.final and (d := duration(r.final)) is not None]
        if isinstance(est, int | float) and est > 0 and took:
            mean = sum(took) / len(took)
            if mean > 2 * est + 30:
                variances.append(
                    f"{u.key}: took {format_duration(round(mean))} a repetition against "
                    f"{format_duration(round(est))} planned"
                )
    for s in v.state.suspensions:
        variances.append(f"suspended by {s.get('by')} ({s.get('outcome')}), at {s.get('at')}")
    planned_reps = sum(u.unit.repetitions for u in v.units)
    run_reps = sum(1 for u in v.units for r in u.reps if r.final is not None and r.final.done)
    feats = len(spec.plan.features) + sum(len(c.features) for c in spec.components)
    untested = [*spec.plan.not_tested, *(f for c in spec.components for f in c.not_tested)]
    comprehensive: list[Cell] = [
        f"{run_reps} of {planned_reps} planned repetitions ran to a verdict "
        f"({sum(1 for u in v.units if u.verdict != 'not run')} of {len(v.units)} units)",
        f"{feats} feature(s) declared to be tested; "
        + (
            f"{len(untested)} declared not tested: {'; '.join(untested)}"
            if untested
            else "none declared not tested"
        ),
    ]
    for c in spec.components:
        if all(u.verdict == "not run" for u in v.of(c)):
            comprehensive.append(f"component {c.id}: not tested at all in this campaign")
    resolved = [
        i
        for i in v.incidents.items
        if i.kind in ("killed", "interrupted") and _unit(v, i.unit).verdict == "passed"
    ]
    counts = v.counts()
    overall = "passed" if counts["passed"] == len(v.units) else "failed"
    evaluation = f"The campaign {overall}: {_outcome_sentence(v)}. " + (
        "Every unit met its pass criteria."
        if overall == "passed"
        else "Units that did not pass: "
        + ", ".join(f"{u.key} ({u.verdict})" for u in v.units if u.verdict != "passed")
        + "."
    )
    sessions = v.state.sessions
    start = sessions[0].get("at") if sessions else v.doc.get("created")
    end = v.state.finished.get("at") if v.state.finished else None
    busy = sum(d for a in attempts if (d := duration(a)) is not None)
    wall = None
    if _dt(str(start)) and _dt(end):
        wall = (_dt(end) - _dt(str(start))).total_seconds()  # type: ignore[operator]
    blocks: list[Block] = [
        Heading("1. Test summary report identifier"),
        Para.of(_ident(v, "TSR")),
        Heading("2. Summary"),
        Para.of(Badge(str(v.doc.get("status", ""))), f" {evaluation}"),
        grid(("component", "passed", "verdict", "incidents", "units"), _component_rows(v)),
        Heading("3. Variances"),
        Items(tuple(variances)) if variances else Para.of("none: every unit ran as planned"),
        Heading("4. Comprehensiveness assessment"),
        Items(tuple(comprehensive)),
        Heading("5. Summary of results"),
        Para.of(
            f"{len(v.incidents.items)} incident(s) ("
            + ", ".join(
                f"{sum(1 for i in v.incidents.items if i.severity == s)} {s}" for s in SEVERITIES
            )
            + f"); {len(resolved)} resolved by a later attempt that passed. ",
            Link("The incident reports", "incidents.html"),
            ".",
        ),
        grid(
            ("unit", "verdict", "family verdict", "thresholds", "why"),
            [
                (
                    Link(u.key, f"{case_slug(u.key)}.html"),
                    Badge(u.verdict),
                    "; ".join(r.judged.verdict for r in u.reps if r.judged and r.judged.verdict)
                    or "–",
                    _thresholds_cell(u),
                    "; ".join(x for r in u.reps if r.judged for x in r.judged.reasons)
                    or u.why_not_run
                    or "",
                )
                for u in v.units
            ],
        ),
        Heading("6. Evaluation"),
        Para.of(evaluation),
        Heading("7. Summary of activities"),
        Pairs(
            (
                ("started", str(start or "–")),
                ("finished", str(end or "not finished")),
                ("wall time", format_duration(round(wall)) if wall is not None else "–"),
                ("time in units", format_duration(round(busy))),
                ("sessions", f"{len(sessions)} (resumed {max(0, len(sessions) - 1)} time(s))"),
                ("repetitions started", str(len(attempts))),
            )
        ),
        Heading("8. Compared with the previous campaign", id="previous"),
        *_previous_blocks(v),
        Heading("9. Trend over campaigns", id="trend"),
        *_trend_blocks(v),
    ]
    return Document(
        "summary", f"Test summary report: {v.name}", _ident(v, "TSR"), tuple(blocks), nav=_nav(v)
    )


def _unit(v: View, key: str) -> UnitView:
    return next(u for u in v.units if u.key == key)


def _thresholds_cell(u: UnitView) -> str:
    texts = []
    for r in u.reps:
        j = r.judged
        if j is None or not j.thresholds:
            continue
        texts.append(f"{j.thresholds - len(j.failed_thresholds)} of {j.thresholds} met")
    return "; ".join(texts) or "–"


def _previous_blocks(v: View) -> list[Block]:
    if v.previous is None:
        return [
            Para.of(
                "This is the first campaign of its name that finished: nothing to compare with."
            )
        ]
    rows: list[tuple[Cell, ...]] = []
    for uc in v.previous.units:
        if not uc.changes:
            rows.append((uc.unit, str(uc.rep), "–", "", "", "", "", uc.note))
        for ch in uc.changes:
            rows.append(
                (
                    uc.unit,
                    str(uc.rep),
                    f"{ch.metric} at {ch.point}",
                    fmt_val(ch.before),
                    fmt_val(ch.after),
                    _rel(ch.relative),
                    fmt_val(ch.p_adjusted),
                    Badge(ch.verdict),
                )
            )
    return [
        Para.of(
            f"Against campaign {v.previous.campaign}, run against run, with gridbench "
            f"compare's tests (alpha {v.parsed.spec.alpha}, Benjamini-Hochberg, at least "
            f"{v.parsed.spec.min_effect * 100:g}% change): only significant changes are "
            "listed; a regression is an incident."
        ),
        grid(("unit", "rep", "figure", "before", "now", "change", "adjusted p", "verdict"), rows),
    ]


def _trend_blocks(v: View) -> list[Block]:
    if not v.trend:
        return [Para.of("no campaign of this name has a summary yet")]
    keys = [u.key for u in v.units]
    rows = []
    for t in v.trend:
        verdicts = t.get("verdicts") or {}
        rows.append(
            (
                t["campaign"],
                str(t.get("status", "")),
                f"{t.get('passed', '–')} of {t.get('units', '–')}",
                str(t.get("incidents", "–")),
                str(t.get("regressions", "–")),
                *(Badge(str(verdicts[k])) if k in verdicts else "–" for k in keys),
            )
        )
    return [grid(("campaign", "state", "passed", "incidents", "regressions", *keys), rows)]


# -- writing ---------------------------------------------------------------------------


def summary_data(v: View) -> dict[str, Any]:
    """summary.json: what the dashboard's page and the next campaign's trend read."""
    counts = v.counts()
    regressions = [
        {"unit": uc.unit, "rep": uc.rep, **ch.to_dict()}
        for uc in (v.previous.units if v.previous else [])
        for ch in uc.regressions
    ]
    return {
        "schema": SUMMARY_SCHEMA,
        "id": v.folder.id,
        "name": v.name,
        "status": v.doc.get("status"),
        "created": v.doc.get("created"),
        "finished": v.doc.get("finished"),
        "total": len(v.units),
        "counts": counts,
        "passed": counts["passed"] == len(v.units),
        "verdicts": {u.key: u.verdict for u in v.units},
        "components": [
            {
                "id": c.id,
                "title": c.title,
                "units": [
                    {
                        "key": u.key,
                        "id": u.unit.id,
                        "title": u.title,
                        "family": u.record.get("family"),
                        "verdict": u.verdict,
                        "why": u.why_not_run,
                        "runs": [
                            {
                                "rep": r.rep,
                                "attempt": r.final.name,
                                "run": r.final.run,
                                "outcome": r.outcome,
                            }
                            for r in u.reps
                            if r.final is not None
                        ],
                    }
                    for u in v.of(c)
                ],
            }
            for c in v.parsed.spec.components
        ],
        "incident_count": len(v.incidents.items),
        "incidents": [i.to_dict() for i in v.incidents.items],
        "regression_count": len(regressions),
        "regressions": regressions,
        "previous": v.previous.to_dict() if v.previous else None,
    }


def documents(v: View) -> list[Document]:
    nav = _nav(v)
    docs = [index_doc(v), plan_doc(v)]
    docs += [design_doc(v, c) for c in v.parsed.spec.components]
    docs += [case_doc(v, u) for u in v.units]
    docs += [log_doc(v), incidents_doc(v), summary_doc(v)]
    return [Document(d.slug, d.title, d.ident, d.blocks, d.subtitle, nav) for d in docs]


def write_documents(folder: CampaignDir, *, compare: bool = True) -> tuple[View, Path]:
    """Every document (HTML and Markdown) and summary.json under ``CAMPAIGN/docs/``;
    returns the view and the index page."""
    v = load_view(folder, compare=compare)
    out = folder.path / DOCS_DIR
    out.mkdir(exist_ok=True)
    write_json(out / SUMMARY_FILE, summary_data(v))
    v.trend = trend(folder)  # this campaign's row from the summary just written
    keep = set()
    for d in documents(v):
        for ext, text in ((".html", document_html(d)), (".md", document_md(d))):
            write_text_atomic(out / f"{d.slug}{ext}", text)
            keep.add(f"{d.slug}{ext}")
    for p in out.iterdir():  # a unit removed from the file since: its old case goes
        if p.suffix in (".html", ".md") and p.name not in keep and p.name.startswith("case-"):
            os.unlink(p)
    return v, out / "index.html"
