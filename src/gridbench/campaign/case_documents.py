"""A campaign's test design per component and test case per unit (IEEE 829)."""

from __future__ import annotations

from pathlib import Path

from gridbench.campaign.document_parts import (
    case_slug,
    criteria,
    design_slug,
    ident,
    nav,
    run_link,
    semicolons,
)
from gridbench.campaign.model import ComponentSpec
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
    grid,
)
from gridbench.campaign.view import UnitView, View
from gridbench.errors import GridbenchError
from gridbench.specload import read_spec_text
from gridbench.units import format_duration


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
        Para.of(ident(v, "TD", comp.id)),
        *([Para.of(comp.description)] if comp.description else []),
        Heading("2. Features to be tested"),
        Items(tuple(features)),
        Heading("3. Approach refinements"),
        Para.of(comp.approach or "each unit's spec, as its family runs it"),
        Heading("4. Test identification"),
        grid(("test case", "unit", "family", "spec", "repetitions", "after"), rows),
        Heading("5. Feature pass/fail criteria"),
        grid(("unit", "passes when"), [(u.key, tuple(semicolons(criteria(u)))) for u in units]),
        Heading("Features not tested"),
        Items(tuple(comp.not_tested)),
    ]
    return Document(
        design_slug(comp.id),
        f"Test design: {comp.title or comp.id}",
        ident(v, "TD", comp.id),
        tuple(blocks),
        nav=nav(v),
    )


def _spec_text(u: UnitView) -> str:
    """The unit's spec file as it is now, read as any spec is (a regular file of at most
    1 MiB: the path comes from campaign.json, which is foreign input)."""
    path = u.record.get("spec_path")
    if path:
        try:
            return read_spec_text(Path(path))
        except (GridbenchError, OSError) as exc:
            why = exc.message if isinstance(exc, GridbenchError) else str(exc.strerror)
            return f"(the spec file {path} cannot be read: {why}; each run keeps its spec.yaml)"
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
        Items(tuple(criteria(u))),
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
        case_slug(u.key), f"Test case: {u.title}", f"TC-{u.key}", tuple(blocks), nav=nav(v)
    )
