"""The ``plan`` block of any family's spec: an IEEE 829 test plan in brief, as the seeds'
evaluation campaigns wrote them (test items, features tested and not tested, approach,
pass/fail criteria). Reports show it under "How it was configured"; ``not_tested`` also
goes to "What is left open".
"""

from __future__ import annotations

from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gridbench.sections import Column, Table
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
