"""The command backend's server side: the stamps read from declared sources
(:mod:`gridbench.jobflow.events.stamps`, ``backend.options.stamps``) and the stage chain
that places them among the client's stages (submit, the timed transfers of
:mod:`.transfer`, client_done).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow.backends.command.template import TemplateError, TextTemplate
from gridbench.jobflow.backends.command.transfer import (
    STAGE_DOWNLOAD_START,
    STAGE_DOWNLOADED,
    STAGE_UPLOAD_START,
    STAGE_UPLOADED,
)
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.events.model import Event
from gridbench.jobflow.events.stamps.collector import StampCollector
from gridbench.jobflow.events.stamps.declare import StampPlan
from gridbench.jobflow.events.stamps.kind import parse_plan

SETTLE_POLL_S = 0.5


#: the client's stages a declaration's ``order`` may name to place server stages among them
CLIENT_STAGES = (
    "submit",
    STAGE_UPLOAD_START,
    STAGE_UPLOADED,
    "client_done",
    STAGE_DOWNLOAD_START,
    STAGE_DOWNLOADED,
)


def chain(plan: StampPlan | None, download: bool, upload: bool = False) -> StageChain:
    """client submit → the upload → the declared server stages → client_done → the
    download. The upload runs inside gridbench's submit call, before the client's. A
    server stage the declaration's ``order`` lists after a client stage comes right after
    it (a file server's stamps inside the upload or the download)."""
    client = [
        n
        for n in CLIENT_STAGES
        if (upload or n not in (STAGE_UPLOAD_START, STAGE_UPLOADED))
        and (download or n not in (STAGE_DOWNLOAD_START, STAGE_DOWNLOADED))
    ]
    server = plan.stages() if plan is not None else []
    after: dict[str, str] = {}
    anchor: str | None = None
    for n in plan.order if plan is not None else []:
        if n in client:
            anchor = n
        elif anchor is not None:
            after[n] = anchor
    default = STAGE_UPLOADED if upload else "submit"
    stages: list[Stage] = []
    for c in client:
        stages.append(Stage(c, "client"))
        stages += [
            Stage(n, tier, precision_ns=p) for n, tier, p in server if after.get(n, default) == c
        ]
    return StageChain(tuple(stages))


def compile_stamps(
    block: dict[str, Any] | None, values: dict[str, str]
) -> tuple[StampPlan | None, tuple[str, ...]]:
    """The ``stamps:`` block checked, and each source's path with the variables filled in."""
    if block is None:
        return None, ()
    plan = parse_plan(block, "backend.options.stamps")
    out = []
    for i, src in enumerate(plan.sources):
        raw = src.location  # a path or a glob, as the source's kind reads it
        try:
            out.append(TextTemplate.parse(raw, set(values)).render(values))
        except TemplateError as exc:
            raise SpecError(
                str(exc),
                where=f"backend.options.stamps.sources.{i}",
                fix="a stamp path may use the variables under vars: only",
            ) from None
    return plan, tuple(out)


class ServerStamps:
    """The stamp collector of one backend instance, run off the event loop."""

    def __init__(self, plan: StampPlan, locations: Sequence[str]) -> None:
        self.collector = StampCollector(plan, locations)
        self._lock = asyncio.Lock()

    async def collect(
        self, backend_ids: Sequence[str], names: Mapping[str, str] | None = None
    ) -> list[Event]:
        async with self._lock:  # one read of each source at a time
            ids = list(backend_ids)
            try:
                return await asyncio.to_thread(self.collector.collect, ids, dict(names or {}))
            except asyncio.CancelledError:
                # Ctrl-C or Abort: the thread cannot be cancelled, so its read is ended
                # (a query interrupted, a glob left): the loop's exit does not wait on it
                self.collector.cancel()
                raise

    async def settle(
        self, backend_ids: Sequence[str], names: Mapping[str, str] | None = None
    ) -> list[Event]:
        """Read again until every job has the chain's last server stage, or ``settle_s``."""
        out: list[Event] = []
        deadline = time.monotonic() + self.collector.plan.settle_s
        while self.collector.lacking_last(backend_ids) and time.monotonic() < deadline:
            await asyncio.sleep(SETTLE_POLL_S)
            out += await self.collect(backend_ids, names)
        return out

    def report(self, backend_ids: Sequence[str]) -> dict[str, Any]:
        return {**self.collector.report(), "unjoined_jobs": self.collector.unjoined(backend_ids)}
