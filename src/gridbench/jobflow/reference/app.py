"""The reference grid's HTTP API (FastAPI).

POST /jobs              {"name", "runtime_s"?, "fail"?, "application"?, "input_bytes"?,
                        "input_files"?, "output_bytes"?, "output_files"?} -> 201 {"id"}
                        503 {"error","kind": "rejected"|"timeout"} when the CE queue is full,
                        500 {"error","kind": "error"} for an injected submission failure
POST /jobs/status       {"ids": [...]} -> {"jobs": {id: {"state", "message"}}} (unknown omitted)
POST /jobs/cancel       {"ids": [...]} -> {"cancelled": n}
GET  /jobs/{id}/output  text/plain (404 unknown, 409 not finished)
GET  /queue             jobs per tier: ce, bridge, workers, finishing, total, ce_list
GET  /reports/          Apache-style listing of the tiers; /reports/<tier>/ lists published
                        files; /reports/<tier>/<file> serves one
GET  /stamps?after=N     staging stamps after cursor N: {"stamps": [{id, stage, t_ns,
                        attrs}], "next": cursor} (empty unless a tier stages)
GET  /health, /config

The bridge tier alone (``tier="bridge"``, the bridge and worker pool on another host than
the CE) answers the CE instead of clients:

POST /bridge/jobs       a job the CE hands over (a submission's body, with "id" and
                        "bridge_id") -> 201 {"id"}
POST /bridge/status     {"ids": [...]} -> {"jobs": {id: {"state", "message", "dg_id",
                        "ran_s"}}}; a finished job leaves the bridge once answered
POST /bridge/cancel     {"ids": [...]} -> {"cancelled": n}
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from gridbench.errors import BackendError
from gridbench.jobflow.reference.config import GridConfig
from gridbench.jobflow.reference.jobs import JobOrder, SubmitRefused, Tier
from gridbench.jobflow.reference.listing import files_page, tiers_page
from gridbench.jobflow.reference.reports import ReportWriter
from gridbench.jobflow.reference.sim import Grid
from gridbench.jobflow.reference.staging import JobData

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_IDS = 100_000
TIERS = ("ce", "bridge")
# Printable text only: names end up in XML reports, where control characters are illegal.
_TEXT = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"


class SubmitBody(BaseModel):
    """Body of ``POST /jobs``."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=256, pattern=_TEXT)
    runtime_s: float | None = Field(default=None, ge=0.0, le=86_400.0, allow_inf_nan=False)
    fail: bool = False
    application: str | None = Field(default=None, min_length=1, max_length=128, pattern=_TEXT)
    # what the job stages (ce.stage_in, bridge.stage_out); ignored by a tier that does not
    input_bytes: int = Field(default=0, ge=0, le=2**50)
    input_files: int = Field(default=0, ge=0, le=10_000_000)
    output_bytes: int = Field(default=0, ge=0, le=2**50)
    output_files: int = Field(default=0, ge=0, le=10_000_000)

    def data(self) -> JobData | None:
        d = JobData(self.input_bytes, self.input_files, self.output_bytes, self.output_files)
        return None if d == JobData() else d

    def order(self) -> JobOrder:
        """The job as the grid takes it."""
        return JobOrder(self.name, self.runtime_s, self.fail, self.application, self.data())


class HandoverBody(SubmitBody):
    """Body of ``POST /bridge/jobs``: a job the CE hands to the bridge."""

    id: str = Field(min_length=1, max_length=128, pattern=_TEXT)
    bridge_id: str = Field(min_length=1, max_length=128, pattern=_TEXT)


class IdsBody(BaseModel):
    """Body of ``POST /jobs/status`` and ``POST /jobs/cancel``."""

    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(max_length=MAX_IDS)


class BodyLimit:
    """Refuse request bodies above ``max_bytes`` (413) and POSTs without a length (411)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = dict(scope["headers"])
            length = headers.get(b"content-length")
            problem: tuple[int, str] | None = None
            if length is None:
                if headers.get(b"transfer-encoding") is not None:
                    problem = (411, "send a Content-Length header (chunked bodies are refused)")
            elif not length.isdigit():
                problem = (400, "bad Content-Length header")
            elif int(length) > self.max_bytes:
                problem = (413, f"request body larger than {self.max_bytes} bytes")
            if problem is not None:
                resp = JSONResponse({"error": problem[1], "kind": "invalid"}, problem[0])
                await resp(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _grid(request: Request) -> Grid:
    return cast(Grid, request.app.state.grid)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": message, "kind": kind}, status_code=status)


def create_app(config: GridConfig, tier: Tier = "all", bridge_url: str | None = None) -> FastAPI:
    """Build the app; the grid starts and stops with the app's lifespan. ``tier``: which
    tiers it runs (the CE alone needs ``bridge_url``, the bridge tier's base URL).

    When ``config.reports.dir`` is null, a temporary report directory is created at
    start-up and removed at shutdown.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        made: Path | None = None
        reports_dir = config.reports.dir
        try:
            if reports_dir is None:
                made = reports_dir = Path(tempfile.mkdtemp(prefix="gridbench-reference-"))
            grid = Grid(config, reports_dir, tier=tier, bridge_url=bridge_url)
        except OSError as exc:
            # Kept for the starter (uvicorn only logs it): the usual cause is the reports dir.
            app.state.startup_error = BackendError(
                f"cannot write monitoring reports: {exc.strerror or exc}",
                where=str(exc.filename or reports_dir),
                fix="set reports.dir (or --reports-dir) to a writable directory",
            )
            raise
        app.state.grid = grid
        app.state.reports_dir = reports_dir
        await grid.start()
        try:
            yield
        finally:
            await grid.stop()
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)

    app = FastAPI(
        title="gridbench reference grid",
        description="A simulated EDGI chain (CE -> bridge -> worker pool) for demos and tests.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.startup_error = None
    app.add_middleware(BodyLimit)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        field = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return JSONResponse(
            {
                "error": f"invalid request: {field}: {first.get('msg', 'invalid')}",
                "kind": "invalid",
                "detail": jsonable_encoder(errors, custom_encoder={Exception: str}),
            },
            status_code=422,
        )

    @app.post("/jobs", status_code=201)
    async def submit(body: SubmitBody, request: Request) -> Any:
        grid = _grid(request)
        if grid.tier == "bridge":
            return _error(409, "this is the bridge tier: submit to the CE", "wrong_tier")
        try:
            job = await grid.submit_held(body.order())
        except SubmitRefused as exc:
            return _error(500 if exc.kind == "error" else 503, exc.message, exc.kind)
        return {"id": job.ce_id}

    @app.post("/jobs/status")
    async def status(body: IdsBody, request: Request) -> dict[str, Any]:
        found = _grid(request).status(body.ids)
        return {"jobs": {i: {"state": s, "message": m} for i, (s, m) in found.items()}}

    @app.post("/jobs/cancel")
    async def cancel(body: IdsBody, request: Request) -> dict[str, int]:
        return {"cancelled": _grid(request).cancel(body.ids)}

    @app.get("/jobs/{job_id}/output", response_model=None)
    async def output(job_id: str, request: Request) -> PlainTextResponse | JSONResponse:
        try:
            text = _grid(request).output(job_id)
        except KeyError:
            return _error(404, f"unknown job {job_id!r}", "unknown")
        if text is None:
            return _error(409, f"job {job_id!r} has not finished", "not_finished")
        return PlainTextResponse(text)

    if tier == "bridge":

        @app.post("/bridge/jobs", status_code=201)
        async def bridge_jobs(body: HandoverBody, request: Request) -> dict[str, str]:
            _grid(request).bridge_accept(body.id, body.bridge_id, body.order())
            return {"id": body.id}

        @app.post("/bridge/status")
        async def bridge_status(body: IdsBody, request: Request) -> dict[str, Any]:
            return {"jobs": _grid(request).bridge_status(body.ids)}

        @app.post("/bridge/cancel")
        async def bridge_cancel(body: IdsBody, request: Request) -> dict[str, int]:
            return {"cancelled": _grid(request).cancel(body.ids)}

    @app.get("/stamps")
    async def stamps(request: Request, after: int = 0) -> dict[str, Any]:
        rows, nxt = _grid(request).stamps.page(after)
        return {"stamps": rows, "next": nxt}

    @app.get("/queue")
    async def queue(request: Request) -> dict[str, int]:
        return _grid(request).queue_lengths()

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        grid = _grid(request)
        return {
            "ok": True,
            "policy": grid.config.status_update.policy,
            "time_ns": time.time_ns(),  # lets a client estimate the clock offset
            "tiers": list(TIERS) if tier == "all" else [tier],
            "reports": "/reports/",
        }

    @app.get("/config")
    async def effective_config(request: Request) -> dict[str, Any]:
        data = config.model_dump(mode="json")
        data["reports"]["dir"] = str(request.app.state.reports_dir)
        return data

    @app.get("/reports/", response_class=HTMLResponse)
    async def reports_root() -> str:
        return tiers_page(TIERS)

    @app.get("/reports/{tier}/", response_model=None)
    async def reports_tier(tier: str, request: Request) -> HTMLResponse | JSONResponse:
        writer = _writer(request, tier)
        if writer is None:
            return _error(404, "no such report directory", "not_found")
        return HTMLResponse(files_page(tier, writer.published()))

    @app.get("/reports/{tier}/{name}", response_model=None)
    async def report_file(tier: str, name: str, request: Request) -> FileResponse | JSONResponse:
        writer = _writer(request, tier)
        path = writer.published_path(name) if writer is not None else None
        if path is None:
            return _error(404, "no such published report", "not_found")
        return FileResponse(path, media_type="application/xml")

    return app


def _writer(request: Request, tier: str) -> ReportWriter | None:
    grid = _grid(request)
    if tier == "ce":
        return grid.ce_reports
    if tier == "bridge":
        return grid.bridge_reports
    return None
