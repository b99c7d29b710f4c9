"""The ``study`` spec: tools, their tasks, the questionnaires, the participants and the
comparisons to test (docs/study.md).

Pydantic models with forbid-extra, so a typo is an error naming the field and its fix.
Identifiers (tools, tasks, participants, questions) are short slugs: they appear in URLs,
CSV column names and the append-only log.
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.spechints import NEAR_MISS
from gridbench.specload import SpecName
from gridbench.testplan import TestPlan

#: tools, tasks, questions and participant pseudonyms
Ident = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")]
#: What a comparison's hypothesis says: ``a`` is better, ``b`` is better, or either
#: (two-sided). "Better" is per metric: higher SUS and satisfaction, lower time, failure
#: and difficulty.
Better = Literal["a", "b", "either"]
Correction = Literal["holm", "bonferroni", "fdr_bh", "none"]
#: The five per-tool metrics a comparison tests (the seed's Table 2 rows).
Metric = Literal["sus", "time", "failure", "difficulty", "satisfaction"]
METRICS: tuple[Metric, ...] = ("sus", "time", "failure", "difficulty", "satisfaction")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Task(_Strict):
    """One timed task: the participant presses Start, does it, presses Stop."""

    id: Ident
    title: str = Field(min_length=1, max_length=200)
    instructions: str = Field(min_length=1, max_length=20_000)
    docs: str | None = Field(
        default=None,
        max_length=100_000,
        description="documentation snippet shown beside the task (plain text)",
    )


class Tool(_Strict):
    """A tool (or condition) under study, with the tasks done with it."""

    id: Ident
    title: str = Field(min_length=1, max_length=200)
    tasks: list[Task] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_tasks(self) -> Tool:
        ids = [t.id for t in self.tasks]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"task ids repeat within tool {self.id!r}: {', '.join(dup)}")
        return self


class Question(_Strict):
    """A background or free-text question."""

    id: Ident
    text: str = Field(min_length=1, max_length=2000)
    kind: Literal["text", "choice", "number"] = "text"
    choices: list[str] = Field(default_factory=list, description="for kind: choice")
    required: bool = False

    @model_validator(mode="after")
    def _choices(self) -> Question:
        if self.kind == "choice" and len(self.choices) < 2:
            raise ValueError(f"question {self.id!r} is a choice: give at least two choices")
        if self.kind != "choice" and self.choices:
            raise ValueError(f"question {self.id!r} has choices but kind is {self.kind!r}")
        twice = sorted({c for c in self.choices if self.choices.count(c) > 1})
        if twice:
            raise ValueError(
                f"question {self.id!r} offers {twice[0]!r} twice: an answer could not say "
                "which was chosen; give each choice once"
            )
        return self


def _default_free_text() -> list[Question]:
    return [Question(id="comments", text="Any comments on the tools you used?")]


class Questionnaires(_Strict):
    """Which instruments the study uses."""

    sus: bool = Field(default=True, description="the SUS (10 items, 1-5) after each tool")
    likert: bool = Field(
        default=True, description="difficulty and satisfaction (1-5) after each task"
    )
    failure_scale: bool = Field(
        default=True, description="the observer's failure scale (1 success ... 5 failed)"
    )
    background: list[Question] = Field(default_factory=list)
    free_text: list[Question] = Field(default_factory=_default_free_text)


def _all_metrics() -> list[Metric]:
    return list(METRICS)


class Comparison(_Strict):
    """A paired comparison of two tools used by the same participants."""

    a: Ident
    b: Ident
    better: Better = Field(
        default="a", description="the hypothesis: a is better, b is better, or either"
    )
    metrics: list[Metric] = Field(default_factory=_all_metrics, min_length=1)


class Order(_Strict):
    """Counterbalancing: a balanced Latin square over tools, tasks shuffled within a tool."""

    latin_square: bool = True
    shuffle_tasks: bool = True
    seed: int = Field(default=0, description="seed of the task shuffles (recorded per session)")


class AnalysisOptions(_Strict):
    """Statistics settings."""

    alpha: float = Field(default=0.05, gt=0, lt=1)
    correction: Correction = "holm"
    power: float = Field(default=0.8, gt=0, lt=1)
    tails: Literal[1, 2] = 1
    effect_size: float | None = Field(
        default=None, gt=0, description="a stated d_z for the power analysis (else observed)"
    )
    bootstrap_resamples: int = Field(default=9999, ge=100, le=1_000_000)
    seed: int = 0


class ImportMapping(_Strict):
    """How a survey tool's CSV export maps onto the generic layout (docs/study.md)."""

    columns: dict[str, str] = Field(
        default_factory=dict,
        description="generic column name -> the export's column header",
    )
    reversed: list[str] = Field(
        default_factory=list,
        description="generic columns exported on a reversed scale (1 means 5): flipped",
    )
    delimiter: str = Field(default=",", min_length=1, max_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> ImportMapping:
        seen: dict[str, str] = {}
        for generic, header in self.columns.items():
            if header in seen:
                raise ValueError(
                    f"columns {seen[header]!r} and {generic!r} both read the export's column "
                    f"{header!r}: map each generic column to its own header"
                )
            seen[header] = generic
        return self


class InstallSurvey(_Strict):
    """The XtreemOS install/configuration survey: items rated 1..scale per release."""

    items: list[Ident] = Field(min_length=1)
    releases: list[str] = Field(default_factory=list, description="in order; else as found")
    scale: int = Field(default=6, ge=2, le=10)
    categories: dict[Ident, list[Ident]] = Field(
        default_factory=dict,
        description="survey categories (installation, configuration, ...), each a list of "
        "items: averaged per release and per release group (000 Fig. 3.2, 3.3)",
    )
    release_groups: dict[str, list[str]] = Field(
        default_factory=dict,
        description="named groups of releases (all, an earlier deliverable's, the latest) "
        "over which each category is averaged",
    )

    @model_validator(mode="after")
    def _known_names(self) -> InstallSurvey:
        for cat, members in self.categories.items():
            if not members:
                raise ValueError(f"category {cat!r} names no item")
            for it in members:
                if it not in self.items:
                    near = get_close_matches(it, self.items, 1, NEAR_MISS)
                    mean = f"; did you mean {near[0]!r}?" if near else ""
                    raise ValueError(
                        f"category {cat!r} names {it!r}, which is not among items{mean}"
                    )
        for group, rels in self.release_groups.items():
            if not rels:
                raise ValueError(f"release group {group!r} names no release")
            for rel in rels:
                if self.releases and rel not in self.releases:
                    near = get_close_matches(rel, self.releases, 1, NEAR_MISS)
                    mean = f"; did you mean {near[0]!r}?" if near else ""
                    raise ValueError(
                        f"release group {group!r} names {rel!r}, which is not among releases{mean}"
                    )
        return self


class StudySpec(_Strict):
    """A usability study."""

    name: SpecName
    purpose: str = Field(min_length=1, max_length=20_000, description="shown first")
    tools: list[Tool] = Field(min_length=1)
    participants: list[Ident] = Field(default_factory=list)
    questionnaires: Questionnaires = Field(default_factory=Questionnaires)
    comparisons: list[Comparison] = Field(default_factory=list)
    order: Order = Field(default_factory=Order)
    analysis: AnalysisOptions = Field(default_factory=AnalysisOptions)
    import_: ImportMapping = Field(default_factory=ImportMapping, alias="import")
    install_survey: InstallSurvey | None = None
    plan: TestPlan | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _references(self) -> StudySpec:
        tools = [t.id for t in self.tools]
        dup = sorted({i for i in tools if tools.count(i) > 1})
        if dup:
            raise ValueError(f"tool ids repeat: {', '.join(dup)}")
        people = self.participants
        dup = sorted({i for i in people if people.count(i) > 1})
        if dup:
            raise ValueError(f"participant ids repeat: {', '.join(dup)}")
        for c in self.comparisons:
            for side in (c.a, c.b):
                if side not in tools:
                    raise ValueError(
                        f"comparison names tool {side!r}, which is not one of {', '.join(tools)}"
                    )
            if c.a == c.b:
                raise ValueError(f"comparison compares {c.a!r} with itself")
        qids = [q.id for q in (*self.questionnaires.background, *self.questionnaires.free_text)]
        dup = sorted({i for i in qids if qids.count(i) > 1})
        if dup:
            raise ValueError(f"question ids repeat: {', '.join(dup)}")
        return self

    def tool(self, tool_id: str) -> Tool:
        """The tool ``tool_id`` (KeyError when the spec has none)."""
        for t in self.tools:
            if t.id == tool_id:
                return t
        raise KeyError(tool_id)
