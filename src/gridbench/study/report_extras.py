"""The rest of the study's report sections: the power analysis stated in words, the
install/configuration survey (its table, trend and grouped complaints), the validity
flags, the notes, and the participants' own words (free text and background answers,
shown as given: every renderer escapes them). Pure functions of a checked
``gridbench.study/1`` document; a section with nothing to show is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.sections import (
    Column,
    Field,
    Shown,
    Statements,
    Status,
    Table,
    listed,
    part,
    record_table,
    shown_table,
)
from gridbench.study.report_format import cell, fmt, fmt2, num, table_id
from gridbench.study.validity import STUDY_VALIDITY_RULES

# -- install survey -----------------------------------------------------------------------


def install_table(metrics: Mapping[str, Any]) -> Table | None:
    """Mean rating per item (rows) and release (columns), the overall mean last."""
    s = part(metrics, "install_survey")
    rels = [r for r in s.get("releases") or [] if isinstance(r, Mapping)]
    if not rels:
        return None
    items = [str(i) for i in s.get("items") or []]
    cols = [
        Column("item", "Item"),
        *(
            Column(table_id("r", r.get("release")), str(r.get("release")), numeric=True)
            for r in rels
        ),
    ]
    rows: list[list[Any]] = []
    for it in items:
        rows.append([it, *(cell(part(part(r, "items"), it).get("mean")) for r in rels)])
    rows.append(["overall", *(cell(r.get("overall")) for r in rels)])
    rows.append(["ratings", *(cell(r.get("n"), fmt) for r in rels)])
    return shown_table(
        "install-survey",
        f"Install/configuration survey: mean rating per release (1-{s.get('scale')}, "
        "higher is better)",
        cols,
        rows,
        row_style=tuple([None] * len(items) + ["total", None]),
    )


def category_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """The declared categories' mean rating per release group (000 Fig. 3.2) and per
    release (Fig. 3.3), each over all of the category's items."""
    s = part(metrics, "install_survey")
    cats = [c for c in s.get("categories") or [] if isinstance(c, Mapping)]
    if not cats:
        return []
    scale = f"1-{s.get('scale')}, higher is better"
    out = []
    for key, title, names in (
        ("groups", f"Install survey: mean rating per category and release group ({scale})",
         list(part(cats[0], "groups"))),
        ("releases", f"Install survey: mean rating per category and release ({scale})",
         list(part(cats[0], "releases"))),
    ):  # fmt: skip
        if not names:
            continue
        cols = [
            Column("category", "Category"),
            *(Column(table_id("g", n), str(n), numeric=True) for n in names),
        ]
        rows = [
            [str(c.get("category")), *(cell(part(part(c, key), n).get("mean")) for n in names)]
            for c in cats
        ]
        out.append(shown_table(f"install-categories-{key}", title, cols, rows))
    return out


def complaints_table(metrics: Mapping[str, Any], with_text: bool) -> Table | None:
    """Complaints grouped by release and keyword topic (their text when ``with_text``)."""
    groups = [
        g for g in part(metrics, "install_survey").get("complaints") or [] if isinstance(g, Mapping)
    ]
    fields: list[Field] = [
        (Column("release", "Release"), lambda g: str(g.get("release"))),
        (Column("topic", "Topic"), lambda g: str(g.get("topic"))),
        (Column("count", "Complaints", numeric=True), lambda g: cell(g.get("count"), fmt)),
    ]
    if with_text:
        fields.append(
            (
                Column("texts", "What was said"),
                lambda g: " | ".join(str(x) for x in g.get("texts") or []),
            )
        )
    return record_table(
        "complaints",
        "Install complaints by release and topic",
        groups,
        fields,
        note="Topics by keyword, the first that matches (documentation, stability, "
        "installation, configuration, usage, other).",
    )


# -- checks and people's words -------------------------------------------------------------


def validity_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every validity flag: rule, where, detail."""
    flags = listed(part(metrics, "validity"), "flags")
    fields: tuple[Field, ...] = (
        (Column("rule", "Rule"), lambda f: Shown(f.get("rule"), str(f.get("rule")), "warn")),
        (Column("at", "Where"), lambda f: str(f.get("at") or "")),
        (Column("detail", "Detail"), lambda f: str(f.get("detail") or "")),
    )
    return record_table("validity", "Validity flags", flags, fields, row_status=None)


def free_text_table(metrics: Mapping[str, Any]) -> Table | None:
    """The participants' free text, as given (renderers escape it)."""
    fields: tuple[Field, ...] = (
        (Column("participant", "Participant"), lambda r: str(r.get("participant"))),
        (Column("question", "Question"), lambda r: str(r.get("question"))),
        (Column("text", "Answer"), lambda r: str(r.get("text") or "")),
    )
    return record_table(
        "free-text",
        "Free text",
        listed(metrics, "free_text"),
        fields,
        note="As the participants wrote it (pseudonymous IDs); a report built without free "
        "text leaves it, and the complaints' text, out of every export.",
        scope="full",
        collapsed=True,
    )


def background_table(metrics: Mapping[str, Any]) -> Table | None:
    """Background answers, one row per participant and question."""
    fields: tuple[Field, ...] = (
        (Column("participant", "Participant"), lambda r: str(r.get("participant"))),
        (Column("question", "Question"), lambda r: str(r.get("question"))),
        (
            Column("answer", "Answer"),
            lambda r: "" if r.get("answer") is None else str(r.get("answer")),
        ),
    )
    return record_table(
        "background",
        "Background",
        listed(metrics, "background"),
        fields,
        scope="full",
        collapsed=True,
    )


# -- statements ----------------------------------------------------------------------------


def power_statements(metrics: Mapping[str, Any]) -> Statements | None:
    """How the cohort size follows from an effect size, and which one gives the seed's 27."""
    p = part(metrics, "power")
    if not p:
        return None
    tails = "one-tailed" if p.get("tails") == 1 else "two-tailed"
    lines: list[tuple[Status, str]] = []
    source = {
        "stated": "the effect size stated in the spec",
        "observed": "the smallest SUS effect observed among the declared comparisons",
    }.get(str(p.get("effect_from")), str(p.get("effect_from")))
    if p.get("n_required") is not None:
        lines.append(
            (
                "pass" if p.get("enough") else "warn",
                f"To detect d_z = {fmt(p.get('effect_size'), 3)} ({source}) with power "
                f"{fmt(p.get('power'))} at α = {fmt(p.get('alpha'))}, {tails}, a paired t-test "
                f"needs {p.get('n_required')} participants; the study has {p.get('n_have')} "
                f"complete pairs ({'enough' if p.get('enough') else 'too few'}).",
            )
        )
    elif p.get("effect_size") is not None:
        # an effect (stated or observed) so small that no cohort size could be found
        lines.append(
            (
                "warn",
                f"d_z = {fmt(p.get('effect_size'), 3)} ({source}) is too small to plan for: "
                f"no cohort reaches power {fmt(p.get('power'))} at α = {fmt(p.get('alpha'))}, "
                f"{tails}.",
            )
        )
    else:
        lines.append(("info", "No effect size to plan with: none stated, none observed."))
    rng = p.get("seed_effect_range")
    span = (
        f" (any d_z from {fmt(rng[0], 3)} up to {fmt(rng[1], 3)} gives 27)"
        if isinstance(rng, list) and len(rng) == 2
        else ""
    )
    lines.append(
        (
            "info",
            f"The seed's minimum of {p.get('seed_n') or 27} participants (one-tailed paired "
            f"t-test, power 0.8, α 0.05) follows from an effect size d_z = "
            f"{fmt(p.get('seed_effect_for_27'), 3)}{span}: a medium effect, a mean difference "
            "of about half the SD of the differences.",
        )
    )
    return Statements(id="power-analysis", title="Power analysis", lines=tuple(lines), lead=True)


def trend_statements(metrics: Mapping[str, Any]) -> Statements | None:
    s = part(metrics, "install_survey")
    t = part(s, "trend")
    if num(t.get("change")) is None:
        return None
    return Statements(
        id="install-trend-text",
        title="Install survey trend",
        lines=(
            (
                "info",
                f"Overall rating {fmt2(t.get('from_mean'))} ({t.get('first')}) → "
                f"{fmt2(t.get('to_mean'))} ({t.get('last')}), change {fmt2(t.get('change'))}; "
                f"{fmt(t.get('slope_per_release'), 3)} per release (least squares).",
            ),
        ),
    )


def notes_section(metrics: Mapping[str, Any], free_text: bool) -> Statements:
    lines: list[tuple[Status, str]] = [("info", str(n)) for n in metrics.get("notes") or []]
    if not free_text:
        lines.append(
            (
                "info",
                "Free text, background answers and complaint text are left out of this report.",
            )
        )
    lines += [("info", f"{r.name}: {r.description}") for r in STUDY_VALIDITY_RULES]
    return Statements(
        id="notes", title="Notes and validity rules", lines=tuple(lines), scope="full"
    )
