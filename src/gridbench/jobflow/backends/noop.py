"""An in-process null backend: accepts everything at once; jobs end after their run time.

Used to measure gridbench's own ceiling (bench/) and in unit tests. Memory per job is a
few small ints, so 100,000 jobs in flight are cheap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from gridbench.jobflow.backends.base import (
    Capabilities,
    JobRequest,
    JobState,
    JobStatus,
    SubmitError,
)
from gridbench.jobflow.backends.options import parse_options
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.events.model import FAIL_SUBMIT_REJECTED, Event


class NoopOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    runtime_s: float = 0.0
    reject_above: int | None = None  # reject submits while this many jobs are in flight
    submit_delay_s: float = 0.0  # simulate a slow submit call
    status_delay_s: float = 0.0  # simulate a slow status call (a big cluster's listing)


class NoopBackend:
    name: ClassVar[str] = "noop"

    def __init__(self, options: NoopOptions | None = None) -> None:
        self.options = options or NoopOptions()
        self._end: dict[str, int] = {}  # id -> end time (monotonic ns), negative when failed
        self._seq = 0
        self.status_calls = 0
        self.submit_calls = 0
        # read once: submit_now is the open loop's hot path (~20,000 calls a second)
        self._runtime_ns = int(self.options.runtime_s * 1e9)
        self._full_at = self.options.reject_above

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> NoopBackend:
        return cls(parse_options(NoopOptions, options, cls.name))

    def stage_chain(self) -> StageChain:
        return StageChain((Stage("submit", "client"), Stage("client_done", "client")))

    def capabilities(self) -> Capabilities:
        return Capabilities(fetch_output=False, submit_at_once=self.options.submit_delay_s <= 0)

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def submit(self, job: JobRequest) -> str:
        if self.options.submit_delay_s > 0:
            await asyncio.sleep(self.options.submit_delay_s)
        return self.submit_now(job)

    def inline_submit(self) -> Callable[[JobRequest], str] | None:
        """:meth:`submit_now`, unless submit is to wait (``submit_delay_s``)."""
        return self.submit_now if self.options.submit_delay_s <= 0 else None

    def submit_now(self, job: JobRequest) -> str:
        """:meth:`submit` without the wait (``submit_delay_s``), as a plain call."""
        self.submit_calls += 1
        full = self._full_at
        if full is not None and len(self._end) >= full:
            raise SubmitError(FAIL_SUBMIT_REJECTED, "noop backend is full")
        self._seq = seq = self._seq + 1
        bid = str(seq)
        runtime = job.runtime_s
        end = time.perf_counter_ns() + (self._runtime_ns if runtime is None else int(runtime * 1e9))
        self._end[bid] = -end if job.fail else end
        return bid

    async def status(self, ids: Sequence[str]) -> dict[str, JobStatus]:
        self.status_calls += 1
        if self.options.status_delay_s > 0:
            await asyncio.sleep(self.options.status_delay_s)
        now = time.perf_counter_ns()
        out: dict[str, JobStatus] = {}
        ends = self._end
        for start in range(0, len(ids), _CHUNK):
            if start:
                await asyncio.sleep(0)  # in-process: share the loop like a real I/O call would
            for i in ids[start : start + _CHUNK]:
                end = ends.get(i)
                if end is None:
                    continue
                if end > now:
                    out[i] = _RUNNING
                elif end > 0:
                    out[i] = _DONE
                    del ends[i]
                elif -end > now:
                    out[i] = _RUNNING
                else:
                    out[i] = _FAILED
                    del ends[i]
        return out

    async def cancel(self, ids: Sequence[str]) -> None:
        for i in ids:
            self._end.pop(i, None)

    async def fetch_output(self, backend_id: str) -> bytes:
        return b""

    async def server_events(self) -> list[Event]:
        return []

    async def queue_length(self) -> int | None:
        return len(self._end)


_CHUNK = 1024  # ids answered between two turns of the event loop (~0.25 ms)
_RUNNING = JobStatus(JobState.RUNNING)
_DONE = JobStatus(JobState.DONE)
_FAILED = JobStatus(JobState.FAILED, "failed on request")
