"""The command backend's timed extras: server stamps from declared sources
(:mod:`gridbench.jobflow.events.stamps`) and the output download as a stage (the input
upload's is :mod:`gridbench.jobflow.backends.command.upload`).

A job the status call first sees ``done`` is downloaded (the ``download`` template, into a
directory of its own) before that status call returns, so the tracker's final sweep
always finds its stamps: ``download_start`` and ``downloaded`` (client, 1 µs), the latter
with the bytes and files that landed and the rate.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from gridbench.jobflow.backends.command.parse import snippet
from gridbench.jobflow.backends.command.process import CallResult, ClientStartError, ClientTimeout
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.events.model import Event, Precision
from gridbench.jobflow.events.stamps.collector import StampCollector
from gridbench.jobflow.events.stamps.declare import StampPlan

STAGE_DOWNLOAD_START = "download_start"
STAGE_DOWNLOADED = "downloaded"
STAGE_UPLOAD_START = "upload_start"
STAGE_UPLOADED = "uploaded"
SETTLE_POLL_S = 0.5
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


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


def tree_size(root: Path) -> tuple[int, int]:
    """(bytes, files) of the regular files under ``root`` (no link followed)."""
    total = files = 0
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            try:
                st = os.lstat(os.path.join(dirpath, n))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, n)):
                total += st.st_size
                files += 1
    return total, files


def download_dir(rdir: str, name: str, backend_id: str) -> Path:
    """A fresh directory for one job's output (named after gridbench's job name)."""
    return Path(rdir) / "download" / _UNSAFE.sub("_", name or backend_id)[:120]


def transfer_attrs(t0_ns: int, t1_ns: int, root: Path, error: str) -> dict[str, Any]:
    """What one timed transfer moved: the bytes and files under ``root``, bytes ÷ its
    time, and the error that cut it short (if any)."""
    size, files = tree_size(root)
    dur_s = max(t1_ns - t0_ns, 1) / 1e9
    attrs: dict[str, Any] = {"bytes": size, "files": files, "rate_bps": size / dur_s}
    if error:
        attrs["error"] = error
    return attrs


def transfer_events(
    bid: str, stages: tuple[str, str], t0_ns: int, t1_ns: int, attrs: dict[str, Any]
) -> list[Event]:
    """The two client stamps (1 µs) of one transfer; the end carries its ``attrs``."""
    start, end = stages
    return [
        Event(bid, start, t0_ns, precision_ns=Precision.US),
        Event(bid, end, t1_ns, precision_ns=Precision.US, attrs=attrs),
    ]


def download_events(bid: str, t0_ns: int, t1_ns: int, root: Path, error: str) -> list[Event]:
    """The two stamps of one download; the end carries size, file count and rate."""
    attrs = transfer_attrs(t0_ns, t1_ns, root, error)
    return transfer_events(bid, (STAGE_DOWNLOAD_START, STAGE_DOWNLOADED), t0_ns, t1_ns, attrs)


class Downloads:
    """The timed downloads of one backend: each job once, as a task started after the
    status call that saw it done returns; :meth:`take` waits for them and hands their
    stamps over."""

    def __init__(self, parallel: int = 8) -> None:
        self._seen: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._events: list[Event] = []
        self._sem = asyncio.Semaphore(parallel)

    def new(self, done: Sequence[str]) -> list[str]:
        """The ids of ``done`` not downloaded yet (now marked)."""
        fresh = [i for i in done if i not in self._seen]
        self._seen.update(fresh)
        return fresh

    def start(
        self,
        bid: str,
        root: Path,
        call: Coroutine[Any, Any, CallResult],
        ok_codes: frozenset[int],
    ) -> None:
        task = asyncio.create_task(self._one(bid, root, call, ok_codes))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _one(
        self,
        bid: str,
        root: Path,
        call: Coroutine[Any, Any, CallResult],
        ok_codes: frozenset[int],
    ) -> None:
        async with self._sem:
            t0 = time.time_ns()  # the wall clock, as the tracker's client stamps
            error = ""
            try:
                root.mkdir(parents=True, exist_ok=True)
                res = await call
                if res.exit_code not in ok_codes:
                    why = res.stderr.decode(errors="replace") or res.stdout.decode(errors="replace")
                    error = f"{res.argv[0]} exited with {res.exit_code}: {snippet(why)}"
            except (ClientStartError, ClientTimeout) as exc:
                error = str(exc)
            except OSError as exc:
                call.close()
                error = f"cannot create {root}: {exc.strerror or exc}"
            t1 = time.time_ns()
        self._events += download_events(bid, t0, t1, root, error)

    async def wait(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def take(self) -> list[Event]:
        await self.wait()
        out, self._events = self._events, []
        return out


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
            return await asyncio.to_thread(self.collector.collect, ids, dict(names or {}))

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
