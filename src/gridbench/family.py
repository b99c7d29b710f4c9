"""Benchmark families: the seam every kind of benchmark plugs into.

A family (job flow, storage, and whatever comes next) owns its spec model, its commands,
how it runs into a results directory, how it analyses that directory into versioned
metrics, its validity rules and the report sections its metrics produce. Everything
generic (``list``, ``show``, ``analyze``, ``report``, ``compare``, ``history``,
``cleanup``, the dashboard) finds the family of a run by the ``kind`` recorded in its
``experiment.json`` and goes through this protocol; none of it knows a family's metrics.

Families register through the ``gridbench.families`` entry point (built-ins too, in
pyproject.toml), so a plugin package adds one without touching gridbench. See
docs/architecture.md for a worked example.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_THRESHOLD,
    GridbenchError,
    ResultsError,
)
from gridbench.sections import Report
from gridbench.sections import ValidityRule as ValidityRule  # re-exported: families use it
from gridbench.states import ABORTED, COMPLETE, FAIL, FAILED, PASS, VOID, run_state

# Light at import: the command line loads every family (``gridbench --help``), and a
# family's module imports this one; what only annotations name is imported for the type
# checker alone, and what a method needs, in the method.
if TYPE_CHECKING:
    import asyncio

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


@contextmanager
def recorded_end(finish: Callable[[str, str | None], object]) -> Iterator[None]:
    """How a family's run ended, handed to ``finish(status, error)`` whatever happens:
    complete; aborted by Ctrl-C ("interrupted"); failed, with a GridbenchError's own text
    or another error's type and text. The error goes on after ``finish``."""
    status, error = COMPLETE, None
    try:
        yield
    except KeyboardInterrupt:
        status, error = ABORTED, "interrupted"
        raise
    except GridbenchError as exc:
        status, error = FAILED, str(exc)
        raise
    except BaseException as exc:
        status, error = FAILED, f"{type(exc).__name__}: {exc}"
        raise
    finally:
        finish(status, error)


@runtime_checkable
class StartsFromSpec(Protocol):
    """A family whose runs can be started from a spec's text: the dashboard's ``/start``
    page offers it (job flow has its own page, ``/new``, with a live view)."""

    def runner_for(self, text: str, root: Path) -> Executes:
        """Validate ``text`` (SpecError naming where and the fix) and check what can be
        checked before anything is written; the runner writes one results folder under
        ``root`` when executed, in a worker thread."""
        ...


class QueueFull(GridbenchError):
    """More runs wait for a slot than the dashboard accepts (``--max-queued``)."""


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run the dashboard's run manager drove ended."""

    status: str  # a run state (gridbench.states): completed, failed, aborted ...
    error: str | None = None
    #: whether it recorded anything to analyse (the manager analyses it then, as the CLI)
    recorded: bool = True


class LiveSink(Protocol):
    """Where a running run's live view goes: the dashboard pushes each update at once to
    the run's listeners (the event stream of its page)."""

    def publish(self, kind: str, data: Any) -> None:
        """One update of kind ``kind`` (JSON-safe ``data``) to every listener."""
        ...

    def message(self, text: str) -> None:
        """A line for the run's message list."""
        ...

    def set_status(self, status: str, error: str | None = None) -> None:
        """The run's state (gridbench.states), and what went wrong if it failed."""
        ...


@runtime_checkable
class Abortable(Protocol):
    """The abort hook of a runner the dashboard drives (its Stop and Abort buttons)."""

    def abort(self) -> None:
        """As the command line's first Ctrl-C: start no more work, cancel what is
        outstanding, save what was recorded (the run then ends as aborted)."""
        ...

    def finish_current(self) -> None:
        """Let the part running now (job flow: the trial) end, then start no more."""
        ...


@runtime_checkable
class LiveRunner(Abortable, Protocol):
    """A run a family's pages hand the dashboard's run manager (:class:`LiveRuns`): its
    results folder exists already; the manager queues it, runs it in the server's event
    loop, shows it live, stops and aborts it, and analyses it when it ends."""

    run: RunDir
    name: str
    #: the family's template of its part of the live view (its Pages' templates), drawn
    #: from :meth:`snapshot` as ``live`` inside the dashboard's frame (state, messages)
    live_template: str
    #: the URL of the script that keeps it live (the family's static files: its Pages'),
    #: loaded after the dashboard's charts script
    live_script: str

    def snapshot(self) -> dict[str, Any]:
        """The family's part of the live view, from scratch (JSON-safe)."""
        ...

    async def execute(self, sink: LiveSink) -> RunEnd:
        """Run to the end, publishing updates to ``sink``."""
        ...


@dataclass(frozen=True, slots=True)
class LiveMetric:
    """One metric family of the dashboard's ``/metrics`` (OpenMetrics) that a family's
    live runs feed: declared by the family (:class:`LiveMetered`) whether or not a run is
    live, its samples taken from each live runner (:class:`MetricSource`)."""

    name: str  # the full metric name, gridbench_<...>
    doc: str  # its HELP text
    counter: bool = False  # a counter, else a gauge
    #: its label names after ``experiment`` and ``name`` (the run's id and name, which
    #: the dashboard adds to every sample)
    labels: tuple[str, ...] = ()
    unit: str = ""  # OpenMetrics unit, appended to the name (``per_second``)


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One sample of a :class:`LiveMetric` from a live runner."""

    metric: str  # the LiveMetric's name
    value: float
    labels: tuple[str, ...] = ()  # the values of the LiveMetric's own labels, in order


@runtime_checkable
class LiveMetered(Protocol):
    """A family whose live runs have figures for the dashboard's ``/metrics`` (job flow:
    each trial's job counters, the offered and achieved rates)."""

    @property
    def live_metrics(self) -> tuple[LiveMetric, ...]:
        """The metric families its runners' samples belong to, in the order shown."""
        ...


@runtime_checkable
class MetricSource(Protocol):
    """A :class:`LiveRunner` that samples its figures for ``/metrics`` at each scrape."""

    def metric_samples(self, *, final: bool) -> list[MetricSample]:
        """The current value of each of its figures (its family's :class:`LiveMetric`
        names); ``final`` when the run has ended (momentary figures, a rate, are left
        out then)."""
        ...


class LiveRuns(Protocol):
    """The dashboard's run manager as a family's pages see it."""

    def start(self, make: Callable[[], LiveRunner]) -> str:
        """Queue the runner ``make`` returns (called only when there is room: it makes the
        run's folder); its run id (its page is ``/experiments/<id>``). QueueFull, before
        anything is made, when too many runs wait already."""
        ...

    def running(self) -> list[dict[str, Any]]:
        """The live views of the runs not finished yet."""
        ...


class WebContext(Protocol):
    """What the dashboard lends a family's pages (as :class:`Ui` lends its commands), so
    that a family never imports the web layer. Login, CSRF and the Host/Origin checks are
    the dashboard's middleware: they guard a family's routes as they guard its own."""

    root: Path  # the results root the dashboard serves

    def render(self, request: Any, template: str, status: int = 200, **ctx: Any) -> Any:
        """An HTML response: ``template`` (the dashboard's or the family's own) rendered
        with the CSRF token and the context every page has (``base.html`` to extend)."""
        ...

    def resolve(self, rid: str) -> RunDir | None:
        """The run ``rid`` names in the results root (folder name or id), or None."""
        ...

    #: connectivity checks that may run at once (:meth:`checks`)
    max_checks: int

    @property
    def runs(self) -> LiveRuns:
        """The run manager: live runs started from a family's pages."""
        ...

    def error(self, request: Any, status: int, title: str, message: str) -> Any:
        """The error page."""
        ...

    def checks(self) -> asyncio.Semaphore:
        """The slots of connectivity checks, shared by every page that runs one."""
        ...

    async def json_body(self, request: Any) -> tuple[Any, Any]:
        """The request's JSON body (bounded in depth) and None, or None and the 422
        response naming what is wrong with it."""
        ...


@runtime_checkable
class RunPages(Protocol):
    """A family whose runs have pages of their own in the dashboard (a study's admin and
    observer pages): a run's page links them, and a run of the family that is "running"
    with no runner is served by those pages (not by a process elsewhere)."""

    def run_pages(self, run_id: str) -> tuple[tuple[str, str], ...]:
        """(label, path) of each of the run's own pages."""
        ...


@dataclass(frozen=True, slots=True)
class Pages:
    """A family's own dashboard pages."""

    #: FastAPI ``APIRouter`` objects, included in the app after the dashboard's routes
    #: (typed ``Any``: core does not depend on the web framework)
    routers: tuple[Any, ...]
    #: a package with a ``templates/`` folder of the pages' Jinja templates, if any
    templates: str | None = None
    #: a package with a ``static/`` folder of the pages' scripts and styles, if any,
    #: served at ``/static/<family name>/``
    static: str | None = None


@runtime_checkable
class WebPages(Protocol):
    """A family with pages of its own in the dashboard (a study's participant links)."""

    def web_pages(self, web: WebContext) -> Pages:
        """The family's routers, built on ``web`` (called once, when the app is made)."""
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


# -- helpers for a family's pages ----------------------------------------------------------

STRING = {"type": "string"}


def body_doc(media_type: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a handler that reads its body itself (the schema
    documents it, and the schemathesis test fuzzes it)."""
    schema = {"type": "object", "properties": properties, "required": required}
    return {"requestBody": {"required": True, "content": {media_type: {"schema": schema}}}}


def form_doc(*fields: str, required: list[str]) -> dict[str, Any]:
    """:func:`body_doc` of a urlencoded form of string fields."""
    props = {f: STRING for f in fields}
    return body_doc("application/x-www-form-urlencoded", props, required)


def error_dict(exc: GridbenchError) -> dict[str, str]:
    """An error as the pages and the JSON API show it: what, where, the fix."""
    return {"message": exc.message, "where": exc.where or "", "fix": exc.fix or ""}


# -- a family made of its own modules -----------------------------------------------------


def lazy(target: str) -> Any:
    """The object at ``"module:attribute"``, imported on first use: a family's parts stay
    unimported until a command or a run of that family needs them."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class ModuleFamily:
    """A family whose members are functions in its own modules, named as data
    (``"module:attribute"``) and imported when first called. A built-in family is a
    subclass that sets the names and keeps only what is its own (exit code, verdict,
    catalogue)::

        class Storage(ModuleFamily):
            name, title, schema = "io", "storage: ...", "gridbench.io/1"
            rules_at = "gridbench.io.validity:IO_VALIDITY_RULES"
            commands_at = "gridbench.io.cli:COMMANDS"  # declared: gridbench.commandline
            analysis_at = "gridbench.io.metrics:analyze_and_write"  # (run) -> metrics
            check_at = "gridbench.io.metrics_schema:validate_metrics"  # (metrics, where)
            report_at = "gridbench.io.report:build_report"  # (metrics, **report_inputs)
    """

    name: str
    title: str
    schema: str
    rules_at: str
    commands_at: str
    analysis_at: str
    check_at: str
    report_at: str

    @property
    def validity_rules(self) -> tuple[ValidityRule, ...]:
        """The family's validity rules."""
        rules: tuple[ValidityRule, ...] = lazy(self.rules_at)
        return rules

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        """The family's own commands (``gridbench <name> ...``): ``commands_at`` names their
        declaration (a :class:`gridbench.commandline.Commands`, whose code is imported
        only when a command runs) or a function ``(sub, ui)`` that adds them."""
        declared = lazy(self.commands_at)
        if isinstance(declared, CommandSet):
            declared.add_commands(sub, ui)
        else:
            declared(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        """Read the run's files (untrusted), analyse them, write metrics.json."""
        metrics: dict[str, Any] = lazy(self.analysis_at)(run)
        return metrics

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        """Check the metrics, then the typed report with the run's "how it was
        configured" (:func:`gridbench.testplan.report_inputs`)."""
        from gridbench.testplan import report_inputs

        lazy(self.check_at)(metrics, str(run.metrics_file))
        report: Report = lazy(self.report_at)(metrics, **report_inputs(run))
        return report


class ComparableFamily(ModuleFamily):
    """A :class:`ModuleFamily` that is :class:`Comparable`: ``figures_at`` names its
    ``figures(metrics) -> list[Figure]``."""

    figures_at: str

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        """The comparable figures (compare, history) of an analysed run."""
        found: list[Figure] = lazy(self.figures_at)(metrics)
        return found


class StartsFromSpecAt:
    """A family's :class:`StartsFromSpec` made of data: ``runner_at`` names its
    ``runner_for_text(text, root)`` (mixed into a :class:`ModuleFamily`)."""

    runner_at: str

    def runner_for(self, text: str, root: Path) -> Executes:
        """A run of the spec ``text`` (:class:`~gridbench.family.StartsFromSpec`: the
        dashboard's /start), validated now, not started."""
        made: Executes = lazy(self.runner_at)(text, root)
        return made


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


def status_exit_code(metrics: Mapping[str, Any], *, passed: bool) -> int:
    """The exit code of a run that records a ``status``: 3 when it failed, 130 when it was
    aborted, else 0 when ``passed`` (its thresholds and checks) and 1 when not."""
    status = metrics.get("status")
    if status == "failed":
        return EXIT_BACKEND
    if status == "aborted":
        return EXIT_INTERRUPTED
    return EXIT_OK if passed else EXIT_THRESHOLD


def status_verdict(
    metrics: Mapping[str, Any], code: int, *, flagged: str, also: str = "", void: str = ""
) -> str:
    """pass or fail by ``code`` (else the run's status), then ``also`` (a family's own
    remark) in parentheses, then ``flagged`` when the metrics' validity says some figure
    is not to be trusted. ``void``: what voids the comparison (a figure better than its
    floor): the verdict is then "void", never "pass", and says why first."""
    word = {EXIT_OK: PASS, EXIT_THRESHOLD: FAIL}.get(code, run_state(metrics.get("status")))
    if void:
        word = f"{VOID if word == PASS else word} ({void})"
    if also:
        word += f" ({also})"
    validity = metrics.get("validity")
    if isinstance(validity, Mapping) and not validity.get("valid", True):
        word += f" ({flagged})"
    return word
