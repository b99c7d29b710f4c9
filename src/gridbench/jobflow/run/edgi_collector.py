"""Brings EDGI monitoring reports into the trials' event logs while an experiment runs.

One report collector serves the whole experiment (reports span trials and appear late).
After each trial it polls once; at the end of the experiment it waits, up to the settle
time, until every acknowledged job has its last server-side stamp. Events are routed to
the trial their job belongs to (``<trial_id>-<n>``), so late reports still land.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import polars as pl

from gridbench.errors import SpecError
from gridbench.jobflow.backends.base import Backend, ReportPublisher
from gridbench.jobflow.events.buffer import Origin
from gridbench.jobflow.events.edgi.collector import ReportCollector
from gridbench.jobflow.events.edgi.fetch import FetchLimits
from gridbench.jobflow.events.edgi.join import joined_by_lines
from gridbench.jobflow.events.model import EVENT_SCHEMA, STAGE_SUBMIT_ACK
from gridbench.jobflow.events.trial_log import EventWriter, open_trial_log
from gridbench.jobflow.specbase.model import CollectorSpec

log = logging.getLogger(__name__)


def trial_of(job: str) -> str:
    return job.rsplit("-", 1)[0]


class EdgiCollector:
    """The ``edgi`` collector of a spec."""

    def __init__(self, sources: list[str], poll_s: float, max_file_bytes: int) -> None:
        self.sources = sources
        self.poll_s = poll_s
        self._rc = ReportCollector(sources, limits=FetchLimits(max_file_bytes=max_file_bytes))
        # trial -> (job, stage) pairs still awaited: every tier's completion stamp
        self._expected: dict[str, set[tuple[str, str]]] = {}
        self._final_stages = ["ce_done"]
        self.warnings: list[str] = []

    @classmethod
    def from_spec(cls, spec: CollectorSpec, backend: Backend) -> EdgiCollector:
        if spec.reports == "auto":
            if not isinstance(backend, ReportPublisher):
                raise SpecError(
                    f"backend {backend.name!r} does not publish monitoring reports",
                    where="collectors[].reports",
                    fix="list the report URLs or directories, nearest component first",
                )
            sources = [f"{tier}={url}" for tier, url in backend.report_sources()]
        else:
            sources = list(spec.reports)
        c = cls(sources, spec.poll, spec.max_file_bytes)
        c._chain_last(backend.stage_chain().names())
        return c

    async def probe(self) -> None:
        """List the sources once (raises IngestError with the URL and a fix when unreachable)."""
        await self._rc.apoll(None, final=False)

    def summary(self) -> list[str]:
        """Which id each tier's records were joined by (own, upstream or mixed)."""
        return joined_by_lines(self._rc.joined_by())

    def describe(self) -> str:
        return f"edgi({', '.join(self.sources)})"

    def _chain_last(self, backend_chain: list[str]) -> None:
        server = [s for s in backend_chain if s not in ("submit", "client_done")]
        done = [s for s in server if s.endswith("_done")]
        if done or server:
            self._final_stages = done or server[-1:]

    async def collect(
        self, log_: EventWriter, names: dict[str, str], *, final: bool, settle_s: float
    ) -> int:
        """Quick poll after a trial: learn its id map, route whatever reports are out."""
        if names:
            bids = list(names)
            acks = pl.DataFrame(
                {
                    "job": [names[b] for b in bids],
                    "stage": [STAGE_SUBMIT_ACK] * len(bids),
                    "attrs": [f'{{"backend_id":{_quote(b)}}}' for b in bids],
                }
            )
            self._rc.add_client_events(acks)
            tid = trial_of(names[bids[0]])
            self._expected.setdefault(tid, set()).update(
                (j, st) for j in names.values() for st in self._final_stages
            )
        return await self._poll_once(log_, final=False)

    async def finish(self, run_dir: Path, settle_s: float) -> int:
        """Poll until every expected job has its last stamp, or ``settle_s`` passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle_s
        total = 0
        while True:
            last = loop.time() >= deadline
            total += await self._poll_once(None, final=last, run_dir=run_dir)
            if last or not any(self._expected.values()):
                break
            await asyncio.sleep(min(self.poll_s, 1.0))
        return total

    async def _poll_once(
        self, current: EventWriter | None, *, final: bool, run_dir: Path | None = None
    ) -> int:
        res = await self._rc.apoll(None, final=final)
        for w in res.warnings:
            log.warning("%s", w)
        self.warnings.extend(res.warnings[:50])
        ev = res.events
        if ev.is_empty():
            return 0
        ev = ev.with_columns(pl.col("job").str.replace(r"-[^-]*$", "").alias("_trial"))
        done = ev.filter(pl.col("stage").is_in(self._final_stages))
        for tid, jobs, stages in done.group_by("_trial").agg("job", "stage").iter_rows():
            self._expected.get(tid, set()).difference_update(zip(jobs, stages, strict=True))
        for (tid,), part in ev.partition_by("_trial", as_dict=True).items():
            part = part.drop("_trial").cast(dict(EVENT_SCHEMA))  # type: ignore[arg-type]
            if current is not None and str(current.path.parent.name) == tid:
                _append(current, part)
            else:
                target = _trial_dir(current, run_dir, str(tid))
                if target is None:
                    continue
                other = open_trial_log(target)  # the format that trial already has
                try:
                    _append(other, part)
                finally:
                    other.close()
        return ev.height


def _trial_dir(current: EventWriter | None, run_dir: Path | None, tid: str) -> Path | None:
    if current is not None:
        return current.path.parent.parent / tid
    if run_dir is not None:
        return run_dir / "trials" / tid
    return None


def _append(log_: EventWriter, df: pl.DataFrame) -> None:
    for row in df.iter_rows(named=True):
        origin = Origin(
            row["source"],
            row["precision_ns"],
            row["agent"] or "server",
            row["clock_offset_ns"] or 0,
        )
        log_.append(row["job"], row["stage"], row["t_ns"], origin, attrs=row["attrs"] or None)


def _quote(s: str) -> str:
    from json.encoder import encode_basestring

    return str(encode_basestring(s))
