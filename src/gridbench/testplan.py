"""The ``plan`` block of any family's spec: an IEEE 829 test plan in brief, as the seeds'
evaluation campaigns wrote them (test items, features tested and not tested, approach,
pass/fail criteria). Reports show it under "How it was configured"; ``not_tested`` also
goes to "What is left open".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gridbench.sections import (
    Column,
    EvaluationSummary,
    Finding,
    Headline,
    Report,
    Section,
    Table,
)
from gridbench.store.layout import RunDir


class TestPlan(BaseModel):
    """What an evaluation sets out to test, and how it decides pass or fail."""

    __test__ = False  # not a pytest class, whatever its name
    model_config = ConfigDict(extra="forbid")

    items: list[str] = Field(default_factory=list, description="test items: systems, versions")
    features: list[str] = Field(default_factory=list, description="features to be tested")
    not_tested: list[str] = Field(default_factory=list, description="features not tested")
    approach: str = Field(default="", description="how the features are exercised")
    pass_criteria: str = Field(default="", description="item pass/fail criteria")


def plan_of(spec_data: Any) -> TestPlan | None:
    """The test plan of a spec document (a run's spec.yaml, parsed), or None.

    A spec that was valid when it ran stays readable even if its plan block is not (the
    spec.yaml of a run is foreign input): such a block is shown as absent."""
    raw = spec_data.get("plan") if isinstance(spec_data, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        return TestPlan.model_validate(raw)
    except ValidationError:
        return None


def plan_table(plan: TestPlan) -> Table:
    """The plan as a two-column table (one row per declared part)."""
    rows: list[tuple[str, str]] = []
    for label, values in (
        ("test items", plan.items),
        ("features tested", plan.features),
        ("features not tested", plan.not_tested),
    ):
        if values:
            rows.append((label, "; ".join(values)))
    if plan.approach:
        rows.append(("approach", plan.approach))
    if plan.pass_criteria:
        rows.append(("pass/fail criteria", plan.pass_criteria))
    return Table(
        id="test-plan",
        title="Test plan",
        columns=(Column("part"), Column("declared")),
        rows=tuple(rows),
        export=False,
    )


class ReportInputs(TypedDict):
    """What every family's report takes from a run besides its metrics."""

    spec_yaml: str
    plan: Table | None
    not_tested: tuple[str, ...]
    experiment: dict[str, Any]


def report_inputs(run: RunDir) -> ReportInputs:
    """The spec as run (YAML), its declared test plan as a table, what the plan leaves
    untested, and experiment.json: the "how it was configured" of any family's report."""
    spec_yaml, spec_data = run.read_spec()
    plan = plan_of(spec_data)
    return ReportInputs(
        spec_yaml=spec_yaml,
        plan=plan_table(plan) if plan is not None else None,
        not_tested=tuple(plan.not_tested) if plan is not None else (),
        experiment=run.read_experiment(),
    )


class Configured(TypedDict, total=False):
    """What a family's ``build_report`` takes besides its metrics, all optional (a report
    of bare metrics has none; :func:`report_inputs` gives all of it for a run): the spec
    as YAML, its plan as a table, what the plan leaves untested, experiment.json."""

    spec_yaml: str
    plan: Table | None
    not_tested: Sequence[str]
    experiment: Mapping[str, Any] | None


class Story(NamedTuple):
    """What a family says of its metrics in the headline and the evaluation summary."""

    findings: Iterable[Finding]  # the headline
    tested: Iterable[tuple[str, str]]  # what was tested, as (what, how)
    outcome: Iterable[Finding]  # what passed or failed
    left_open: Iterable[str]  # what the analysis could not settle


def run_span(experiment: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The "run" line of what was tested: when it was created and finished (none when
    experiment.json does not say)."""
    if not experiment.get("created"):
        return []
    return [
        ("run", f"{experiment.get('created')} – {experiment.get('finished') or 'not finished'}")
    ]


def thresholds_finding(total: int, failed: Sequence[str]) -> Finding | None:
    """The headline's thresholds line: none declared (None), all ``total`` met, or the
    ``failed`` ones (each described) out of ``total``."""
    if not total:
        return None
    if not failed:
        return Finding("pass", f"thresholds: all {total} met")
    return Finding("fail", f"thresholds: FAILED ({len(failed)} of {total})", "; ".join(failed))


class Masthead(NamedTuple):
    """Whose report it is: titled "``name`` — gridbench ``family`` report", headlined
    "``name``: ``subject``", with ``meta`` (schema and the like) under the title."""

    family: str
    name: str
    subject: str
    meta: str = ""


def family_report(
    head: Masthead,
    story: Story,
    configured: Configured,
    sections: Iterable[Section | None],
    *,
    data: Mapping[str, Any],
    notes: Iterable[str] = (),
    exports: Iterable[Table] = (),
) -> Report:
    """The :class:`~gridbench.sections.Report` of a family's run, in the shape every
    family's report takes: titled and headlined as ``head`` says with ``story``'s
    findings, the evaluation summary from ``story`` and ``configured``, and the
    ``sections`` that exist (None is left out)."""
    family, name = head.family, head.name
    return Report(
        family=family,
        title=f"{name} — gridbench {family} report",
        headline=Headline(title=f"{name}: {head.subject}", findings=tuple(story.findings)),
        summary=EvaluationSummary(
            tested=tuple(story.tested),
            spec_yaml=configured.get("spec_yaml", ""),
            plan=configured.get("plan"),
            outcome=tuple(story.outcome),
            left_open=tuple(story.left_open),
            not_tested=tuple(configured.get("not_tested", ())),
        ),
        sections=tuple(s for s in sections if s is not None),
        notes=tuple(notes),
        meta=head.meta,
        exports=tuple(exports),
        data=data,
    )
