"""The dashboard's FastAPI application: pages, downloads, live events and /metrics.

The same results store and runner as the CLI: pages read RUN directories through the
store, runs go through :class:`~gridbench.jobflow.experiment.runner.ExperimentRunner`, reports
through the HTML report's builders. Heavy page work runs in the thread pool (sync
endpoints) so that the event loop, shared with live runs, stays free for their timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.datastructures import UploadFile

from gridbench import __version__
from gridbench.errors import GridbenchError, ResultsError, SpecError
from gridbench.family import DEFAULT_KIND
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.spec.plan import Plan, make_plan, needs_confirmation
from gridbench.jobflow.specbase.units import format_rate
from gridbench.report.html import json_for_script, offline_plotlyjs
from gridbench.specload import MAX_SPEC_BYTES, dump_yaml
from gridbench.store.catalogue import list_runs
from gridbench.store.layout import RunDir, json_safe
from gridbench.store.safe_open import CAPS, read_store_bytes
from gridbench.web import presets as presets_mod
from gridbench.web.manager import QueueFull, RunManager, analyse
from gridbench.web.metrics import exposition, make_registry
from gridbench.web.results import build_view, warm
from gridbench.web.runs import RUN_ID, catalogued, resolve_in_root
from gridbench.web.security import (
    AUTH_COOKIE,
    SESSION_MAX_AGE_S,
    AccessPolicy,
    BodyLimit,
    HeadAsGet,
    csrf_token,
    make_middleware,
)
from gridbench.web.spec_form import fields as form_fields
from gridbench.web.study_pages import mount_study

CSV_NAME = re.compile(r"^[a-z0-9_]{1,64}\.csv$")
DOWNLOADS = ("metrics.json", "report.json", "spec.yaml", "plan.json", "experiment.json")
CHECK_JOB_TIMEOUT_S = 30.0
SSE_KEEPALIVE_S = 15.0
SEARCH_FIELDS = (
    "id", "name", "kind", "target", "variant", "backend", "status", "verdict", "description",
    "load_model",
)  # fmt: skip
MAX_SUBSCRIBERS = 32  # event streams per run (browser tabs, scripts)
MAX_CHECKS = 2  # connectivity checks at once (each may submit a job)
MAX_COMPARE = 10  # experiments on one compare page
MAX_JSON_DEPTH = 32  # nesting of posted JSON (a spec is a few levels deep)


def _body_doc(media_type: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a handler that reads its body itself (the schema
    documents it, and the schemathesis test fuzzes it)."""
    schema = {"type": "object", "properties": properties, "required": required}
    return {"requestBody": {"required": True, "content": {media_type: {"schema": schema}}}}


_STRING = {"type": "string"}

log = logging.getLogger(__name__)

NEW_SPEC = """\
name: my-experiment
backend:
  type: reference
  options:
    preset: batched
job:
  runtime: 1s
load:
  model: open
  rate: 1/s
  pool: 16
trials: 1
trial:
  duration: 10s
timeouts:
  status_interval: 0.5s
  drain: 60s
  settle: 2s
collectors:
  - type: edgi
    reports: auto
    poll: 1s
thresholds:
  - metric: latency.overall.p99
    op: "<"
    value: 60
safety:
  max_rate: 10/s
  max_jobs: 5000
  confirm_above: 1000
"""


@dataclass
class WebConfig:
    """Everything the app needs from ``gridbench serve``."""

    root: Path
    policy: AccessPolicy = field(default_factory=AccessPolicy)
    max_running: int = 4
    max_queued: int = 16


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("gridbench.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["rate"] = lambda v: format_rate(float(v)) if v is not None else "–"
    env.filters["clock"] = lambda t: datetime.fromtimestamp(float(t), UTC).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    env.filters["tojson_script"] = lambda v: Markup(
        json_for_script(json.dumps(json_safe(v), allow_nan=False, default=str))
    )
    return env


def _plotly_bytes() -> tuple[bytes, str]:
    body = offline_plotlyjs().encode("utf-8")
    return body, hashlib.sha256(body).hexdigest()[:16]


def _spec_error(exc: GridbenchError) -> dict[str, str]:
    return {"message": exc.message, "where": exc.where or "", "fix": exc.fix or ""}


def matches(entry: Mapping[str, Any], query: str) -> bool:
    """Case-insensitive substring search over the catalogue fields; words must all match."""
    hay = " ".join(str(entry.get(k, "")) for k in SEARCH_FIELDS).lower()
    return all(w in hay for w in query.lower().split())


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "index": p.index,
            "values": ", ".join(f"{k}={v}" for k, v in p.values.items()) or "-",
            "peak": format_rate(p.peak_rate_per_s) if p.peak_rate_per_s is not None else "–",
            "jobs": p.jobs_per_trial if p.jobs_per_trial is not None else "closed loop",
            "seconds": round(p.seconds_per_trial),
        }
        for p in plan.points
    ]


def spec_yaml(data: dict[str, Any]) -> str:
    """YAML of spec data with the top-level keys in the spec's order (name first) and
    nested keys as given (the form must not reshuffle what the user wrote)."""
    import io

    from ruamel.yaml import YAML

    from gridbench.jobflow.spec.model import ExperimentSpec

    order = list(ExperimentSpec.model_fields)
    ordered = {k: data[k] for k in order if k in data}
    ordered.update((k, v) for k, v in data.items() if k not in ordered)
    y = YAML(typ="rt")
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(ordered, buf)
    return buf.getvalue()


def parse_for_form(text: str) -> dict[str, Any]:
    """Spec data for the form (secrets redacted), and the validation error if any."""
    from gridbench.specload import parse_yaml, plain_data

    try:
        _check_size(text)
        data = plain_data(parse_yaml(text, "spec"))
    except GridbenchError as exc:
        return {"data": None, "error": _spec_error(exc)}
    error = None
    try:
        load_spec_text(text, "spec")
    except GridbenchError as exc:
        error = _spec_error(exc)
    return {"data": json_safe(presets_mod.redact(data)), "error": error}


def parse_spec(text: str) -> tuple[Plan, dict[str, Any]]:
    """Validate a posted spec, refuse literal secrets, plan it and check its backend config."""
    from gridbench.jobflow.experiment.check import check_config

    _check_size(text)
    spec, data = load_spec_text(text, "spec")
    presets_mod.refuse_secrets(data, "spec")  # the whole spec: job argv, collectors' URLs...
    plan = make_plan(spec, data, "spec")
    check_config([p.spec for p in plan.points])
    return plan, data


def _check_size(text: str) -> None:
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        raise SpecError("the spec is larger than 1 MiB", where="spec", fix="a spec is short")


def json_depth(obj: Any) -> int:
    """Nesting depth of JSON data, without recursion (it may be deeper than the stack)."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        node, d = todo.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, d)
            todo.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


class BadJSON(ValueError):
    """A posted JSON body that cannot be used; the message says why."""


async def read_json_body(request: Request) -> Any:
    """The request's JSON body, or BadJSON (invalid, or nested deeper than MAX_JSON_DEPTH)."""
    raw = await request.body()
    try:
        body = json.loads(raw)  # its C parser raises RecursionError past the stack's depth
    except RecursionError:
        raise BadJSON(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadJSON(f"the body is not valid JSON: {str(exc)[:200]}") from None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise BadJSON(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    return body


async def json_or_422(request: Request) -> tuple[Any, JSONResponse | None]:
    """The request's JSON body, or the 422 response naming what is wrong with it."""
    try:
        return await read_json_body(request), None
    except BadJSON as exc:
        return None, JSONResponse({"error": str(exc)}, status_code=422)


def _spec_text(run: RunDir) -> str:
    """The run's spec.yaml for "How it was configured", read as foreign input (no link,
    bounded); an unreadable one says why instead."""
    try:
        return run.read_spec()[0]
    except GridbenchError as exc:
        return f"# unreadable: {exc}"


def create_app(cfg: WebConfig) -> FastAPI:
    """The dashboard application for one results root."""
    manager = RunManager(cfg.root, max_running=cfg.max_running, max_queued=cfg.max_queued)
    checks: list[asyncio.Semaphore] = []  # created in the running loop
    registry = make_registry(manager.live)
    env = _env()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warming = asyncio.create_task(asyncio.to_thread(_warm_recent, cfg.root))
        yield
        warming.cancel()
        await manager.shutdown()  # like Ctrl-C for every run this server started

    app = FastAPI(
        title="gridbench",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.manager = manager
    app.middleware("http")(make_middleware(cfg.policy))
    app.add_middleware(BodyLimit)  # caps bodies before anything reads them
    app.add_middleware(HeadAsGet)  # outermost: HEAD is GET without the body
    app.mount("/static", StaticFiles(packages=[("gridbench.web", "static")]), name="static")
    plotly_body, plotly_etag = _plotly_bytes()

    def page(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        body = env.get_template(template).render(
            csrf=csrf_token(request),
            version=__version__,
            plotly_url=f"/vendor/plotly.min.js?v={plotly_etag}",
            auth=cfg.policy.needs_token,
            **ctx,
        )
        return HTMLResponse(body, status_code=status)

    def run_dir(rid: str) -> RunDir | None:
        return resolve_in_root(cfg.root, rid)

    def not_found(request: Request, what: str) -> HTMLResponse:
        return page(request, "error.html", 404, title="Not found", message=what)

    # the study's participant, admin and observer pages (web/study_pages.py)
    mount_study(app, cfg.root, page)

    # -- assets ------------------------------------------------------------------------
    @app.get("/vendor/plotly.min.js")
    def plotly_js(request: Request) -> Response:
        headers = {"cache-control": "public, max-age=31536000, immutable", "etag": plotly_etag}
        if request.headers.get("if-none-match") == plotly_etag:
            return Response(status_code=304, headers=headers)
        return Response(plotly_body, media_type="text/javascript", headers=headers)

    # -- login (only with a token) ----------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> HTMLResponse:
        return page(request, "login.html", error=None)

    @app.post(
        "/login",
        openapi_extra=_body_doc(
            "application/x-www-form-urlencoded", {"token": _STRING, "csrf": _STRING}, ["token"]
        ),
    )
    async def login(request: Request) -> Response:
        form = await request.form()
        token = form.get("token")
        client = request.client.host if request.client else ""
        with cfg.policy.attempt(client) as allowed:
            if not allowed:  # parallel guesses would otherwise share one wait
                return busy_login(request, client)
            # guessing is slowed down: each failure from an address doubles the next wait
            await asyncio.sleep(cfg.policy.login_delay(client))
            sid = cfg.policy.login(token if isinstance(token, str) else "", client)
        if sid is None:
            return page(request, "login.html", 401, error="That token is not valid.")
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(
            AUTH_COOKIE, sid, httponly=True, samesite="strict", path="/",
            max_age=SESSION_MAX_AGE_S, secure=request.url.scheme == "https",
        )  # fmt: skip
        return resp

    def busy_login(request: Request, client: str) -> HTMLResponse:
        wait = max(1, round(cfg.policy.login_delay(client)))
        error = f"A login from this address is being checked; try again in {wait} s."
        resp = page(request, "login.html", 429, error=error)
        resp.headers["retry-after"] = str(wait)
        return resp

    @app.post("/logout")
    def logout(request: Request) -> Response:
        cfg.policy.logout(request.cookies.get(AUTH_COOKIE))
        resp = RedirectResponse("/login" if cfg.policy.needs_token else "/", status_code=303)
        resp.delete_cookie(AUTH_COOKIE, path="/")
        return resp

    # -- experiments list -------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def experiments(request: Request, q: str = "") -> HTMLResponse:
        runs = [catalogued(r) for r in list_runs(cfg.root)]
        for r in runs:
            m = manager.get(str(r.get("id")))
            if m is not None and not m.live.final:
                r["status"] = m.live.status  # queued / analysing are only known here
        shown = [r for r in runs if matches(r, q)] if q.strip() else runs
        return page(request, "list.html", runs=shown, total=len(runs), q=q)

    # -- one experiment ---------------------------------------------------------------------
    @app.get("/experiments/{rid}", response_class=HTMLResponse)
    def experiment(request: Request, rid: str) -> HTMLResponse:
        run = run_dir(rid)
        if run is None:
            return not_found(request, f"No experiment {rid!r} in the results store.")
        try:
            exp = catalogued(run.read_experiment())
        except GridbenchError as exc:  # the store is foreign input: say why, keep serving
            return page(
                request, "error.html", 422, title="Unreadable experiment",
                message=f"unreadable: {exc}",
            )  # fmt: skip
        managed = manager.get(rid) or manager.get(run.path.name)
        live = managed.live if managed is not None else None
        view, view_error = None, None
        if run.metrics_file.exists():
            try:
                view = build_view(run.path, cfg.root)
            except GridbenchError as exc:
                view_error = str(exc)
        tables_dir = run.path / "tables"  # a planted link is not a run's tables
        tables = [] if tables_dir.is_symlink() else sorted(p.name for p in tables_dir.glob("*.csv"))
        downloads = [d for d in DOWNLOADS if (run.path / d).is_file()]
        active = live is not None and not live.final
        if live is not None:
            exp["status"] = live.status
        return page(
            request,
            "experiment.html",
            rid=rid,
            exp=exp,
            live=live.snapshot() if live is not None else None,
            active=active,
            # a study being delivered is "running" without a runner: its pages are served here
            external=not active
            and exp.get("status") in ("running", "created")
            and exp.get("kind") != "study",
            view=view,
            view_error=view_error,
            tables=tables,
            downloads=downloads,
            spec_yaml=_spec_text(run),
            # job flow analyses trials; another family's run has its own records
            has_trials=bool(run.trial_ids()) or exp["kind"] != DEFAULT_KIND,
        )

    @app.get("/experiments/{rid}/events")
    async def events(request: Request, rid: str) -> Response:
        managed = manager.get(rid)
        if managed is None:
            return PlainTextResponse("no live run with this id on this server", status_code=404)
        live = managed.live
        if live.subscribers >= MAX_SUBSCRIBERS:
            return PlainTextResponse(
                f"{MAX_SUBSCRIBERS} event streams of this run are open already: close some tabs",
                status_code=429,
            )

        async def stream() -> AsyncIterator[str]:
            q = live.subscribe()
            try:
                yield _sse("snapshot", live.snapshot())
                if live.final and (managed.task is None or managed.task.done()):
                    yield _sse("end", {"status": live.status})
                    return
                while True:
                    try:
                        kind, data = await asyncio.wait_for(q.get(), SSE_KEEPALIVE_S)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    yield _sse(kind, data)
                    if kind == "end":
                        return
            finally:
                live.unsubscribe(q)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    @app.post("/experiments/{rid}/{action}")
    async def control(request: Request, rid: str, action: str) -> Response:
        if action not in ("stop", "abort", "analyse"):
            return PlainTextResponse("unknown action", status_code=404)
        run = run_dir(rid)
        if run is None:
            return not_found(request, f"No experiment {rid!r} in the results store.")
        if action == "analyse":
            managed = manager.get(rid)
            if managed is not None and not managed.live.final:
                return PlainTextResponse("the run is still going", status_code=409)
            try:
                await asyncio.to_thread(analyse, run.path, cfg.root)
            except GridbenchError as exc:
                return page(request, "error.html", 422, title="Analysis failed", message=str(exc))
        else:
            ok = manager.stop(rid) if action == "stop" else manager.abort(rid)
            if not ok:
                return PlainTextResponse("no live run with this id on this server", 409)
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({"ok": True})
        return RedirectResponse(f"/experiments/{rid}", status_code=303)

    @app.get("/experiments/{rid}/download/{name}")
    def download(request: Request, rid: str, name: str) -> Response:
        run = run_dir(rid)
        if run is None:
            return not_found(request, f"No experiment {rid!r}.")
        if name in DOWNLOADS:
            path = run.path / name
        elif CSV_NAME.match(name):
            path = run.path / "tables" / name
        else:
            return not_found(request, "No such download.")
        if not path.exists() and not path.is_symlink():
            return not_found(request, f"{name} does not exist (analyse the run first?).")
        try:  # read as the store's foreign input: no link anywhere below the run, bounded
            body = read_store_bytes(path, cap=CAPS["json"], base=run.path)
        except (ResultsError, OSError):
            return not_found(request, f"{name} is not a regular file of this run.")
        media = {
            ".json": "application/json",
            ".csv": "text/csv; charset=utf-8",
            ".yaml": "text/plain; charset=utf-8",
        }[path.suffix]
        return Response(
            body,
            media_type=media,
            headers={"Content-Disposition": f'attachment; filename="{rid}-{name}"'},
        )

    # -- new experiment ---------------------------------------------------------------------
    def new_page(request: Request, yaml_text: str, status: int = 200, **extra: Any) -> HTMLResponse:
        pres = presets_mod.all_presets(cfg.root)
        return page(
            request,
            "new.html",
            status,
            yaml_text=presets_mod.redact_text(yaml_text),
            sections=form_fields(),
            presets=pres,
            preset_data={p.key: p.data for p in pres},
            preset_agents={p.key: p.agents for p in pres if p.agents},
            running=[m.live.snapshot() for m in manager.runs.values() if not m.live.final],
            **{"error": None, "plan": None, "steps": None, "confirm_needed": False, **extra},
        )

    @app.get("/new", response_class=HTMLResponse)
    def new_form(request: Request, preset: str = "") -> HTMLResponse:
        text = NEW_SPEC
        if preset:
            chosen = {p.key: p for p in presets_mod.all_presets(cfg.root)}.get(preset)
            if chosen is None:
                return new_page(request, text, 404, error={"message": "unknown preset"})
            if chosen.kind == "example":
                text = str(chosen.data["yaml"])
            else:
                data = load_spec_text(NEW_SPEC, "new")[1]
                data["backend"] = chosen.data
                if chosen.agents:  # a saved preset's agents load the experiment too
                    data["load"]["agents"] = chosen.agents
                text = spec_yaml(data)
        return new_page(request, text)

    @app.post("/new", response_class=HTMLResponse)
    async def new_submit(request: Request) -> Response:
        form = await request.form()
        action = str(form.get("action") or "plan")
        text = form.get("yaml")
        text = text if isinstance(text, str) else ""
        upload = form.get("upload")
        if isinstance(upload, UploadFile) and upload.filename:
            raw = await upload.read(MAX_SPEC_BYTES + 1)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return new_page(request, text, 422, error={"message": "the file is not UTF-8"})
        # parsing and rendering run in threads: the loop times the live runs' submissions
        try:
            plan, data = await asyncio.to_thread(parse_spec, text)
        except GridbenchError as exc:
            return await asyncio.to_thread(new_page, request, text, 422, error=_spec_error(exc))
        confirm_needed = needs_confirmation(plan)
        ctx: dict[str, Any] = {
            "plan": {
                "rows": plan_rows(plan),
                "trials": len(plan.trials),
                "per_point": plan.spec.trials,
                "total_jobs": plan.total_jobs,
                "minutes": round(plan.estimated_seconds / 60, 1),
                "confirm_above": plan.spec.safety.confirm_above,
            },
            "confirm_needed": confirm_needed,
        }
        if action == "check":
            from gridbench.jobflow.experiment.check import check

            if not checks:
                checks.append(asyncio.Semaphore(MAX_CHECKS))
            if checks[0].locked():
                return await asyncio.to_thread(
                    new_page,
                    request,
                    text,
                    429,
                    error={
                        "message": f"{MAX_CHECKS} connectivity checks are running already",
                        "fix": "wait a few seconds and check again",
                    },
                    **ctx,
                )
            async with checks[0]:
                steps = await check(plan.spec, job_timeout_s=CHECK_JOB_TIMEOUT_S)
            ctx["steps"] = [
                {"name": s.name, "ok": s.ok, "detail": s.detail, "fix": s.fix} for s in steps
            ]
        elif action == "start":
            if confirm_needed and form.get("confirm") != "yes":
                return await asyncio.to_thread(
                    new_page,
                    request,
                    text,
                    422,
                    error={
                        "message": f"the plan submits {plan.total_jobs} jobs, above "
                        f"safety.confirm_above ({plan.spec.safety.confirm_above})",
                        "where": "safety.confirm_above",
                        "fix": "tick the confirmation box, or reduce the plan",
                    },
                    **ctx,
                )
            try:
                managed = manager.start(plan, data)
            except QueueFull as exc:
                return new_page(request, text, 429, error=_spec_error(exc), **ctx)
            except GridbenchError as exc:
                return new_page(request, text, 422, error=_spec_error(exc), **ctx)
            except Exception as exc:  # a bug: the log has the traceback, the page does not
                log.exception("starting %s failed", plan.spec.name)
                return page(
                    request,
                    "error.html",
                    500,
                    title="The run could not start",
                    message=f"an internal error ({type(exc).__name__}) stopped the run from "
                    "starting; the server's log has the details",
                )
            return RedirectResponse(f"/experiments/{managed.live.run_id}", status_code=303)
        return await asyncio.to_thread(new_page, request, text, **ctx)

    @app.post(
        "/api/spec/parse", openapi_extra=_body_doc("application/json", {"yaml": _STRING}, ["yaml"])
    )
    async def api_parse(request: Request) -> JSONResponse:
        """YAML text to spec data (for the form), with the validation error if any: 422
        when the YAML itself cannot be read (no data), 200 when it reads but is invalid."""
        body, bad = await json_or_422(request)
        if bad is not None:
            return bad
        text = str(body.get("yaml", "")) if isinstance(body, dict) else ""
        parsed = await asyncio.to_thread(parse_for_form, text)
        return JSONResponse(parsed, status_code=422 if parsed["data"] is None else 200)

    @app.post(
        "/api/spec/dump",
        openapi_extra=_body_doc("application/json", {"data": {"type": "object"}}, ["data"]),
    )
    async def api_dump(request: Request) -> JSONResponse:
        """Spec data (from the form) to YAML text."""
        body, bad = await json_or_422(request)
        if bad is not None:
            return bad
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            return JSONResponse({"error": "data must be an object"}, status_code=422)
        return JSONResponse({"yaml": await asyncio.to_thread(spec_yaml, data)})

    # -- presets ----------------------------------------------------------------------------
    @app.get("/presets", response_class=HTMLResponse)
    def presets_page(request: Request) -> HTMLResponse:
        from gridbench.jobflow.backends.command import presets as command_presets

        shipped = [
            {"info": i, "yaml": dump_yaml(presets_mod.command_preset_options(i.name))}
            for i in command_presets.listing()
        ]
        return page(
            request,
            "presets.html",
            presets=presets_mod.all_presets(cfg.root),
            shipped=shipped,
            saved=presets_mod.saved_presets(cfg.root),
        )

    @app.get("/presets/edit", response_class=HTMLResponse)
    def preset_edit(request: Request, name: str = "", copy: str = "") -> HTMLResponse:
        text = "description: ''\nbackend:\n  type: command\n  options: {}\n"
        if copy:
            try:
                opts = presets_mod.command_preset_options(copy)
            except GridbenchError as exc:
                return page(request, "error.html", 404, title="No preset", message=str(exc))
            text = dump_yaml(
                {"description": f"copy of {copy}", "backend": {"type": "command", "options": opts}}
            )
            name = name or f"my-{copy}"
        elif name:
            try:
                text = presets_mod.read_saved_preset(cfg.root, name) or text
            except ResultsError as exc:
                return page(request, "error.html", 422, title="Unreadable preset", message=str(exc))
        return preset_page(request, name, text)

    def preset_page(
        request: Request, name: str, text: str, status: int = 200, **extra: Any
    ) -> HTMLResponse:
        rows: list[dict[str, str]] = []
        with contextlib.suppress(GridbenchError):
            rows = presets_mod.template_rows(presets_mod.parse_preset(text, "preset")["backend"])
        ctx: dict[str, Any] = {"error": None, "tried": None, "op": "status", "sample": ""}
        ctx.update(extra)
        text = presets_mod.redact_text(text)
        return page(request, "preset_edit.html", status, name=name, text=text, rows=rows, **ctx)

    @app.post("/presets/edit", response_class=HTMLResponse)
    async def preset_save(request: Request) -> Response:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        return await asyncio.to_thread(preset_action, request, fields)

    def preset_action(request: Request, form: dict[str, str]) -> Response:
        name, text = form.get("name", ""), form.get("text", "")
        action = form.get("action")
        try:
            if action == "delete":
                presets_mod.delete_preset(cfg.root, name)
            elif action == "try":
                op, sample = str(form.get("op") or "status"), str(form.get("sample") or "")
                backend = presets_mod.parse_preset(text, "preset")["backend"]
                try:
                    tried = presets_mod.try_pattern(backend, op, sample)
                except GridbenchError as exc:
                    return preset_page(
                        request, name, text, 422, op=op, sample=sample, error=str(exc)
                    )
                return preset_page(request, name, text, op=op, sample=sample, tried=tried)
            else:
                presets_mod.save_preset(cfg.root, name, text)
        except GridbenchError as exc:
            return preset_page(request, name, text, 422, error=str(exc))
        return RedirectResponse("/presets", status_code=303)

    # -- agents -------------------------------------------------------------------------------
    @app.get("/agents", response_class=HTMLResponse)
    def agents(request: Request) -> HTMLResponse:
        return agents_view(request)

    def agents_view(request: Request, status: int = 200, **extra: Any) -> HTMLResponse:
        from gridbench.jobflow.experiment.agent_check import STEP_NAMES
        from gridbench.web.agents_page import agent_presets

        ctx: dict[str, Any] = {"error": None, "result": None, **extra}
        pres = agent_presets(cfg.root)
        return page(request, "agents.html", status, presets=pres, step_names=STEP_NAMES, **ctx)

    @app.post(
        "/agents",
        openapi_extra=_body_doc(
            "application/x-www-form-urlencoded", {"name": _STRING, "csrf": _STRING}, ["name"]
        ),
    )
    async def agents_check(request: Request) -> HTMLResponse:
        """Test the connectivity of a saved preset's agents (bounded as the other checks)."""
        import time

        from gridbench.jobflow.experiment.agent_check import check_agents
        from gridbench.web import agents_page

        form = await request.form()
        name = form.get("name")
        name = name if isinstance(name, str) else ""
        try:
            spec = await asyncio.to_thread(agents_page.preset_spec, cfg.root, name)
        except GridbenchError as exc:
            return await asyncio.to_thread(agents_view, request, 422, error=_spec_error(exc))
        if not checks:
            checks.append(asyncio.Semaphore(MAX_CHECKS))
        if checks[0].locked():
            busy = {
                "message": f"{MAX_CHECKS} connectivity checks are running already",
                "fix": "wait a few seconds and check again",
            }
            return await asyncio.to_thread(agents_view, request, 429, error=busy)
        t0 = time.perf_counter()
        async with checks[0]:
            try:
                rows = await check_agents(spec, job_timeout_s=agents_page.CHECK_JOB_TIMEOUT_S)
            except GridbenchError as exc:
                return await asyncio.to_thread(agents_view, request, 422, error=_spec_error(exc))
        block = spec.load.remote_agents
        result = {
            "name": name,
            "where": agents_page.where(block.model_dump() if block is not None else {}),
            "seconds": round(time.perf_counter() - t0, 1),
            "ok": bool(rows) and all(r.ok for r in rows),
            "rows": agents_page.rows_view(rows),
        }
        return await asyncio.to_thread(agents_view, request, result=result)

    # -- compare and history ------------------------------------------------------------------
    @app.get("/compare", response_class=HTMLResponse)
    def compare(request: Request, ids: Annotated[list[str] | None, Query()] = None) -> HTMLResponse:
        from gridbench.web.compare_view import compare_context

        runs = list_runs(cfg.root)
        # ids begin with their creation time: the oldest is the baseline
        chosen = sorted(dict.fromkeys(i for i in (ids or []) if RUN_ID.match(i)))
        if len(chosen) > MAX_COMPARE:
            return page(
                request, "error.html", 422, title="Too many experiments",
                message=f"compare at most {MAX_COMPARE} experiments at once",
            )  # fmt: skip
        ctx = compare_context(cfg.root, chosen) if len(chosen) >= 2 else {}
        return page(request, "compare.html", runs=runs, chosen=chosen, **ctx)

    @app.get("/history", response_class=HTMLResponse)
    def history(request: Request, experiment: str = "", metric: str = "") -> HTMLResponse:
        from gridbench.web.compare_view import history_context, metric_choices

        runs = list_runs(cfg.root)
        known = bool(RUN_ID.match(experiment))  # never a path from the URL
        ctx = history_context(cfg.root, experiment, metric) if known and metric else {}
        choices = metric_choices(cfg.root, experiment) if known else []
        return page(
            request,
            "history.html",
            runs=runs,
            experiment=experiment,
            metric=metric,
            metric_list=choices,
            **ctx,
        )

    @app.get("/compare.json")
    def compare_json(ids: Annotated[list[str] | None, Query()] = None) -> JSONResponse:
        from gridbench.compare.dispatch import compare_runs
        from gridbench.web.compare_view import run_paths

        chosen = [i for i in (ids or []) if RUN_ID.match(i)]
        if len(chosen) > MAX_COMPARE:
            return JSONResponse(
                {"message": f"compare at most {MAX_COMPARE} experiments at once", "where": "ids"},
                status_code=422,
            )
        try:
            data = compare_runs(cfg.root, run_paths(cfg.root, chosen)).to_dict()
        except GridbenchError as exc:
            return JSONResponse(_spec_error(exc), status_code=422)
        return JSONResponse(data)

    # -- metrics ------------------------------------------------------------------------------
    @app.get("/metrics")
    def metrics() -> Response:
        body, ctype = exposition(registry)
        return Response(body, media_type=ctype)

    return app


WARM_RECENT = 20
WARM_SAMPLES = 5


def _warm_recent(root: Path) -> None:
    """Build the results views of the newest analysed runs, then read their per-job
    samples for comparisons, so that first views are fast."""
    from gridbench.web.compare_view import warm_samples

    recent = [Path(str(e["path"])) for e in list_runs(root)[:WARM_RECENT]]
    analysed = [p for p in recent if (p / "metrics.json").is_file()]
    for path in analysed:
        with contextlib.suppress(Exception):  # a broken run shows its error when opened
            warm(path, root)
    warm_samples(root, [str(p) for p in analysed[:WARM_SAMPLES]])


def _sse(kind: str, data: Any) -> str:
    text = json.dumps(json_safe(data), allow_nan=False, separators=(",", ":"), default=str)
    return f"event: {kind}\ndata: {text}\n\n"
