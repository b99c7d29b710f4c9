"""``/compare`` (experiments side by side), ``/compare.json`` and ``/history`` (one
metric across runs of a spec); the views are built by web/compare_view.py."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from gridbench.compare.dispatch import compare_runs
from gridbench.errors import GridbenchError
from gridbench.family import Comparable, family, kind_of
from gridbench.listing import catalogue
from gridbench.swept import SweptComparable
from gridbench.web.bodies import error_dict
from gridbench.web.compare_view import compare_context, history_context, metric_choices, run_paths
from gridbench.web.dashboard import Dash
from gridbench.web.runs import RUN_ID

MAX_COMPARE = 10  # experiments on one compare page
TOO_MANY = f"compare at most {MAX_COMPARE} experiments at once"

router = APIRouter()
Ids = Annotated[list[str] | None, Query()]


def comparable_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs the compare page can compare, each with its ``kind``: readable, analysed,
    of a family that gives comparable figures (the picker offers no run the comparison
    would then refuse; runs of one family are compared, so the page groups them)."""
    out = []
    for r in runs:
        if str(r.get("status", "")).startswith("unreadable"):
            continue
        if not (r.get("analysed") or r.get("verdict")):
            continue  # not analysed: nothing to compare yet
        kind = kind_of(r)
        try:
            fam = family(kind)
        except GridbenchError:  # a plugin that is not installed here
            continue
        if isinstance(fam, SweptComparable | Comparable):
            out.append({**r, "kind": kind})
    return out


@router.get("/compare", response_class=HTMLResponse)
def compare(request: Request, dash: Dash, ids: Ids = None, charts: str = "") -> HTMLResponse:
    runs = comparable_runs(catalogue(dash.root))  # the store's list: one summary a run
    # ids begin with their creation time: the oldest is the baseline
    chosen = sorted(dict.fromkeys(i for i in (ids or []) if RUN_ID.match(i)))
    if len(chosen) > MAX_COMPARE:
        return dash.error(request, 422, "Too many experiments", TOO_MANY)
    # charts of every metric only when asked (?charts=all): the page leads with what differs
    all_charts = charts == "all"
    ctx = compare_context(dash.root, chosen, all_charts=all_charts) if len(chosen) >= 2 else {}
    return dash.render(request, "compare.html", runs=runs, chosen=chosen, **ctx)


@router.get("/history", response_class=HTMLResponse)
def history(request: Request, dash: Dash, experiment: str = "", metric: str = "") -> HTMLResponse:
    runs = catalogue(dash.root)
    known = bool(RUN_ID.match(experiment))  # never a path from the URL
    ctx = history_context(dash.root, experiment, metric) if known and metric else {}
    choices = metric_choices(dash.root, experiment) if known else []
    return dash.render(
        request,
        "history.html",
        runs=runs,
        experiment=experiment,
        metric=metric,
        metric_list=choices,
        **ctx,
    )


@router.get("/compare.json")
def compare_json(dash: Dash, ids: Ids = None) -> JSONResponse:
    chosen = [i for i in (ids or []) if RUN_ID.match(i)]
    if len(chosen) > MAX_COMPARE:
        return JSONResponse({"message": TOO_MANY, "where": "ids"}, status_code=422)
    try:
        data = compare_runs(dash.root, run_paths(dash.root, chosen)).to_dict()
    except GridbenchError as exc:
        return JSONResponse(error_dict(exc), status_code=422)
    return JSONResponse(data)
