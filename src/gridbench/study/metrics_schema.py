"""The structure of a study ``metrics.json`` (``gridbench.study/1``), checked.

metrics.json is foreign input. :func:`validate_metrics` checks the parts the study report,
compare and history read before any of it is read, and raises one
:class:`~gridbench.errors.ResultsError` naming the file and the first bad field
(``tools.ahe_gui.sus.mean: Input should be a valid number``). Models allow extra fields;
what is declared must have its type (the scalars of :mod:`gridbench.schema`).
"""

from __future__ import annotations

from typing import Any

from gridbench.schema import Count, Flag, Num, OpenModel, Text, ValidityDoc, validate_document

SCHEMA = "gridbench.study/1"


class Sus(OpenModel):
    mean: Num = None
    sd: Num = None
    n: Count = None
    ci95: list[Num] | None = None
    ci95_bca: list[Num] | None = None
    bca_note: Text = None
    grade: Text = None
    percentile: Num = None
    adjective: Text = None
    usability: Num = None
    learnability: Num = None
    alpha: Num = None
    scores: list[Num] = []


class TaskFigure(OpenModel):
    time_mean_s: Num = None
    n: Count = None
    success_rate: Num = None


class Tasks(OpenModel):
    success_rate: Num = None
    observed: Count = None
    time_mean_s: Num = None
    time_geomean_s: Num = None
    time_geomean_ci95: list[Num] | None = None
    times_s: list[Num] = []
    failure_mean: Num = None
    difficulty_mean: Num = None
    satisfaction_mean: Num = None
    satisfied_pct: Num = None
    difficult_pct: Num = None
    satisfaction_counts: list[Count] = []
    difficulty_counts: list[Count] = []
    n: Count = None
    per_task: dict[str, TaskFigure] = {}


class ToolMetrics(OpenModel):
    title: Text = None
    sus: Sus | None = None
    tasks: Tasks | None = None


class ComparisonTest(OpenModel):
    a: str
    b: str
    better: Text = None
    metric: str
    alternative: Text = None
    n: Count = None
    mean_a: Num = None
    mean_b: Num = None
    t: Num = None
    df: Count = None
    p: Num = None
    p_adjusted: Num = None
    significant: Flag = None
    dz: Num = None
    dz_ci95: list[Num] | None = None


class PowerPoint(OpenModel):
    effect_size: Num = None
    n_required: Count = None
    label: Text = None


class Power(OpenModel):
    alpha: Num = None
    power: Num = None
    tails: Count = None
    effect_size: Num = None
    effect_from: Text = None
    n_required: Count = None
    n_have: Count = None
    enough: Flag = None
    seed_effect_for_27: Num = None
    seed_effect_range: list[Num] = []
    curve: list[PowerPoint] = []


class Participants(OpenModel):
    declared: Count = None
    with_data: Count = None
    finished: Count = None


class ItemMean(OpenModel):
    mean: Num = None
    n: Count = None


class Release(OpenModel):
    release: str
    respondents: Count = None
    items: dict[str, ItemMean] = {}
    overall: Num = None
    n: Count = None


class Trend(OpenModel):
    first: Text = None
    last: Text = None
    from_mean: Num = None
    to_mean: Num = None
    change: Num = None
    slope_per_release: Num = None


class ComplaintGroup(OpenModel):
    release: Text = None
    topic: Text = None
    count: Count = None
    texts: list[Text] = []


class GroupMean(ItemMean):
    releases: list[Text] = []


class Category(OpenModel):
    category: Text = None
    items: list[Text] = []
    releases: dict[str, ItemMean] = {}
    groups: dict[str, GroupMean] = {}


class InstallSurvey(OpenModel):
    scale: Count = None
    items: list[Text] = []
    releases: list[Release] = []
    categories: list[Category] = []
    trend: Trend | None = None
    complaints: list[ComplaintGroup] = []
    out_of_scale: Count = None


class FreeText(OpenModel):
    participant: Text = None
    question: Text = None
    text: Text = None


class Flagged(OpenModel):
    rule: Text = None
    at: Text = None
    detail: Text = None


class Validity(ValidityDoc):
    flags: list[Flagged] = []


class StudyMetrics(OpenModel):
    """The top level of ``gridbench.study/1``."""

    status: Text = None
    name: Text = None
    delivery: Text = None
    participants: Participants | None = None
    tools: dict[str, ToolMetrics] = {}
    comparisons: list[ComparisonTest] = []
    power: Power | None = None
    install_survey: InstallSurvey | None = None
    free_text: list[FreeText] = []
    validity: Validity | None = None
    notes: list[Text] = []


def validate_metrics(metrics: Any, where: str = "metrics.json") -> dict[str, Any]:
    """``metrics`` if it is a ``gridbench.study/1`` document of the expected structure,
    else one ResultsError naming ``where`` and the first bad field path."""
    return validate_document(metrics, StudyMetrics, SCHEMA, where)
