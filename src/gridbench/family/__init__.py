"""Benchmark families: the seam every kind of benchmark plugs into, and the registry.

A family (job flow, storage, and whatever comes next) owns its spec model, its commands,
how it runs into a results directory, how it analyses that directory into versioned
metrics, its validity rules and the report sections its metrics produce. Everything
generic (``list``, ``show``, ``analyze``, ``report``, ``compare``, ``history``,
``cleanup``, the dashboard) finds the family of a run by the ``kind`` recorded in its
``experiment.json`` and goes through this protocol; none of it knows a family's metrics.

Families register through the ``gridbench.families`` entry point (built-ins too, in
pyproject.toml), so a plugin package adds one without touching gridbench. See
docs/architecture.md for a worked example.

This module is the protocol (:class:`Family`, :class:`Ui`, the optional capabilities) and
the registry. Its neighbours hold the rest of the seam, each one job:
:mod:`gridbench.family.dashboard` (what a family's pages and live runs give the dashboard,
and what it lends them), :mod:`gridbench.family.module_family` (a family made of its own
modules, named as data) and :mod:`gridbench.family.verdicts` (how a run ended: its
status, exit code and verdict).
"""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gridbench.errors import ResultsError
from gridbench.sections import Report
from gridbench.sections import ValidityRule as ValidityRule  # re-exported: families use it

# Light at import: the command line loads every family (``gridbench --help``), and a
# family's module imports this one; what only annotations name is imported for the type
# checker alone, and what a method needs, in the method.
if TYPE_CHECKING:
    from rich.console import Console

    from gridbench.store.layout import RunDir

ENTRY_POINT_GROUP = "gridbench.families"
#: Runs written before families existed carry no ``kind``: they are job flow.
DEFAULT_KIND = "jobflow"


@dataclass(frozen=True, slots=True)
class CatalogueColumn:
    """One of a family's own columns of the dashboard's list (job flow: its trials)."""

    heading: str  # the column's heading, the same for every run of the family
    text: str  # the run's cell
    numeric: bool = False  # a figure: right-aligned


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """What ``gridbench list`` and the dashboard show of a run, whatever its family."""

    target: str  # what was measured: a backend, storage targets, a command
    variant: str  # how: a load model, a test set
    #: the family's own columns of the dashboard's list, in order (a run of another
    #: family shows "–" in them)
    columns: tuple[CatalogueColumn, ...] = ()
    #: more of the run's own text the dashboard's list search covers (job flow: its
    #: backend and load model fields)
    search: tuple[str, ...] = ()


class Ui(Protocol):
    """What the command line lends a family's commands, so that a family never imports
    the layers above it (reports, web, CLI)."""

    @property
    def console(self) -> Console:
        """Standard output's console (made when first used)."""
        ...

    @property
    def err_console(self) -> Console:
        """Standard error's console."""
        ...

    def results_root(self, args: argparse.Namespace) -> Path:
        """The results root from ``--results``, $GRIDBENCH_RESULTS or ./results."""
        ...

    def analyze_and_show(self, run_path: Path, *, as_json: bool = False) -> int:
        """Analyse a run through its family, write its reports, show the summary; return
        the family's exit code."""
        ...

    def serve(self, args: argparse.Namespace) -> int:
        """Run the web server with the options of ``cliargs.add_serve_args`` (a family
        whose runs are delivered in the browser, as a study is)."""
        ...


class Family(Protocol):
    """A benchmark family. Implement this, register it under ``gridbench.families``."""

    #: the ``kind`` recorded in experiment.json; also the entry-point name
    name: str
    #: one line for people ("job flow through a scheduler", "storage")
    title: str
    #: metrics schema written by ``analyze`` (``gridbench.<family>/N``)
    schema: str

    @property
    def validity_rules(self) -> Sequence[ValidityRule]:
        """The rules that decide whether the family's figures can be trusted."""
        ...

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """Add the family's own commands (e.g. ``gridbench io run``) to the parser."""
        ...

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Analyse ``run``, write its ``metrics.json`` and return the metrics."""
        ...

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """The typed report of analysed metrics (pure: reads no more than the run's files)."""
        ...

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        """0 when everything passed, 1 when a threshold or check failed, 3 when the run
        failed, 130 when it was aborted."""
        ...

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        """One word or two for the catalogue: 'pass', 'fail', 'pass (invalid trials)'."""
        ...

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        """The list columns of a run from its experiment.json (untrusted: never raise)."""
        ...


@dataclass(frozen=True, slots=True)
class CleanupOutcome:
    """What a cleanup did or, in a dry run, would do."""

    lines: tuple[str, ...]
    errors: tuple[str, ...] = ()


@runtime_checkable
class Cleanable(Protocol):
    """A family whose runs can leave work behind (jobs, processes, files) to clean up."""

    def cleanup(self, run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
        """Undo what a crashed or killed run left behind; touch only what it started."""
        ...


@dataclass(frozen=True, slots=True)
class Figure:
    """One comparable figure of a run: its repeated measurements of one quantity."""

    key: str  # stable across runs of the same spec, e.g. "nfs.write.kbps"
    label: str
    unit: str
    samples: tuple[float, ...]
    #: True when more is better, False when less is, None when neither
    higher_is_better: bool | None = None


@runtime_checkable
class Comparable(Protocol):
    """A family whose runs ``gridbench compare`` and ``history`` can put side by side
    through the generic figure comparison."""

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        """Every comparable figure of an analysed run."""
        ...


@dataclass(frozen=True, slots=True)
class RunSize:
    """How big an analysed run is, in a family's own units of work (job flow's jobs), for
    the dashboard: what its results page says and when a comparison reads per-unit
    samples in the background."""

    units: int  # units of work shown on the results page
    noun: str  # what a unit is called, plural ("jobs")
    samples: int  # per-unit samples a comparison of the run reads


@runtime_checkable
class Sized(Protocol):
    """A family whose runs are made of many units of work (job flow: jobs)."""

    def run_size(self, metrics: Mapping[str, Any]) -> RunSize:
        """The size of an analysed run from its metrics (untrusted: never raise)."""
        ...


@runtime_checkable
class HasRecords(Protocol):
    """A family whose runs may have recorded nothing to analyse yet (job flow: no trial
    folder): the dashboard offers *Analyse* only when they have."""

    def has_records(self, run: RunDir) -> bool:
        """Whether ``run`` holds what the family's analysis reads (never raise)."""
        ...


class Executes(Protocol):
    """A family's runner as its run command drives it: ``run`` is set once the results
    folder exists."""

    run: RunDir | None

    def execute(self) -> object:
        """Run the spec into ``run``."""
        ...


def runner_identity() -> dict[str, Any]:
    """This process, recorded in experiment.json (``pid``, ``create_time``), so that
    ``gridbench cleanup`` can tell a live run from a dead one."""
    import psutil

    me = psutil.Process()
    return {"pid": me.pid, "create_time": me.create_time()}


@runtime_checkable
class StartsFromSpec(Protocol):
    """A family whose runs can be started from a spec's text: the dashboard's ``/start``
    page offers it (job flow has its own page, ``/new``, with a live view)."""

    def runner_for(self, text: str, root: Path) -> Executes:
        """Validate ``text`` (SpecError naming where and the fix) and check what can be
        checked before anything is written; the runner writes one results folder under
        ``root`` when executed, in a worker thread."""
        ...


@runtime_checkable
class OwnsSpecs(Protocol):
    """A family whose specs are told apart from other families' by their top-level keys,
    so that ``gridbench validate|plan|run SPEC`` reaches it and a spec handed to another
    family's command is named for what it is (:func:`family_of_spec`)."""

    #: top-level keys that only this family's specs use (any one of them marks a spec)
    spec_marks: frozenset[str]
    #: what its spec is called in an error, "a storage spec"
    spec_noun: str


# -- registry ------------------------------------------------------------------------------


@functools.cache
def _entry_points() -> dict[str, str]:
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available() -> dict[str, str]:
    """Family names and where they come from (module:attribute)."""
    return dict(sorted(_entry_points().items()))


def _known(name: str, where: str) -> str:
    """The entry point of family ``name``; ResultsError naming ``where`` and the fix."""
    found = _entry_points()
    target = found.get(name)
    if target is None:
        raise ResultsError(
            f"unknown benchmark family {name!r}",
            where=where,
            fix=f"install the plugin that provides it; installed: {', '.join(sorted(found))}",
        )
    return target


def _loaded(what: str, group: str, name: str, target: str) -> Any:
    """The object entry point ``name`` of ``group`` names (``module:attribute``); one
    ResultsError naming the entry point when it cannot be imported."""
    module, _, attr = target.partition(":")
    try:
        return functools.reduce(getattr, attr.split("."), importlib.import_module(module))
    except (ImportError, AttributeError) as exc:
        raise ResultsError(
            f"{what} {name!r} cannot be loaded: {exc}",
            where=f"entry point {group}:{name} = {target}",
            fix="reinstall the package that provides it",
        ) from None


@functools.cache
def family(name: str) -> Family:
    """The registered family ``name``; ResultsError naming the kind and the fix."""
    target = _known(name, "experiment.json: kind")
    obj = _loaded("benchmark family", ENTRY_POINT_GROUP, name, target)
    fam = obj() if isinstance(obj, type) else obj
    if getattr(fam, "name", None) != name:  # a plugin's own declaration must agree
        raise ResultsError(
            f"entry point {name!r} provides a family named {getattr(fam, 'name', None)!r}",
            where=f"entry point {ENTRY_POINT_GROUP}:{name}",
            fix="make the entry-point name and the family's name equal",
        )
    return fam  # type: ignore[no-any-return]


def families() -> list[Family]:
    """Every registered family: job flow first, then the others by name."""
    names = sorted(available(), key=lambda n: (n != DEFAULT_KIND, n))
    return [family(n) for n in names]


#: Command sets that are not families (no ``kind``, no runs of their own: the what-if
#: models, the hosts inventory and lab) register here, the way families do.
COMMANDS_ENTRY_POINT_GROUP = "gridbench.commands"


@runtime_checkable
class CommandSet(Protocol):
    """A group of commands registered under :data:`COMMANDS_ENTRY_POINT_GROUP`."""

    name: str

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None: ...


def command_sets() -> list[CommandSet]:
    """Every registered command set, by name; one that cannot load is one clear error."""
    from importlib.metadata import entry_points

    found: list[CommandSet] = []
    for ep in sorted(entry_points(group=COMMANDS_ENTRY_POINT_GROUP), key=lambda e: e.name):
        obj = _loaded("command set", COMMANDS_ENTRY_POINT_GROUP, ep.name, ep.value)
        if not isinstance(obj, CommandSet) or obj.name != ep.name:
            raise ResultsError(
                f"entry point {ep.name!r} is not a command set named {ep.name!r}",
                where=f"entry point {COMMANDS_ENTRY_POINT_GROUP}:{ep.name} = {ep.value}",
                fix="point it at an object with name and add_commands(sub, ui)",
            )
        found.append(obj)
    return found


def kind_of(experiment: Mapping[str, Any]) -> str:
    """The family name recorded in an experiment.json (job flow when absent)."""
    kind = experiment.get("kind", DEFAULT_KIND)
    return kind if isinstance(kind, str) and kind else DEFAULT_KIND


def family_of(run: RunDir) -> Family:
    """The family of a results directory, by the kind recorded in it."""
    kind = kind_of(run.read_experiment())
    _known(kind, f"{run.experiment_file}: kind")  # an unknown one named with its run
    return family(kind)


def command_of(fam: Family) -> list[str]:
    """The words before a family's own verbs: ``[]`` for job flow (``gridbench run``),
    else its name (``gridbench io run``)."""
    return [] if fam.name == DEFAULT_KIND else [fam.name]


def family_of_spec(data: Any) -> Family | None:
    """The family a spec's plain data belongs to: the one its ``kind:`` names, else the
    one family whose :attr:`OwnsSpecs.spec_marks` its top-level keys carry (None when no
    family, or more than one, claims it)."""
    if not isinstance(data, Mapping):
        return None
    kind = data.get("kind")
    if isinstance(kind, str) and kind in available():
        return family(kind)
    keys = {k for k in data if isinstance(k, str)}
    owners = [f for f in families() if isinstance(f, OwnsSpecs) and keys & f.spec_marks]
    return owners[0] if len(owners) == 1 else None


def not_applicable(fam: Family, command: str, why: str) -> ResultsError:
    """The one-line error of a generic command that does not apply to a family."""
    return ResultsError(
        f"'gridbench {command}' does not apply to {fam.name} runs: {why}",
        fix=f"see 'gridbench {fam.name} --help' for what {fam.name} runs offer"
        if fam.name != DEFAULT_KIND
        else None,
    )
