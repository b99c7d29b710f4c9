"""What a family gives the dashboard, and what the dashboard lends it.

A family with pages of its own (:class:`WebPages`) builds its routers on the
:class:`WebContext` the dashboard hands in, so that it never imports the web layer; a run
it starts there is a :class:`LiveRunner` the dashboard's run manager (:class:`LiveRuns`)
queues, shows live through a :class:`LiveSink`, stops and aborts (:class:`Abortable`) and
whose figures go on ``/metrics`` (:class:`LiveMetered`, :class:`MetricSource`). A
family's runs may have pages of their own (:class:`RunPages`). The helpers at the end
document a handler's body for OpenAPI and show an error as the pages do.

Light at import, as :mod:`gridbench.family` is: core does not depend on the web
framework, so routers and requests are typed ``Any``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gridbench.errors import GridbenchError

if TYPE_CHECKING:
    import asyncio

    from gridbench.store.layout import RunDir


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
    """What the dashboard lends a family's pages (as :class:`gridbench.family.Ui` lends its
    commands), so that a family never imports the web layer. Login, CSRF and the
    Host/Origin checks are the dashboard's middleware: they guard a family's routes as they
    guard its own."""

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
