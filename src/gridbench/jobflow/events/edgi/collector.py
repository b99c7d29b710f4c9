"""Incremental EDGI report collection: list, fetch, parse and join on each poll (I/O).

Sources are listed concurrently, only new or changed files are fetched, and parsing runs
off the event loop. A poll's outcome is committed all at once, after every read: a
source that cannot be listed leaves the collector as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpx
import polars as pl

from gridbench.jobflow.events.edgi.fetch import (
    Fetched,
    FetchLimits,
    FileMeta,
    ReportFile,
    fetch_file,
    list_source,
    make_client,
)
from gridbench.jobflow.events.edgi.frames import checked_tz, records_to_events
from gridbench.jobflow.events.edgi.join import IdChain
from gridbench.jobflow.events.edgi.report_xml import ParsedReport, parse_report
from gridbench.jobflow.events.ingest import IngestResult, WarningSink
from gridbench.jobflow.events.tiers import ReportSource, parse_report_sources, tier_order_key

#: parsing holds the GIL, so one worker thread is as fast as many and keeps memory flatter;
#: it keeps the event loop (the runner's) free while a large report is parsed
_PARSE_POOL: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gridbench-xml")

FileStatus = Literal["complete", "truncated", "malformed", "rejected", "too_large"]


#: records converted to events per polars batch
CONVERT_BATCH: Final = 100_000


@dataclass(slots=True)
class _FileState:
    meta: FileMeta
    status: FileStatus
    records_done: int = 0


@dataclass(slots=True)
class _Outcome:
    file: ReportFile
    fetched: Fetched
    parsed: ParsedReport | None = None


@dataclass(slots=True)
class _PollCounts:
    files_seen: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    files_skipped: int = 0
    records: int = 0
    bad_records: int = 0


class ReportCollector:
    """Incremental EDGI report ingester for one trial.

    Each :meth:`apoll` (or :meth:`poll`) re-lists the sources, reads only new or changed
    report files, and returns the events that could be joined to client jobs since the
    last call. Records whose id chain is not (yet) known stay pending and are joined on a
    later poll; a ``final`` poll reports the rest as unjoined.
    """

    def __init__(
        self, sources: Sequence[str | ReportSource], *, limits: FetchLimits | None = None
    ) -> None:
        self.sources = parse_report_sources(sources)
        self.limits = limits or FetchLimits()
        self._files: dict[str, _FileState] = {}
        self._chain = IdChain()
        self._tier_seen: dict[str, int] = {}
        self._warned: set[str] = set()
        self._busy = False

    # -- id chain --

    @property
    def tiers(self) -> list[str]:
        """Tier names, nearest component first."""
        if self.sources[0].discover:
            return sorted(self._tier_seen, key=lambda t: tier_order_key(t, self._tier_seen[t]))
        return [s.tier for s in self.sources]

    def add_client_events(self, client_events: pl.DataFrame) -> None:
        """Learn client job -> first-tier id pairs (``submit_ack`` events); repeats are fine."""
        self._chain.add_client_events(client_events)

    def joined_by(self) -> dict[str, dict[str, int]]:
        """Per tier, the records joined so far by its own id and by the upstream id."""
        return self._chain.joined_by()

    def _ahead_of_its_chain(self, tier: str, index: int) -> bool:
        """A discovered tier of known place (ce, bridge, tierN) standing earlier in the list
        than that place because its upstream tier's reports have not been seen yet: joining
        it now would take the client's ids for its own."""
        if not self.sources[0].discover:
            return False
        place = tier_order_key(tier, 0)[0]
        return place < 1_000_000 and index < place

    def _join(self, final: bool = False) -> pl.DataFrame:
        """Join every pending record whose tier id is known; keep the rest pending."""
        tiers = self.tiers
        # a tier ahead of its chain is joined once its upstream tier is seen, or at the end
        held = (
            set() if final else {t for k, t in enumerate(tiers) if self._ahead_of_its_chain(t, k)}
        )
        return self._chain.join(tiers, held)

    # -- polling --

    def poll(
        self, client_events: pl.DataFrame | None = None, *, final: bool = False
    ) -> IngestResult:
        """Synchronous :meth:`apoll` for the CLI (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.apoll(client_events, final=final))
        raise RuntimeError("ReportCollector.poll() called inside an event loop; await apoll()")

    async def apoll(
        self, client_events: pl.DataFrame | None = None, *, final: bool = False
    ) -> IngestResult:
        """Read new report data and return newly joined events.

        Raises :class:`~gridbench.errors.IngestError` (before changing any state) if a
        source cannot be listed; problems with single files are warnings.
        """
        if self._busy:
            raise RuntimeError("ReportCollector.apoll() is already running")
        self._busy = True
        try:
            if client_events is not None:
                self.add_client_events(client_events)
            outcomes, listing_warnings = await self._read_all()
            return self._commit(outcomes, listing_warnings, final)  # no await: all or nothing
        finally:
            self._busy = False

    async def _read_all(self) -> tuple[list[_Outcome], list[str]]:
        async with contextlib.AsyncExitStack() as stack:
            client: httpx.AsyncClient | None = None
            if any(s.is_url for s in self.sources):
                client = await stack.enter_async_context(make_client(self.limits))
            files, warnings = await self._list_all(client)
            sem = asyncio.Semaphore(self.limits.concurrency)
            outcomes = await asyncio.gather(*(self._read_one(client, f, sem) for f in files))
        return list(outcomes), warnings

    async def _list_all(
        self, client: httpx.AsyncClient | None
    ) -> tuple[list[ReportFile], list[str]]:
        """The files of every source and the listing warnings; raises if one cannot be listed."""
        listed = await asyncio.gather(
            *(list_source(client, s, self.limits) for s in self.sources),
            return_exceptions=True,
        )
        for r in listed:
            if isinstance(r, BaseException):
                raise r
        files: list[ReportFile] = []
        warnings: list[str] = []
        for r in listed:
            assert not isinstance(r, BaseException)
            files.extend(r[0])
            warnings.extend(r[1])
        return files, warnings

    async def _read_one(
        self, client: httpx.AsyncClient | None, f: ReportFile, sem: asyncio.Semaphore
    ) -> _Outcome:
        """Fetch ``f`` unless unchanged, and parse it off the event loop."""
        async with sem:
            st = self._files.get(f.key)
            got = await fetch_file(client, f, st.meta if st else None, self.limits)
        if got.kind != "data" or got.data is None:
            return _Outcome(f, got)
        loop = asyncio.get_running_loop()
        parsed = await loop.run_in_executor(_PARSE_POOL, parse_report, got.data)
        got.data = None  # free the bytes early
        return _Outcome(f, got, parsed)

    # -- committing a poll (no await from here on: all or nothing) --

    def _commit(
        self, outcomes: list[_Outcome], listing_warnings: list[str], final: bool
    ) -> IngestResult:
        sink = WarningSink()
        for w in listing_warnings:
            if w not in self._warned:  # the same listing problem is reported once
                self._warned.add(w)
                sink.add(w)
        counts = _PollCounts(files_seen=len(outcomes))
        self._chain.add_pending(self._convert(outcomes, sink, counts))
        events = self._join(final)
        if final:
            for key, st in self._files.items():
                if st.status == "truncated":
                    sink.add(
                        f"{key}: still incomplete at the end of the ingest; "
                        f"only its {st.records_done} complete record(s) were used"
                    )
        return self._result(events, sink, counts, final)

    def _convert(
        self, outcomes: list[_Outcome], sink: WarningSink, counts: _PollCounts
    ) -> list[pl.DataFrame]:
        """Commit each file's outcome; its new records as tier events (``RAW_SCHEMA``)."""
        frames: list[pl.DataFrame] = []
        raws: list[pl.DataFrame] = []

        def convert() -> None:
            # in batches: bounded intermediate memory, few polars calls for many small files
            raw, bad_warnings, nbad = records_to_events(pl.concat(frames, how="vertical"))
            sink.extend(bad_warnings)
            counts.bad_records += nbad
            raws.append(raw)
            frames.clear()

        batched = 0
        for o in outcomes:
            self._tier_seen.setdefault(o.file.tier, len(self._tier_seen))
            frame = self._commit_file(o, sink, counts)
            if frame is not None:
                frames.append(frame)
                batched += frame.height
                if batched >= CONVERT_BATCH:
                    convert()
                    batched = 0
        if frames:
            convert()
        return raws

    def _commit_file(
        self, o: _Outcome, sink: WarningSink, counts: _PollCounts
    ) -> pl.DataFrame | None:
        """Record what became of one file; its new records (with file, tier, tz) or None."""
        f, got, name = o.file, o.fetched, o.file.display
        prev = self._files.get(f.key)
        if got.kind == "unchanged":
            counts.files_unchanged += 1
            if prev is not None:
                prev.meta = got.meta
            return None
        if got.kind == "gone":
            return None
        if got.kind == "error":
            counts.files_skipped += 1
            sink.add(f"{name}: could not read ({got.message}); will retry next poll", file=name)
            return None
        if got.kind == "too_large":
            counts.files_skipped += 1
            size = f"{got.meta.size} bytes" if got.meta.size is not None else "more"
            if prev is None or prev.status != "too_large" or prev.meta.size != got.meta.size:
                sink.add(
                    f"{name}: {size} is over the {self.limits.max_file_bytes}-byte limit for one "
                    "report; skipped without parsing (raise the limit if the file is genuine)",
                    file=name,
                )
            self._files[f.key] = _FileState(got.meta, "too_large", prev.records_done if prev else 0)
            return None
        assert o.parsed is not None
        return self._commit_parsed(o, prev.records_done if prev else 0, sink, counts)

    def _commit_parsed(
        self, o: _Outcome, done: int, sink: WarningSink, counts: _PollCounts
    ) -> pl.DataFrame | None:
        """A parsed file: warn about its state, keep the records after the ``done`` read."""
        f, meta, parsed, name = o.file, o.fetched.meta, o.parsed, o.file.display
        assert parsed is not None
        if parsed.status == "rejected":
            counts.files_skipped += 1
            sink.add(f"{name}: {parsed.message}", file=name)
            self._files[f.key] = _FileState(meta, "rejected", done)
            return None
        counts.files_read += 1
        n = parsed.records.height
        if n < done:
            sink.add(
                f"{name}: file shrank ({n} records, {done} read before); reading it again",
                file=name,
            )
            done = 0
        if parsed.status != "complete":
            where = f"{name}:{parsed.line}" if parsed.line else name
            tail = (
                "the rest is read when the file is complete"
                if parsed.status == "truncated"
                else "the file is read again when it changes"
            )
            sink.add(f"{where}: {parsed.message}; kept {n} complete record(s), {tail}", file=name)
        self._files[f.key] = _FileState(meta, parsed.status, n)
        new = parsed.records.slice(done)
        counts.records += new.height
        if new.is_empty():
            return None
        return new.with_columns(
            file=pl.lit(name),
            tier=pl.lit(f.tier),
            tz=pl.lit(checked_tz(parsed.timezone, name, sink), pl.String),
            report_ms=pl.lit(parsed.timestamp_ms, pl.Int64),
        )

    def _result(
        self, events: pl.DataFrame, sink: WarningSink, counts: _PollCounts, final: bool
    ) -> IngestResult:
        chain = self._chain
        pending = chain.pending_by_tier()
        stats: dict[str, Any] = {
            "tiers": self.tiers,
            "files_seen": counts.files_seen,
            "files_read": counts.files_read,
            "files_unchanged": counts.files_unchanged,
            "files_skipped": counts.files_skipped,
            "records": counts.records,
            "bad_records": counts.bad_records,
            "events": events.height,
            "pending": pending,
            "id_conflicts": chain.conflicts,
            "joined_by": chain.joined_by(),
        }
        unjoined = None
        if final:
            stats["unjoined"] = dict(pending)
            unjoined = chain.pending
            tiers = self.tiers
            for tier, n in pending.items():
                sink.add(chain.unjoined_warning(tiers, tier, n))
            if chain.conflicts:
                sink.add(
                    f"{chain.conflicts} server id(s) were claimed by two different jobs; "
                    "the first job was kept"
                )
        return IngestResult(events=events, warnings=sink.finish(), stats=stats, unjoined=unjoined)


def ingest_edgi(
    client_events: pl.DataFrame,
    sources: Sequence[str | ReportSource],
    *,
    limits: FetchLimits | None = None,
) -> IngestResult:
    """Read all reports once and join them to ``client_events`` (a final poll).

    ``sources`` are ``--reports`` values, nearest component first (``DIR``, ``URL`` or
    ``TIER=DIR_OR_URL``). Raises IngestError if a source cannot be listed at all.
    """
    return ReportCollector(sources, limits=limits).poll(client_events, final=True)
