"""The campaign file: components of units, each unit a spec of any family, checked with
file:line and the fix for every problem (docs/campaigns.md).

::

    name: xtreemos-quick
    plan: {items: [...], features: [...], not_tested: [...], approach: ..., pass_criteria: ...}
    environment: {hosts: {localhost: "this machine"}}
    components:
      - id: aem
        title: Job flow (AEM)
        suspend: {on: [error], scope: component, resumption: "..."}
        units:
          - id: flow
            spec: units/jobflow.yaml         # relative to the campaign file
            set: [trials=1]
            pass: {thresholds: [{metric: latency.overall.p99, op: "<", value: 5}], valid: true}
            repetitions: 1

Checking is in two steps: :func:`parse_campaign` checks the file's own structure (and
what its units name: another unit of this campaign, never another campaign's), and
:func:`resolve_units` reads each unit's spec to find its family through the registry.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import GridbenchError, SpecError
from gridbench.family import available, command_of, family_of_spec
from gridbench.family import family as family_named
from gridbench.specload import (
    SpecName,
    SpecProblem,
    SpecWords,
    _line_of,
    apply_overrides,
    parse_with_overrides,
    problem_error,
    read_spec_text,
    validate_spec,
)
from gridbench.testplan import TestPlan
from gridbench.thresholds import ThresholdSpec
from gridbench.units import PositiveDuration
from gridbench.yamltext import parse_yaml, plain_data

DOCS = "docs/campaigns.md"
TEMPLATE = "examples/campaign-xtreemos.yaml"

Ident = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")]
Word = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
#: what a unit's outcome may be, for the suspension criteria
Outcome = Literal["failed", "error", "timeout"]
ALL_OUTCOMES: tuple[Outcome, ...] = ("failed", "error", "timeout")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PassCriteria(_Strict):
    """A unit's pass criteria beyond its spec's own thresholds."""

    thresholds: list[ThresholdSpec] = Field(
        default_factory=list,
        description="added to the spec's own thresholds; the family checks their paths",
    )
    valid: bool = Field(
        default=False,
        description="the measurement must be valid (its family's validity rules): an "
        "invalid one fails the unit (else it is an incident of minor severity)",
    )


class UnitSpec(_Strict):
    """One unit: a spec of any family run as that family's command."""

    id: Ident
    title: str = ""
    spec: str = Field(min_length=1, description="the spec file, relative to the campaign file")
    family: str | None = Field(
        default=None, description="the spec's family; found from the spec when not given"
    )
    set: list[str] = Field(default_factory=list, description="--set overrides, KEY=VALUE")
    verb: Word = Field(default="run", description="the family's verb (a study: import)")
    args: list[str] = Field(
        default_factory=list, description="more arguments of the verb (--responses CSV)"
    )
    repetitions: int = Field(default=1, ge=1, le=100)
    pass_: PassCriteria = Field(default_factory=PassCriteria, alias="pass")
    hosts: list[Word] = Field(
        default_factory=list,
        description="the hosts it loads (units run at once only on hosts apart); default: "
        "this machine",
    )
    after: list[str] = Field(
        default_factory=list,
        description="units of this campaign that must pass first (component.unit, or a "
        "unit of the same component)",
    )
    features: list[str] = Field(default_factory=list, description="the features it tests")
    timeout: PositiveDuration | None = Field(
        default=None, description="one repetition's longest run; past it, it is stopped"
    )


class Suspension(_Strict):
    """When a component (or the whole campaign) stops, and what resuming takes."""

    on: list[Outcome] = Field(
        default_factory=lambda: list(ALL_OUTCOMES),
        min_length=1,
        description="the unit outcomes that suspend",
    )
    scope: Literal["component", "campaign"] = "component"
    resumption: str = Field(
        default="", description="what must hold before testing resumes (the test plan says it)"
    )


class ComponentSpec(_Strict):
    """A component under test: its units, features and suspension criteria."""

    id: Ident
    title: str = ""
    description: str = ""
    features: list[str] = Field(default_factory=list)
    not_tested: list[str] = Field(default_factory=list)
    approach: str = ""
    suspend: Suspension | None = None
    units: list[UnitSpec] = Field(min_length=1)


class Environment(_Strict):
    """The test environment: the hosts the campaign uses, and what they are."""

    hosts: dict[Word, str] = Field(default_factory=dict)
    notes: str = ""


class CampaignSpec(_Strict):
    """A campaign: its test plan, environment and components."""

    name: SpecName
    description: str = ""
    plan: TestPlan = Field(default_factory=TestPlan)
    environment: Environment = Field(default_factory=Environment)
    components: list[ComponentSpec] = Field(min_length=1)
    #: the comparison with the previous campaign: what counts as a significant change
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_effect: float = Field(default=0.05, ge=0)

    def units(self) -> list[tuple[ComponentSpec, UnitSpec]]:
        """Every (component, unit), in the file's order."""
        return [(c, u) for c in self.components for u in c.units]


WORDS = SpecWords(what="a campaign", keys="name:, components:, ...", template=TEMPLATE, docs=DOCS)


def unit_key(component: ComponentSpec | str, unit: UnitSpec | str) -> str:
    """A unit's name in the campaign: ``component.unit``."""
    c = component if isinstance(component, str) else component.id
    u = unit if isinstance(unit, str) else unit.id
    return f"{c}.{u}"


@dataclass(frozen=True)
class Parsed:
    """A campaign file checked for its own structure."""

    spec: CampaignSpec
    root: Any  # the YAML tree, with line marks
    origin: str  # the file as named
    base: Path  # the folder its paths are relative to
    text: str


def parse_campaign(text: str, origin: str, base: Path) -> Parsed:
    """The campaign in ``text``, every problem of its structure in one SpecError (a line
    each, with file:line and the fix)."""
    root, data, _ = parse_with_overrides(text, origin, None)
    spec = validate_spec(CampaignSpec, data, root, origin, None, WORDS)
    problems = structure_problems(spec)
    if problems:
        raise joined([problem_error(p, root, origin) for p in problems])
    return Parsed(spec, root, origin, base, text)


def load_campaign(path: str | Path) -> Parsed:
    """A campaign file, parsed and checked (not its units' specs: :func:`resolve_units`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(
            "campaign file not found",
            where=str(p),
            fix=f"give the path to a campaign YAML file (see {TEMPLATE})",
        )
    return parse_campaign(read_spec_text(p), str(p), p.resolve().parent)


def joined(errors: Sequence[GridbenchError]) -> SpecError:
    """Several errors as one SpecError, a line each."""
    lines = [str(e) for e in errors]
    return SpecError("\n".join(lines))


def _near(word: str, choices: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), 1, 0.6)
    return found[0] if found else None


def structure_problems(spec: CampaignSpec) -> list[SpecProblem]:
    """Duplicate ids, and ``after:`` naming what is no earlier unit of this campaign."""
    problems: list[SpecProblem] = []
    seen_c: set[str] = set()
    keys: list[str] = []
    for ci, comp in enumerate(spec.components):
        if comp.id in seen_c:
            problems.append(
                SpecProblem(
                    ("components", ci, "id"),
                    f"component id {comp.id!r} is given twice",
                    "give every component its own id",
                )
            )
        seen_c.add(comp.id)
        seen_u: set[str] = set()
        for ui, unit in enumerate(comp.units):
            loc: tuple[int | str, ...] = ("components", ci, "units", ui)
            if unit.id in seen_u:
                problems.append(
                    SpecProblem(
                        (*loc, "id"),
                        f"unit id {unit.id!r} is given twice in component {comp.id!r}",
                        "give every unit of a component its own id",
                    )
                )
            seen_u.add(unit.id)
            for ai, ref in enumerate(unit.after):
                found = _reference(ref, comp.id, keys)
                if found is None:
                    problems.append(_bad_reference((*loc, "after", ai), ref, comp.id, keys, spec))
            keys.append(unit_key(comp, unit))
    return problems


def _reference(ref: str, component: str, earlier: Sequence[str]) -> str | None:
    """The unit key ``ref`` names among the ``earlier`` units, or None."""
    key = ref if "." in ref else unit_key(component, ref)
    return key if key in earlier else None


def _bad_reference(
    loc: tuple[int | str, ...], ref: str, component: str, earlier: list[str], spec: CampaignSpec
) -> SpecProblem:
    every = [unit_key(c, u) for c, u in spec.units()]
    key = ref if "." in ref else unit_key(component, ref)
    components = {c.id for c in spec.components}
    if re.search(r"[/:]", ref) or ("." in ref and ref.split(".", 1)[0] not in components):
        message = (
            f"'after: {ref}' names a unit of another campaign (or no component of this "
            "one): a unit waits only for units of its own campaign"
        )
    elif key in every:
        message = f"'after: {ref}' names a unit that comes later in the file"
    else:
        message = f"'after: {ref}' names no unit of this campaign"
    near = _near(key, earlier)
    fix = (f"did you mean '{near}'? " if near else "") + (
        "name an earlier unit of this campaign as component.unit"
        + (f" (one of: {', '.join(earlier)})" if earlier else " (this is the first unit)")
        + "; to wait for another campaign, run that campaign first"
    )
    return SpecProblem(loc, message, fix)


# -- the units as their families' commands ------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A unit resolved: its family found, its command made."""

    key: str  # component.unit
    component: str
    spec: UnitSpec
    spec_path: Path  # the spec file, absolute
    family: str
    run_name: str  # the name its run folder takes (the spec's name after overrides)
    sets: tuple[str, ...]  # the --set overrides passed (the campaign's thresholds merged in)
    base: Path  # the folder it runs in: the campaign file's
    line: int | None  # the unit's line in the campaign file

    @property
    def words(self) -> list[str]:
        """The family's command words before the verb (``[]`` for job flow, ``["io"]``)."""
        return command_of(family_named(self.family))

    def argv(self, verb: str | None = None, *extra: str) -> list[str]:
        """``gridbench``'s arguments for ``verb`` (default: the unit's own) of this unit."""
        sets = [x for s in self.sets for x in ("--set", s)]
        args = list(self.spec.args) if verb is None else []
        return [*self.words, verb or self.spec.verb, str(self.spec_path), *sets, *args, *extra]

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts it loads (this machine when it names none)."""
        return tuple(self.spec.hosts) or ("localhost",)

    def shown_spec(self) -> str:
        """The spec as the campaign file names it."""
        return self.spec.spec


def _line(root: Any, loc: Sequence[int | str]) -> int | None:
    return _line_of(root, tuple(loc))


def resolve_units(parsed: Parsed) -> list[Unit]:
    """Every unit with its family found from its spec (through the family registry) and
    its overrides applied; every unit that cannot be resolved is one line of one
    SpecError (file:line and the fix)."""
    units: list[Unit] = []
    errors: list[GridbenchError] = []
    for ci, comp in enumerate(parsed.spec.components):
        for ui, unit in enumerate(comp.units):
            loc: tuple[int | str, ...] = ("components", ci, "units", ui)
            try:
                units.append(_resolve(parsed, comp, unit, loc))
            except _Problem as p:
                errors.append(problem_error(p.problem, parsed.root, parsed.origin))
            except GridbenchError as exc:  # the spec file itself (not YAML, too big)
                where = f"{parsed.origin}:{_line(parsed.root, (*loc, 'spec'))}"
                errors.append(
                    SpecError(
                        f"unit {unit_key(comp, unit)}: {exc.message}"
                        + (f" ({exc.where})" if exc.where else ""),
                        where=where,
                        fix=exc.fix,
                    )
                )
    if errors:
        raise joined(errors)
    return units


class _Problem(Exception):
    def __init__(self, problem: SpecProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _resolve(
    parsed: Parsed, comp: ComponentSpec, unit: UnitSpec, loc: tuple[int | str, ...]
) -> Unit:
    key = unit_key(comp, unit)
    path = (parsed.base / unit.spec).resolve()
    if not path.is_file():
        raise _Problem(
            SpecProblem(
                (*loc, "spec"),
                f"unit {key}: spec file {unit.spec!r} not found (looked for {path})",
                "give the path of the unit's spec, relative to the campaign file",
            )
        )
    text = read_spec_text(path)
    data = plain_data(parse_yaml(text, str(path)))
    try:
        data = apply_overrides(data, list(unit.set), origin=f"unit {key}: --set")
    except SpecError as exc:
        raise _Problem(
            SpecProblem((*loc, "set"), f"unit {key}: {exc.message}", exc.fix or "")
        ) from None
    installed = sorted(available())
    if unit.family is not None and unit.family not in installed:
        near = _near(unit.family, installed)
        raise _Problem(
            SpecProblem(
                (*loc, "family"),
                f"unit {key}: unknown benchmark family {unit.family!r}",
                (f"did you mean '{near}'? " if near else "")
                + f"the installed families are {', '.join(installed)} (or install the "
                "plugin that provides it)",
            )
        )
    found = family_of_spec(data)
    kind = data.get("kind") if isinstance(data, dict) else None
    if found is None and isinstance(kind, str) and kind not in installed:
        raise _Problem(
            SpecProblem(
                (*loc, "spec"),
                f"unit {key}: its spec {unit.spec} says kind: {kind!r}, an unknown benchmark "
                "family",
                f"the installed families are {', '.join(installed)} (or install the plugin "
                "that provides it)",
            )
        )
    if found is not None and unit.family is not None and found.name != unit.family:
        raise _Problem(
            SpecProblem(
                (*loc, "family"),
                f"unit {key}: its spec {unit.spec} is a {found.name} spec, not {unit.family}",
                f"write family: {found.name}, or leave family: out",
            )
        )
    name = found.name if found is not None else unit.family
    if name is None:
        raise _Problem(
            SpecProblem(
                (*loc, "spec"),
                f"unit {key}: which benchmark family {unit.spec} belongs to cannot be told "
                "from its keys",
                f"add family: (one of {', '.join(installed)}) to the unit, or kind: to the spec",
            )
        )
    sets = list(unit.set)
    if unit.pass_.thresholds:  # added to the spec's own; the family checks their paths
        own = data.get("thresholds") if isinstance(data, dict) else None
        merged = [
            *(own if isinstance(own, list) else []),
            *(t.model_dump(mode="json") for t in unit.pass_.thresholds),
        ]
        sets.append("thresholds=" + json.dumps(merged))
    run_name = str(data.get("name") or path.stem) if isinstance(data, dict) else path.stem
    return Unit(
        key=key,
        component=comp.id,
        spec=unit,
        spec_path=path,
        family=name,
        run_name=run_name,
        sets=tuple(sets),
        base=parsed.base,
        line=_line(parsed.root, loc),
    )
