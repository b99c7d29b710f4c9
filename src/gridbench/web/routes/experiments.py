"""The experiments: the list (with search), one experiment's page, its downloads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import HasRecords, family_of
from gridbench.family.dashboard import RunPages
from gridbench.listing import catalogue
from gridbench.store.layout import RunDir
from gridbench.store.safe_open import CAPS, read_store_bytes
from gridbench.web.dashboard import Dash
from gridbench.web.results import build_view
from gridbench.web.runs import catalogued, list_columns, listed

CSV_NAME = re.compile(r"^[a-z0-9_]{1,64}\.csv$")
DOWNLOADS = ("metrics.json", "report.json", "spec.yaml", "plan.json", "experiment.json")
#: the catalogue fields every run's search covers; a family adds its own
#: (``CatalogueEntry.search``: job flow's backend and load model)
SEARCH_FIELDS = ("id", "name", "kind", "target", "variant", "status", "verdict", "description")
MEDIA = {
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".yaml": "text/plain; charset=utf-8",
}

router = APIRouter()


def matches(entry: Mapping[str, Any], query: str) -> bool:
    """Case-insensitive substring search over the catalogue fields and the text the run's
    family adds (a list row's ``search``: :mod:`gridbench.listing`); words must all
    match."""
    fields = [str(entry.get(k, "")) for k in SEARCH_FIELDS]
    hay = " ".join([*fields, *entry.get("search", ())]).lower()
    return all(w in hay for w in query.lower().split())


def spec_text(run: RunDir) -> str:
    """The run's spec.yaml for "How it was configured", read as foreign input (no link,
    bounded); an unreadable one says why instead."""
    try:
        return run.read_spec()[0]
    except GridbenchError as exc:
        return f"# unreadable: {exc}"


def has_records(run: RunDir) -> bool:
    """Whether the run holds what its family's analysis reads (:class:`HasRecords`; a
    family that does not say, or is not installed here: yes)."""
    try:
        fam = family_of(run)
    except GridbenchError:
        return True
    return fam.has_records(run) if isinstance(fam, HasRecords) else True


def run_pages(run: RunDir) -> tuple[tuple[str, str], ...]:
    """The run's own pages in its family (:class:`RunPages`: a study's admin and observer
    pages), as (label, path)."""
    try:
        fam = family_of(run)
    except GridbenchError:
        return ()
    return fam.run_pages(run.id) if isinstance(fam, RunPages) else ()


@router.get("/", response_class=HTMLResponse)
def experiments(request: Request, dash: Dash, q: str = "") -> HTMLResponse:
    runs = [listed(r) for r in catalogue(dash.root)]  # one summary a run, from the index
    for r in runs:
        m = dash.manager.get(str(r.get("id")))
        if m is not None and not m.live.final:
            r["status"] = m.live.status  # queued / analysing are only known here
    shown = [r for r in runs if matches(r, q)] if q.strip() else runs
    columns = list_columns(runs)  # over every run: the table keeps its shape as one searches
    return dash.render(request, "list.html", runs=shown, total=len(runs), q=q, columns=columns)


@router.get("/experiments/{rid}", response_class=HTMLResponse)
def experiment(request: Request, dash: Dash, rid: str) -> HTMLResponse:
    run = dash.resolve(rid)
    if run is None:
        return dash.not_found(request, f"No experiment {rid!r} in the results store.")
    try:
        exp = catalogued(run.read_experiment())
    except GridbenchError as exc:  # the store is foreign input: say why, keep serving
        return dash.error(request, 422, "Unreadable experiment", f"unreadable: {exc}")
    managed = dash.manager.get(rid) or dash.manager.get(run.path.name)
    live = managed.live if managed is not None else None
    view, view_error = None, None
    if run.metrics_file.exists():
        try:
            view = build_view(run.path, dash.root)
        except GridbenchError as exc:
            view_error = str(exc)
    tables_dir = run.path / "tables"  # a planted link is not a run's tables
    tables = [] if tables_dir.is_symlink() else sorted(p.name for p in tables_dir.glob("*.csv"))
    active = live is not None and not live.final
    if live is not None:
        exp["status"] = live.status
    own_pages = run_pages(run)
    return dash.render(
        request,
        "experiment.html",
        rid=rid,
        exp=exp,
        live=live.snapshot() if live is not None else None,
        # the family's part of the live view (job flow's trials, agents and charts)
        live_template=managed.runner.live_template if managed is not None else "",
        live_script=managed.runner.live_script if managed is not None else "",
        active=active,
        # a study being delivered is "running" without a runner: its family's pages serve
        # it here (and a run started on /start runs here, in a thread)
        external=not active
        and exp.get("status") in ("running", "created")
        and not own_pages
        and not dash.spec_runs.running(run.id),
        own_pages=own_pages,
        view=view,
        view_error=view_error,
        tables=tables,
        downloads=[d for d in DOWNLOADS if (run.path / d).is_file()],
        spec_yaml=spec_text(run),
        # job flow analyses trials; another family's run has its own records
        has_trials=has_records(run),
    )


@router.get("/experiments/{rid}/download/{name}")
def download(request: Request, dash: Dash, rid: str, name: str) -> Response:
    run = dash.resolve(rid)
    if run is None:
        return dash.not_found(request, f"No experiment {rid!r}.")
    if name in DOWNLOADS:
        path = run.path / name
    elif CSV_NAME.match(name):
        path = run.path / "tables" / name
    else:
        return dash.not_found(request, "No such download.")
    if not path.exists() and not path.is_symlink():
        return dash.not_found(request, f"{name} does not exist (analyse the run first?).")
    try:  # read as the store's foreign input: no link anywhere below the run, bounded
        body = read_store_bytes(path, cap=CAPS["json"], base=run.path)
    except (ResultsError, OSError):
        return dash.not_found(request, f"{name} is not a regular file of this run.")
    return Response(
        body,
        media_type=MEDIA[path.suffix],
        headers={"Content-Disposition": f'attachment; filename="{rid}-{name}"'},
    )
