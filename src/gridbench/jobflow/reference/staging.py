"""Data staging in the reference grid: a tier's link (bandwidth, per-file cost, streams)
and the server-side stamps of each transfer, served at ``GET /stamps``.

A transfer of ``files`` files and ``nbytes`` bytes holds one stream for
``files·per_file_s + nbytes / bandwidth_bps`` seconds; with every stream busy it waits
(FIFO). Its two stamps are taken when it gets a stream and when it ends, so the rate
``bytes / (end - start)`` is the link's, not the queue's: a slow link shows as jobs
piling up before the start stamp, which the EDGI analysis names as the breaking stage.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from gridbench.jobflow.reference.config import LinkConfig

#: stage names: (start, end) of the input upload and of the output download
STAGE_IN: Final = ("stage_in_start", "staged_in")
STAGE_OUT: Final = ("stage_out_start", "staged_out")
#: the most stamps one ``GET /stamps`` answers (the client pages with ``after``)
PAGE: Final = 5000


@dataclass(frozen=True, slots=True)
class JobData:
    """What one job stages: its input (uploaded before it runs) and output (after)."""

    input_bytes: int = 0
    input_files: int = 0
    output_bytes: int = 0
    output_files: int = 0


class Stamps:
    """Every staging stamp in order; ``seq`` is its position (a client's cursor)."""

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []

    def add(self, job_id: str, stage: str, t_ns: int, **attrs: Any) -> None:
        self._rows.append({"id": job_id, "stage": stage, "t_ns": t_ns, "attrs": attrs})

    def page(self, after: int) -> tuple[list[dict[str, Any]], int]:
        """The stamps after cursor ``after`` (at most :data:`PAGE`) and the next cursor."""
        start = max(after, 0)
        rows = self._rows[start : start + PAGE]
        return rows, start + len(rows)


class Link:
    """One tier's staging link."""

    def __init__(
        self,
        config: LinkConfig,
        stages: tuple[str, str],
        stamps: Stamps,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.config = config
        self.stages = stages
        self._stamps = stamps
        self._clock = clock
        self._streams = asyncio.Semaphore(config.streams)

    def seconds(self, nbytes: int, files: int) -> float:
        """How long one transfer holds a stream."""
        bw = self.config.bandwidth_bps
        assert bw is not None, "staging on a link that is off"
        return files * self.config.per_file_s + nbytes / bw

    async def transfer(self, job_id: str, nbytes: int, files: int) -> None:
        """Move one job's data: wait for a stream, stamp the start, hold it, stamp the end."""
        async with self._streams:
            t0 = self._clock()
            self._stamps.add(job_id, self.stages[0], t0)
            await asyncio.sleep(self.seconds(nbytes, files))
            t1 = self._clock()
            rate = nbytes / (max(t1 - t0, 1) / 1e9)
            self._stamps.add(job_id, self.stages[1], t1, bytes=nbytes, files=files, rate_bps=rate)
