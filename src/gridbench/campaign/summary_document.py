"""A campaign's test summary report (IEEE 829): the verdicts by component, the
variances, the comprehensiveness, the incidents, the activities, the comparison with the
previous campaign and the trend."""

from __future__ import annotations

from gridbench.campaign.document_parts import (
    case_slug,
    design_slug,
    duration,
    ident,
    nav,
    outcome_sentence,
    parse_time,
)
from gridbench.campaign.incidents import SEVERITIES
from gridbench.campaign.previous import relative_text
from gridbench.campaign.render import (
    Badge,
    Block,
    Cell,
    Document,
    Heading,
    Items,
    Link,
    Pairs,
    Para,
    grid,
)
from gridbench.campaign.view import UnitView, View
from gridbench.fmt import fmt_val
from gridbench.units import format_duration


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
                outcome_sentence(v, us),
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
    evaluation = f"The campaign {overall}: {outcome_sentence(v)}. " + (
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
    if parse_time(str(start)) and parse_time(end):
        wall = (parse_time(end) - parse_time(str(start))).total_seconds()  # type: ignore[operator]
    blocks: list[Block] = [
        Heading("1. Test summary report identifier"),
        Para.of(ident(v, "TSR")),
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
        "summary", f"Test summary report: {v.name}", ident(v, "TSR"), tuple(blocks), nav=nav(v)
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
                    relative_text(ch.relative),
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


def _or_dash(value: object) -> str:
    return "–" if value is None else str(value)


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
                _or_dash(t.get("status")),
                f"{_or_dash(t.get('passed'))} of {_or_dash(t.get('units'))}",
                _or_dash(t.get("incidents")),
                _or_dash(t.get("regressions")),
                *(Badge(str(verdicts[k])) if k in verdicts else "–" for k in keys),
            )
        )
    return [grid(("campaign", "state", "passed", "incidents", "regressions", *keys), rows)]
