"""HTTP client for the reference grid (``gridbench reference serve``).

With no ``url`` it starts its own grid as a child process on a free loopback port, so a
fresh checkout benchmarks something real with no setup. The grid's CPU is excluded from
the client's resource samples (it is the system under test, not the client).

With ``hosts: {ce: NAME, bridge: NAME}`` and an ``inventory`` it starts the grid split
across two hosts instead (:mod:`gridbench.jobflow.backends.reference_hosts`): the bridge
and worker pool on one, the CE on the other, each over SSH with the host's python.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import (
    STAGING_FIELDS,
    Capabilities,
    DataStager,
    JobRequest,
    JobState,
    JobStatus,
    ReportPublisher,
    RuntimeInfoSource,
    SubmitError,
)
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.backends.reference_hosts import TierHosts, TierProcess, start_tiers
from gridbench.jobflow.backends.reference_staging import (
    staging_body,
    staging_configured,
    stamp_events,
    with_staging,
)
from gridbench.jobflow.backends.spawn import start_time
from gridbench.jobflow.backends.sut import exclude_pid
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.ingest_run import edgi_chain
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
    Event,
    Precision,
)
from gridbench.store.spawned import add_holder, owned_temp_dir

#: the spec field of the embedded grid's overrides, as errors name it
GRID_FIELD = "backend.options.grid"

STARTUP_TIMEOUT_S = 30.0
#: The start of an embedded grid's temporary folder (its configuration and stderr).
GRID_TMP_PREFIX = "gridbench-grid-"


class ReferenceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str | None = Field(default=None, description="base URL; none: start an embedded grid")
    preset: str = "sequential"
    grid: dict[str, Any] = Field(default_factory=dict, description="config overrides (embedded)")
    reports_dir: str | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    max_connections: int = Field(default=64, ge=1)
    dt_precision: str = "ms"
    hosts: TierHosts | None = Field(
        default=None, description="{ce: HOST, bridge: HOST}: the tiers on inventory hosts"
    )
    inventory: str | None = Field(default=None, description="the hosts file naming them")


_STATES = {s.value: s for s in JobState}


class ReferenceBackend:
    name: ClassVar[str] = "reference"

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        self.options = options or ReferenceOptions()
        self.url = (self.options.url or "").rstrip("/")
        self._client: httpx.AsyncClient | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._tmp: Path | None = None
        self._staging: bool | None = None  # known once asked (see _stages_data)
        self._cursors: dict[str, int] = {}  # of GET /stamps, per tier's URL
        self._tiers: list[TierProcess] = []  # the grid split across hosts
        self.bridge_url = ""  # the bridge tier's URL when split

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> ReferenceBackend:
        opts = parse_options(ReferenceOptions, options, cls.name)
        if opts.hosts is not None:
            opts.hosts.check(opts.inventory, opts.url)  # a typo: one error, did-you-mean
        return cls(opts)

    def stage_chain(self) -> StageChain:
        prec = Precision.MS if self.options.dt_precision == "ms" else Precision.S
        server = (
            "ce_entry",
            "ce_submit",
            "bridge_entry",
            "bridge_submit",
            "bridge_done",
            "ce_done",
        )
        chain = edgi_chain(precision_ns=dict.fromkeys(server, prec))
        if not self._stages_data():
            return chain  # the default: the EDGI chain exactly as before
        return with_staging(chain)

    def _grid_config(self) -> GridConfig:
        """The embedded grid's configuration: the preset with the spec's overrides."""
        from gridbench.jobflow.reference.presets import build_config

        return build_config(
            self.options.preset, overrides=self.options.grid, overrides_at=GRID_FIELD
        )

    def _stages_data(self) -> bool:
        """Whether the grid stages data: from the embedded grid's configuration, or (a
        grid at ``url``) what its ``/config`` said when opened."""
        if self._staging is None:
            if self.options.url:
                return False
            self._staging = self._grid_config().stages_data
        return self._staging

    def staged_fields(self) -> frozenset[str]:
        """Inputs when the CE has a ``stage_in`` link, outputs when the bridge has a
        ``stage_out`` one; a grid at ``url`` decides when opened, so all of them."""
        if self.options.url:
            return frozenset(STAGING_FIELDS)
        cfg = self._grid_config()
        on = {"input": cfg.ce.stage_in.enabled, "output": cfg.bridge.stage_out.enabled}
        return frozenset(f for f in STAGING_FIELDS if on[f.split("_")[0]])

    def capabilities(self) -> Capabilities:
        """The embedded grid's bounds from its configuration: the CE's queue (queued or in
        preparation) and the slower of the CE and bridge tiers (servers over mean service
        time); a grid at ``url`` runs a configuration not known here."""
        if self.options.url:
            return Capabilities(queue_length=True, server_events=bool(self._staging))
        cfg = self._grid_config()
        tiers = [(cfg.ce.concurrency, cfg.ce.service.mean)]
        tiers.append((cfg.bridge.concurrency, cfg.bridge.service.mean))
        rate = min((n / mean for n, mean in tiers if mean > 0), default=None)
        return Capabilities(
            queue_length=True,
            admission_limit=cfg.ce.queue_limit,
            throughput_per_s=rate,
            server_events=cfg.stages_data,
        )

    def runtime_info(self) -> dict[str, Any]:
        """What ``gridbench cleanup`` needs to reach this grid after a crash."""
        if self._proc is None:
            return {}
        return {
            "options": {"url": self.url},
            "pid": self._proc.pid,
            # cleanup signals the pid only if its start time is still this one
            "create_time": start_time(self._proc.pid),
            "cmdline_marker": "gridbench.jobflow.reference",
        }

    def report_sources(self) -> list[tuple[str, str]]:
        """The grid's monitoring-report listings, nearest tier first."""
        bridge = self.bridge_url or self.url
        return [("ce", f"{self.url}/reports/ce/"), ("bridge", f"{bridge}/reports/bridge/")]

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            raise BackendError("backend not opened", where="reference backend")
        return self._client

    async def open(self) -> None:
        if self.options.hosts is not None:
            await self._start_split()
        elif not self.url:
            await self._start_embedded()
        limits = httpx.Limits(
            max_connections=self.options.max_connections,
            max_keepalive_connections=self.options.max_connections,
        )
        self._client = httpx.AsyncClient(
            base_url=self.url, timeout=self.options.timeout_s, limits=limits, trust_env=False
        )
        try:
            r = await self._client.get("/health", timeout=10)
            r.raise_for_status()
            r.json()
            if self.options.url:  # its configuration tells whether it stages data
                c = await self._client.get("/config", timeout=10)
                c.raise_for_status()
                self._staging = staging_configured(c.json())
        except (httpx.HTTPError, ValueError) as exc:
            await self.close()
            raise BackendError(
                f"the reference grid does not answer: {exc}",
                where=self.url,
                fix="start it with 'gridbench reference serve', or drop backend.options.url "
                "to let gridbench start an embedded grid",
            ) from None

    async def _start_embedded(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "gridbench.jobflow.reference",
            "--port",
            "0",
            "--preset",
            self.options.preset,
        ]
        # named after this process: 'gridbench cleanup' removes it after a kill -9
        self._tmp = tmp = owned_temp_dir(GRID_TMP_PREFIX)
        if self.options.grid or self.options.dt_precision:
            overrides = dict(self.options.grid)
            reports = dict(overrides.get("reports", {}))
            reports.setdefault("dt_precision", self.options.dt_precision)
            overrides["reports"] = reports
            cfg = tmp / "grid.json"  # JSON is valid YAML
            cfg.write_text(json.dumps(overrides), encoding="utf-8")
            argv += ["--config", str(cfg)]
        configured = self.options.grid.get("reports")
        if self.options.reports_dir:
            argv += ["--reports-dir", self.options.reports_dir]
        elif not (isinstance(configured, dict) and configured.get("dir")):
            # the grid's reports in this folder too: a grid killed with -9 leaves no
            # folder of its own behind (the fault matrix found one)
            argv += ["--reports-dir", str(tmp / "reports")]
        # stderr goes to a file: an undrained pipe could fill up and block the grid
        errlog = tmp / "grid.stderr"
        with open(errlog, "wb") as errfile:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdout=asyncio.subprocess.PIPE,
                stderr=errfile,
                stdin=asyncio.subprocess.DEVNULL,
                # own session: a terminal's Ctrl-C must reach gridbench only, which then
                # still needs the grid to cancel outstanding jobs
                start_new_session=True,
            )
        self._proc = proc
        exclude_pid(proc.pid)
        # the grid outlives a killed controller: another run's cleanup must not take its
        # reports folder from under it (it answered 500 to the next cancel)
        add_holder(tmp, proc.pid)
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), STARTUP_TIMEOUT_S)
        except TimeoutError:
            line = b""
        text = line.decode(errors="replace").strip()
        if not text.startswith("listening on "):
            with contextlib.suppress(Exception):
                await self._stop_embedded()
            err = errlog.read_bytes()[-4000:].decode(errors="replace").strip()
            raise BackendError(
                f"the embedded reference grid did not start: {err or text}",
                where="backend.options",
                fix="check backend.options.grid against docs/backends.md",
            )
        self.url = text.removeprefix("listening on ").strip()

    def _overrides(self) -> dict[str, Any]:
        overrides = dict(self.options.grid)
        reports = dict(overrides.get("reports", {}))
        reports.setdefault("dt_precision", self.options.dt_precision)
        overrides["reports"] = reports
        return overrides

    async def _start_split(self) -> None:
        """The bridge tier on its host, then the CE tier on its own, handing jobs to it."""
        assert self.options.hosts is not None and self.options.inventory is not None
        self._tmp = tmp = owned_temp_dir(GRID_TMP_PREFIX)
        try:
            self._tiers = await start_tiers(
                self.options.hosts,
                self.options.inventory,
                self.options.preset,
                self._overrides(),
                tmp,
                self.options.reports_dir,
                STARTUP_TIMEOUT_S,
            )
        except BaseException:
            await self.close()
            raise
        self.bridge_url = self._tiers[0].url
        self.url = self._tiers[1].url

    async def _stop_embedded(self) -> None:
        tiers, self._tiers = self._tiers, []
        for tier in reversed(tiers):  # the CE first: it calls the bridge
            await tier.stop()
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self._stop_embedded()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    async def submit(self, job: JobRequest) -> str:
        body: dict[str, Any] = {"name": job.name, "runtime_s": job.runtime_s, "fail": job.fail}
        body.update(staging_body(job.staging))
        try:
            r = await self.client.post("/jobs", json=body)
        except httpx.TimeoutException as exc:
            raise SubmitError(FAIL_SUBMIT_TIMEOUT, f"submit timed out: {exc}") from None
        except httpx.HTTPError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"{type(exc).__name__}: {exc}") from None
        if r.status_code == 503:
            kind = _field(r, "kind")
            raise SubmitError(
                FAIL_SUBMIT_TIMEOUT if kind == "timeout" else FAIL_SUBMIT_REJECTED,
                _field(r, "error") or "queue full",
            )
        if r.status_code >= 400:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"HTTP {r.status_code}: {r.text[:200]}")
        bid = _field(r, "id")
        if not bid:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"answer without an id: {r.text[:200]}")
        return bid

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        r = await self.client.post("/jobs/status", json={"ids": list(ids)})
        if r.status_code != 200:
            raise BackendError(
                f"status call answered HTTP {r.status_code}: {r.text[:200]}",
                where=f"{self.url}/jobs/status",
            )
        try:
            jobs = r.json()["jobs"]
            return {
                str(k): JobStatus(
                    _STATES.get(v.get("state"), JobState.UNKNOWN), str(v.get("message", ""))[:500]
                )
                for k, v in jobs.items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BackendError(
                "status answer is not the expected JSON",
                where=f"{self.url}/jobs/status",
                fix="is this URL a gridbench reference grid?",
            ) from None

    async def cancel(self, ids: Sequence[str]) -> None:
        r = await self.client.post("/jobs/cancel", json={"ids": list(ids)})
        r.raise_for_status()

    async def fetch_output(self, backend_id: str) -> bytes:
        r = await self.client.get(f"/jobs/{backend_id}/output")
        if r.status_code != 200:
            raise BackendError(
                f"output not available (HTTP {r.status_code})",
                where=f"{self.url}/jobs/{backend_id}/output",
            )
        return r.content

    async def server_events(self) -> list[Event]:
        """The staging stamps since the last call (the grid pages them by a cursor)."""
        if not self._staging and not self._stages_data():
            return []
        out: list[Event] = []
        for base in dict.fromkeys([self.url, self.bridge_url or self.url]):  # each tier's
            while True:
                cursor = self._cursors.get(base, 0)
                r = await self.client.get(f"{base}/stamps", params={"after": cursor})
                r.raise_for_status()
                events, nxt = stamp_events(r.json())
                out += events
                if nxt == cursor:
                    break
                self._cursors[base] = nxt
        return out

    async def queue_length(self) -> int | None:
        r = await self.client.get("/queue")
        r.raise_for_status()
        total = r.json().get("total")
        return int(total) if isinstance(total, int) else None


def _field(r: httpx.Response, key: str) -> str:
    try:
        v = r.json().get(key)
    except (ValueError, AttributeError):
        return ""
    return str(v) if v is not None else ""


if TYPE_CHECKING:  # mypy checks the optional hooks against their protocols
    from gridbench.jobflow.reference.config import GridConfig

    _publishes_reports: type[ReportPublisher] = ReferenceBackend
    _has_runtime_info: type[RuntimeInfoSource] = ReferenceBackend
    _stages: type[DataStager] = ReferenceBackend
