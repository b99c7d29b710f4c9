"""The command backend's output download as a timed stage (``download``).

A job the status call first sees ``done`` is downloaded (the ``download`` template, into a
directory of its own) as a task started after that status call; the next
``server_events`` waits for it, so the tracker's final sweep always finds its stamps:
``download_start`` and ``downloaded`` (client, 1 µs), the latter with the bytes and files
that landed and the rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from gridbench.jobflow.backends.command.output import exit_reason
from gridbench.jobflow.backends.command.process import ClientStartError, ClientTimeout, PendingCall
from gridbench.jobflow.backends.command.transfer import (
    STAGE_DOWNLOAD_START,
    STAGE_DOWNLOADED,
    transfer_attrs,
    transfer_events,
)
from gridbench.jobflow.events.model import Event


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

    def start(self, bid: str, root: Path, call: PendingCall, ok_codes: frozenset[int]) -> None:
        task = asyncio.create_task(self._one(bid, root, call, ok_codes))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _one(self, bid: str, root: Path, call: PendingCall, ok_codes: frozenset[int]) -> None:
        async with self._sem:
            t0 = time.time_ns()  # the wall clock, as the tracker's client stamps
            error = ""
            try:
                root.mkdir(parents=True, exist_ok=True)
                res = await call
                if res.exit_code not in ok_codes:
                    error = exit_reason(res)
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
