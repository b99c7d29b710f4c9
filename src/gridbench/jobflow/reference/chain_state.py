"""What the reference grid's tiers share: the configuration, the clock and random
numbers, the tiers' report writers, every job with a count per place in the chain, the
CE's job list, and the HTTP link to a bridge on another host (the CE tier alone).

:class:`ChainState` is the base of the tiers (:class:`~.ce_tier.CeTier`,
:class:`~.bridge_tier.BridgeTier`), which :class:`~.sim.Grid` puts together. All of it runs
on one event loop (no locking needed).
"""

from __future__ import annotations

import asyncio
import collections
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gridbench.jobflow.reference import reports as rp
from gridbench.jobflow.reference.config import GridConfig, LinkConfig
from gridbench.jobflow.reference.dist import make_sampler
from gridbench.jobflow.reference.jobs import TERMINAL, BridgeState, Job, Loc, Tier
from gridbench.jobflow.reference.staging import STAGE_IN, STAGE_OUT, Link, Stamps

if TYPE_CHECKING:
    import httpx


class ChainState:
    """The state of the simulated chain, and the bookkeeping every tier does."""

    def __init__(
        self,
        config: GridConfig,
        reports_dir: Path,
        *,
        clock: Callable[[], int] = time.time_ns,
        tier: Tier = "all",
        bridge_url: str | None = None,
    ) -> None:
        if (tier == "ce") != (bridge_url is not None):
            raise ValueError("the CE tier alone needs the bridge's URL (and only it)")
        self.tier: Tier = tier
        self.bridge_url = bridge_url
        self._bridge_http: httpx.AsyncClient | None = None
        self.config = config
        self.reports_dir = reports_dir
        self._clock = clock
        self._rng = np.random.default_rng(config.seed)
        self._ce_service = make_sampler(config.ce.service, self._rng)
        self._bridge_service = make_sampler(config.bridge.service, self._rng)
        self._transfer = make_sampler(config.bridge.transfer, self._rng)
        self._runtime = make_sampler(config.workers.runtime, self._rng)
        rc = config.reports
        self.ce_reports, self.bridge_reports = (
            rp.ReportWriter(
                kind,
                reports_dir,
                rotate_s=rc.rotate_s,
                publication_delay_s=rc.publication_delay_s,
                dt_precision=rc.dt_precision,
                clock=clock,
            )
            for kind in ("ce", "bridge")
        )
        self._log_running = rc.log_running
        # A random instance tag keeps ids unique across restarts sharing a reports dir.
        self._tag = secrets.token_hex(3)
        self._n_ce = self._n_bridge = self._n_dg = 0
        self.jobs: dict[str, Job] = {}
        self._tracked: dict[str, Job] = {}  # the CE's job list: T3 seen, T7 not yet
        self._count = [0] * len(Loc)
        self._ce_q: asyncio.Queue[Job] = asyncio.Queue()
        self._bridge_q: asyncio.Queue[Job] = asyncio.Queue()
        self._dg_wait: collections.deque[Job] = collections.deque()
        self._dispatch_wait: list[Job] = []  # prepared, for the next pass (dispatch_s)
        self._dg_running = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stamps = Stamps()
        self._stage_in = self._link(config.ce.stage_in, STAGE_IN) if tier != "bridge" else None
        self._stage_out = self._link(config.bridge.stage_out, STAGE_OUT) if tier != "ce" else None
        self._outgoing: set[asyncio.Task[None]] = set()

    def _link(self, cfg: LinkConfig, stages: tuple[str, str]) -> Link | None:
        if not cfg.enabled:
            return None  # the default: no staging, no stamps, the chain as before
        return Link(cfg, stages, self.stamps, self._clock)

    async def _housekeeping(self) -> None:
        period = min(0.1, self.config.reports.rotate_s / 4)
        while True:
            await asyncio.sleep(period)
            self.ce_reports.tick()
            self.bridge_reports.tick()

    # -- bookkeeping ------------------------------------------------------------------
    def _move(self, job: Job, loc: Loc) -> None:
        self._count[job.loc] -= 1
        self._count[loc] += 1
        job.loc = loc

    def ce_load(self) -> int:
        """Jobs in the CE tier (queued or in preparation): what ``queue_limit`` bounds."""
        return self._count[Loc.CE_QUEUED] + self._count[Loc.CE_SERVICE]

    def queue_lengths(self) -> dict[str, int]:
        """Jobs per tier, and the length of the CE's status-check list."""
        c = self._count
        out = {
            "ce": c[Loc.CE_QUEUED] + c[Loc.CE_SERVICE],
            "bridge": c[Loc.TRANSFER] + c[Loc.BRIDGE_QUEUED] + c[Loc.BRIDGE_SERVICE],
            "workers": c[Loc.DG_QUEUED] + c[Loc.DG_RUNNING] + c[Loc.STAGE_OUT],
            "finishing": c[Loc.FINISHING],
        }
        out["total"] = sum(out.values())
        out["ce_list"] = len(self._tracked)
        return out

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._outgoing.add(task)
        task.add_done_callback(self._outgoing.discard)

    async def _bridge_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One call to the bridge on another host (the CE tier alone); its JSON answer."""
        assert self._bridge_http is not None
        r = await self._bridge_http.post(path, json=body)
        r.raise_for_status()
        data = r.json()
        if not isinstance(data, dict):
            raise ValueError(f"the bridge answered {path} with {type(data).__name__}")
        return data

    def _fail_internal(self, job: Job, message: str) -> None:
        if job.loc in TERMINAL:
            return
        job.bridge_state = BridgeState.FAILED
        job.message = message
        self._move(job, Loc.FINISHING)
        if self.tier != "bridge":
            self._tracked[job.ce_id] = job

    def _bridge_rid(self, job: Job) -> str:
        """The id the bridge's reports name ``job`` by: its own, or (``reports.bridge_ids``)
        the CE's, as some components report a job under the upstream id; ``mixed``: the
        CE's for every other job."""
        how = self.config.reports.bridge_ids
        if how == "upstream" or (how == "mixed" and job.bridge_id[-1:] in "13579"):
            return job.ce_id
        return job.bridge_id

    def _bridge_arrive(self, job: Job) -> None:
        """T4: the bridge receives ``job`` (:class:`~.bridge_tier.BridgeTier`)."""
        raise NotImplementedError
