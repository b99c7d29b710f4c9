"""EDGI monitoring reports: hardened parsing, mapping to stages, and the id-chain join.

A report is ``<report timestamp=".." timezone="GMT" version="1.1">`` holding
``<metric_data>`` records with ``dt``, ``event`` (``job_entry`` | ``job_submission`` |
``job_status``), ``job_id`` and, by event, ``job_id_bridge`` and ``status``. Per tier T:

* ``job_entry`` -> ``T_entry``
* ``job_submission`` -> ``T_submit`` (attrs ``next_id`` = ``job_id_bridge``)
* ``job_status`` with a terminal status (:data:`TERMINAL_STATUSES`) -> ``T_done``,
  other statuses -> ``T_status`` (attrs ``status``; not part of the chain)

``dt`` is ``YYYY-MM-DD HH:MM:SS`` (precision 1 s) optionally with a fraction (``.mmm``:
1 ms). Reports are untrusted: DTDs, entity declarations and external references are
refused (defusedxml), bad records are skipped with a ``file:line`` warning, and a file
that ends early (still being written) keeps its complete records and is re-read later.

Server ids are tied to gridbench jobs through the id chain: the client's ``submit_ack``
``backend_id`` is the first tier's id; each tier's ``job_submission`` names the next
tier's id. The join is done with polars.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import zoneinfo
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal
from xml.parsers import expat

import httpx
import polars as pl
from defusedxml.common import (
    DefusedXmlException,
    DTDForbidden,
    EntitiesForbidden,
    ExternalReferenceForbidden,
)
from defusedxml.ElementTree import DefusedXMLParser

from gridbench.jobflow.events.ingest import (
    SHOWN_CHARS,
    WARNINGS_PER_FILE,
    IngestResult,
    WarningSink,
    clip,
)
from gridbench.jobflow.events.model import EVENT_SCHEMA, STAGE_SUBMIT_ACK
from gridbench.jobflow.events.sources import (
    Fetched,
    FetchLimits,
    FileMeta,
    ReportFile,
    ReportSource,
    fetch_file,
    list_source,
    make_client,
    parse_report_sources,
    tier_order_key,
)

#: job_status values (compared case-insensitively) that end a job in a tier
TERMINAL_STATUSES: Final = frozenset(
    {"finished", "failed", "error", "aborted", "cancelled", "done"}
)
EDGI_EVENTS: Final = ("job_entry", "job_submission", "job_status")
#: report element -> record column
_FIELD_COLUMNS: Final = {
    "dt": "dt",
    "event": "event",
    "job_id": "job_id",
    "job_id_bridge": "next_id",
    "status": "status",
}
_UTC_NAMES: Final = frozenset({"", "gmt", "utc", "z", "etc/utc", "etc/gmt", "+00:00", "+0000"})
_DT_RE: Final = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$"

RECORD_SCHEMA: Final = pl.Schema(
    {
        "line": pl.Int64,
        "job_id": pl.String,
        "event": pl.String,
        "dt": pl.String,
        "status": pl.String,
        "next_id": pl.String,
    }
)
#: server events before the join: tier-local ids
RAW_SCHEMA: Final = pl.Schema(
    {
        "tier": pl.String,
        "id": pl.String,
        "stage": pl.String,
        "t_ns": pl.Int64,
        "precision_ns": pl.Int64,
        "next_id": pl.String,
        "attrs": pl.String,
    }
)
_MAP_SCHEMA: Final = pl.Schema({"id": pl.String, "job": pl.String})


# --- parsing --------------------------------------------------------------------------


class _NotAReport(Exception):
    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.root = root


class _Collect:
    """expat callbacks that keep the fields of each ``<metric_data>`` and its line.

    Kept lean on purpose (three small callbacks per element): parsing dominates the
    ingest time. Text is stripped later, in columns.
    """

    __slots__ = (
        "cur",
        "fields",
        "in_record",
        "line",
        "parser",
        "rec_tag",
        "rows",
        "text",
        "timestamp_ms",
        "timezone",
    )

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.in_record = False
        self.text = ""
        self.cur: dict[str, str] = {}
        self.line = 0
        self.timezone = "GMT"
        self.timestamp_ms: int | None = None
        self.rows: list[tuple[int, str | None, str | None, str | None, str | None, str | None]] = []
        self.rec_tag = "metric_data"
        self.fields = dict(_FIELD_COLUMNS)

    def root(self, name: str, attrs: list[str]) -> None:
        """The first element: check it is a report, then hand over to :meth:`start`."""
        ns, _, local = name.rpartition("}")
        if local != "report":
            raise _NotAReport(local)
        if ns:  # namespaced report: compare full names, still without splitting each one
            self.rec_tag = f"{ns}}}metric_data"
            self.fields = {f"{ns}}}{k}": v for k, v in _FIELD_COLUMNS.items()}
        for k, v in zip(attrs[::2], attrs[1::2], strict=False):
            if k == "timezone":
                self.timezone = v.strip()
            elif k == "timestamp" and v.strip().isdigit() and len(v.strip()) < 18:
                self.timestamp_ms = int(v.strip())
        self.parser.StartElementHandler = self.start

    def start(self, name: str, attrs: list[str]) -> None:
        if name == self.rec_tag:
            self.cur = {}
            self.line = self.parser.CurrentLineNumber
            self.in_record = True
        self.text = ""

    def data(self, s: str) -> None:
        self.text += s

    def end(self, name: str) -> None:
        key = self.fields.get(name)
        if key is not None:
            if self.in_record:
                self.cur[key] = self.text
        elif name == self.rec_tag and self.in_record:
            c = self.cur
            self.rows.append(
                (
                    self.line,
                    c.get("job_id"),
                    c.get("event"),
                    c.get("dt"),
                    c.get("status"),
                    c.get("next_id"),
                )
            )
            self.in_record = False
        self.text = ""


ParseStatus = Literal["complete", "truncated", "malformed", "rejected"]


@dataclass(slots=True)
class ParsedReport:
    """Records of one report file (complete ones only) and how parsing ended."""

    records: pl.DataFrame
    timezone: str = "GMT"
    timestamp_ms: int | None = None  # the report's own timestamp attribute
    status: ParseStatus = "complete"
    message: str = ""
    line: int | None = None


def _hostile_reason(exc: DefusedXmlException) -> str:
    if isinstance(exc, DTDForbidden):
        what = "a DTD (<!DOCTYPE>)"
    elif isinstance(exc, EntitiesForbidden):
        what = "an entity declaration"
    elif isinstance(exc, ExternalReferenceForbidden):
        what = "an external reference"
    else:  # pragma: no cover - defusedxml has no other kinds today
        what = "a forbidden construct"
    return (
        f"rejected: contains {what}, which monitoring reports never need "
        "(entity expansion / external entity attack?); file skipped"
    )


def parse_report(data: bytes) -> ParsedReport:
    """Parse one report with defusedxml's hardened expat; never raises for bad input.

    DTDs, entity declarations and external references reject the whole file. A file
    that ends early keeps the records completed before the end (``truncated``).
    """
    holder = DefusedXMLParser(forbid_dtd=True, forbid_entities=True, forbid_external=True)
    x = holder.parser  # the defused expat parser; we install faster callbacks on it
    c = _Collect(x)
    x.StartElementHandler = c.root
    x.EndElementHandler = c.end
    x.CharacterDataHandler = c.data
    x.DefaultHandlerExpand = _ignore
    x.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def result(status: ParseStatus, message: str = "", line: int | None = None) -> ParsedReport:
        df = pl.DataFrame(c.rows, schema=RECORD_SCHEMA, orient="row")
        text = pl.col("job_id", "event", "dt", "status", "next_id").str.strip_chars()
        df = df.with_columns(pl.when(text != "").then(text))
        return ParsedReport(df, c.timezone, c.timestamp_ms, status, message, line)

    try:
        x.Parse(data, False)
    except DefusedXmlException as exc:
        return ParsedReport(
            pl.DataFrame(schema=RECORD_SCHEMA), status="rejected", message=_hostile_reason(exc)
        )
    except _NotAReport as exc:
        return ParsedReport(
            pl.DataFrame(schema=RECORD_SCHEMA),
            status="rejected",
            message=(
                f"not an EDGI monitoring report (root element <{exc.root}>, "
                "expected <report>); file skipped"
            ),
        )
    except expat.ExpatError as exc:
        return result(
            "malformed", f"not well-formed XML ({expat.ErrorString(exc.code)})", exc.lineno
        )
    try:
        x.Parse(b"", True)
    except expat.ExpatError as exc:
        # the data ended before the document did: most likely the file being written
        return result("truncated", f"file ends early ({expat.ErrorString(exc.code)})", exc.lineno)
    return result("complete")


def _ignore(_s: str) -> None:
    return None


# --- records -> tier events -----------------------------------------------------------


def _to_ns(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``t_ns``/``precision_ns`` from ``dt`` and ``tz`` (per-file report timezone)."""
    parts = pl.col("dt").str.extract_groups(_DT_RE)
    df = df.with_columns(
        _base=parts.struct.field("1").str.strptime(
            pl.Datetime("ns"), "%Y-%m-%d %H:%M:%S", strict=False
        ),
        _frac=parts.struct.field("2"),
    )
    frac_ns = pl.col("_frac").str.pad_end(9, "0").cast(pl.Int64, strict=False).fill_null(0)
    prec = (
        pl.when(pl.col("_frac").is_null())
        .then(pl.lit(1_000_000_000, pl.Int64))
        .otherwise(pl.lit(10, pl.Int64).pow(9 - pl.col("_frac").str.len_chars()).cast(pl.Int64))
    )
    out: list[pl.DataFrame] = []
    for tz, part in df.partition_by("tz", as_dict=True).items():
        name = str(tz[0] or "")
        base = pl.col("_base")
        if tz[0] is None:  # a zone that cannot be applied: no time (the record is skipped)
            base = pl.lit(None, pl.Datetime("ns"))
        elif name.lower() not in _UTC_NAMES:
            base = base.dt.replace_time_zone(name, ambiguous="earliest", non_existent="null")
        out.append(
            part.with_columns(
                t_ns=base.dt.epoch("ns") + frac_ns,
                precision_ns=prec,
            )
        )
    return pl.concat(out, how="vertical").drop("_base", "_frac")


def _blank(c: str) -> pl.Expr:
    return pl.col(c).is_null() | (pl.col(c) == "")


def _shown(c: str) -> pl.Expr:
    """Column ``c`` as a warning shows it: cut to SHOWN_CHARS, marked with "…"."""
    v = pl.col(c)
    cut = v.str.slice(0, SHOWN_CHARS) + pl.lit("…")
    return pl.when(v.str.len_chars() > SHOWN_CHARS).then(cut).otherwise(v)


def _bad_reason() -> pl.Expr:
    blank = _blank
    return (
        pl.when(blank("job_id"))
        .then(pl.lit("record without <job_id>"))
        .when(blank("event"))
        .then(pl.lit("record without <event>"))
        .when(~pl.col("event").is_in(list(EDGI_EVENTS)))
        .then(pl.format("unknown event '{}'", _shown("event")))
        .when(pl.col("tz").is_null())
        .then(pl.lit("the report's timezone is unknown"))
        .when(blank("dt"))
        .then(pl.lit("record without <dt>"))
        .when(pl.col("t_ns").is_null())
        .then(
            pl.format(
                "bad dt '{}' (expected 'YYYY-MM-DD HH:MM:SS[.mmm]')",
                _shown("dt"),
            )
        )
        .when((pl.col("event") == "job_status") & blank("status"))
        .then(pl.lit("job_status record without <status>"))
        .otherwise(None)
    )


#: records stamped this long after their report's own timestamp suggest a timezone mix-up
FUTURE_TOLERANCE_NS: Final = 50 * 60 * 1_000_000_000  # below any whole-hour offset


def _timezone_warnings(good: pl.DataFrame) -> list[str]:
    """Warn where records are stamped well after the report that holds them was written.

    The seed's own example report has ``dt`` two hours after its ``timestamp``: local
    time labelled GMT. Times are kept as given; the warning tells the user.
    """
    if "report_ms" not in good.columns:
        return []
    ahead = (
        good.filter(pl.col("report_ms").is_not_null())
        .group_by("file", maintain_order=True)
        .agg((pl.col("t_ns").max() - pl.col("report_ms").first() * 1_000_000).alias("ahead"))
        .filter(pl.col("ahead") > FUTURE_TOLERANCE_NS)
    )
    return [
        f"{f}: records are stamped {a / 3.6e12:.1f} h after the report's timestamp attribute; "
        "<dt> may be local time rather than the declared timezone (times are used as given)"
        for f, a in ahead.iter_rows()
    ]


def records_to_events(records: pl.DataFrame) -> tuple[pl.DataFrame, list[str], int]:
    """Map parsed records (with ``file``, ``tier``, ``tz`` columns) to tier events.

    Returns (events in :data:`RAW_SCHEMA`, warnings naming file and line, bad count).
    """
    if records.is_empty():
        return pl.DataFrame(schema=RAW_SCHEMA), [], 0
    df = _to_ns(records).with_columns(_reason=_bad_reason())
    bad = df.filter(pl.col("_reason").is_not_null())
    warnings: list[str] = []
    if bad.height:
        shown = bad.group_by("file", maintain_order=True).head(WARNINGS_PER_FILE)
        for f, line, reason in shown.select("file", "line", "_reason").iter_rows():
            warnings.append(f"{f}:{line}: {reason}; record skipped")
        for f, n in bad.group_by("file", maintain_order=True).len().iter_rows():
            if n > WARNINGS_PER_FILE:
                warnings.append(f"{f}: {n - WARNINGS_PER_FILE} more bad records skipped, not shown")
    good = df.filter(pl.col("_reason").is_null())
    warnings.extend(_timezone_warnings(good))
    ev = pl.col("event")
    terminal = pl.col("status").str.to_lowercase().is_in(list(TERMINAL_STATUSES))
    stage = (
        pl.when(ev == "job_entry")
        .then(pl.col("tier") + "_entry")
        .when(ev == "job_submission")
        .then(pl.col("tier") + "_submit")
        .when(terminal)
        .then(pl.col("tier") + "_done")
        .otherwise(pl.col("tier") + "_status")
    )
    idc = pl.col("job_id").alias("id")
    attrs = (
        pl.when((ev == "job_submission") & pl.col("next_id").is_not_null())
        .then(pl.struct(idc, pl.col("next_id")).struct.json_encode())
        .when(ev == "job_status")
        .then(pl.struct(idc, pl.col("status")).struct.json_encode())
        .otherwise(pl.struct(idc).struct.json_encode())
    )
    out = good.select(
        pl.col("tier"),
        idc,
        stage.alias("stage"),
        pl.col("t_ns"),
        pl.col("precision_ns"),
        pl.when(ev == "job_submission").then(pl.col("next_id")).otherwise(None).alias("next_id"),
        attrs.alias("attrs"),
    )
    return out.cast(dict(RAW_SCHEMA)), warnings, bad.height  # type: ignore[arg-type]


def client_id_map(client_events: pl.DataFrame) -> pl.DataFrame:
    """(id, job) pairs: the first tier's id of each client job, from ``submit_ack`` attrs."""
    return (
        client_events.lazy()
        .filter(pl.col("stage") == STAGE_SUBMIT_ACK)
        .select(
            pl.col("attrs").str.json_path_match("$.backend_id").alias("id"),
            pl.col("job"),
        )
        .filter(pl.col("id").is_not_null() & (pl.col("id") != ""))
        .collect()
        .cast(dict(_MAP_SCHEMA))  # type: ignore[arg-type]
    )


def _finish_events(joined: pl.DataFrame) -> pl.DataFrame:
    return joined.select(
        pl.col("job"),
        pl.col("stage"),
        pl.col("t_ns"),
        pl.col("tier").alias("source"),
        pl.col("precision_ns"),
        pl.col("tier").alias("agent"),
        pl.lit(0, pl.Int64).alias("clock_offset_ns"),
        pl.col("attrs"),
    ).cast(dict(EVENT_SCHEMA))  # type: ignore[arg-type]


# --- incremental collection -----------------------------------------------------------

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
        self._pending = pl.DataFrame(schema=RAW_SCHEMA)
        self._maps: dict[str, pl.DataFrame] = {}
        self._tier_seen: dict[str, int] = {}
        self._warned: set[str] = set()
        self._conflicts = 0
        self._joined_by: dict[tuple[str, str], int] = {}  # (tier, "own"|"upstream") -> records
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
        self._add_map("__client__", client_id_map(client_events))

    def _add_map(self, tier: str, new: pl.DataFrame) -> None:
        if new.is_empty():
            return
        new = new.unique(subset="id", keep="first", maintain_order=True)
        old = self._maps.get(tier)
        if old is None:
            self._maps[tier] = new
            return
        clash = new.join(old, on="id", how="inner").filter(pl.col("job") != pl.col("job_right"))
        self._conflicts += clash.height
        self._maps[tier] = pl.concat([old, new.join(old, on="id", how="anti")], how="vertical")

    def _id_map(self, index: int) -> pl.DataFrame | None:
        tiers = self.tiers
        return self._maps.get("__client__" if index == 0 else tiers[index - 1] + "->")

    def _upstream_map(self, index: int) -> pl.DataFrame | None:
        """(id, job) of the upstream tier's own ids, for a tier that reports jobs under
        the id its upstream knows them by. The first tier's upstream is the client, whose
        id for a job (the submit_ack backend_id) is the first tier's own id: it has none."""
        return self._id_map(index - 1) if index >= 1 else None

    def _ahead_of_its_chain(self, tier: str, index: int) -> bool:
        """A discovered tier of known place (ce, bridge, tierN) standing earlier in the list
        than that place because its upstream tier's reports have not been seen yet: joining
        it now would take the client's ids for its own."""
        if not self.sources[0].discover:
            return False
        place = tier_order_key(tier, 0)[0]
        return place < 1_000_000 and index < place

    def joined_by(self) -> dict[str, dict[str, int]]:
        """Per tier, the records joined so far by its own id and by the upstream id."""
        out: dict[str, dict[str, int]] = {}
        for (tier, how), n in self._joined_by.items():
            out.setdefault(tier, {"own": 0, "upstream": 0})[how] = n
        return out

    def _join(self, final: bool = False) -> pl.DataFrame:
        """Join every pending record whose tier id is known; keep the rest pending."""
        out: list[pl.DataFrame] = []
        rest: list[pl.DataFrame] = []
        tiers = self.tiers
        known = set(tiers)
        by_tier = self._pending.partition_by("tier", as_dict=True)
        for k, tier in enumerate(tiers):
            part = by_tier.get((tier,))
            if part is None:
                continue
            if not final and self._ahead_of_its_chain(tier, k):
                rest.append(part)  # joined once its upstream tier is seen, or at the end
                continue
            # a tier's record names the job by its own id (the one the tier upstream
            # handed it) or, as some components do, by that upstream tier's own id
            joined_parts = []
            for how, m in (("own", self._id_map(k)), ("upstream", self._upstream_map(k))):
                if m is None or part.is_empty():
                    continue
                got = part.join(m, on="id", how="inner")
                part = part.join(m, on="id", how="anti")
                if got.height:
                    key = (tier, how)
                    self._joined_by[key] = self._joined_by.get(key, 0) + got.height
                    joined_parts.append(got)
            rest.append(part)
            if not joined_parts:
                continue
            joined = pl.concat(joined_parts, how="vertical")
            nxt = joined.filter(
                (pl.col("stage") == tier + "_submit") & pl.col("next_id").is_not_null()
            ).select(pl.col("next_id").alias("id"), pl.col("job"))
            self._add_map(tier + "->", nxt)
            out.append(joined)
        rest.extend(p for (t,), p in by_tier.items() if t not in known)
        self._pending = pl.concat(rest, how="vertical") if rest else pl.DataFrame(schema=RAW_SCHEMA)
        if not out:
            return pl.DataFrame(schema=EVENT_SCHEMA)
        return _finish_events(pl.concat(out, how="vertical")).sort("t_ns")

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
            sem = asyncio.Semaphore(self.limits.concurrency)

            async def one(f: ReportFile) -> _Outcome:
                async with sem:
                    st = self._files.get(f.key)
                    got = await fetch_file(client, f, st.meta if st else None, self.limits)
                if got.kind != "data" or got.data is None:
                    return _Outcome(f, got)
                loop = asyncio.get_running_loop()
                parsed = await loop.run_in_executor(_PARSE_POOL, parse_report, got.data)
                got.data = None  # free the bytes early
                return _Outcome(f, got, parsed)

            outcomes = await asyncio.gather(*(one(f) for f in files))
        return list(outcomes), warnings

    def _commit(
        self, outcomes: list[_Outcome], listing_warnings: list[str], final: bool
    ) -> IngestResult:
        sink = WarningSink()
        for w in listing_warnings:
            if w not in self._warned:  # the same listing problem is reported once
                self._warned.add(w)
                sink.add(w)
        counts = _PollCounts(files_seen=len(outcomes))
        frames: list[pl.DataFrame] = []
        raws: list[pl.DataFrame] = [self._pending]

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
        self._pending = pl.concat(raws, how="vertical")
        events = self._join(final)
        if final:
            for key, st in self._files.items():
                if st.status == "truncated":
                    sink.add(
                        f"{key}: still incomplete at the end of the ingest; "
                        f"only its {st.records_done} complete record(s) were used"
                    )
        return self._result(events, sink, counts, final)

    def _commit_file(
        self, o: _Outcome, sink: WarningSink, counts: _PollCounts
    ) -> pl.DataFrame | None:
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
        parsed = o.parsed
        assert parsed is not None
        done = prev.records_done if prev else 0
        if parsed.status == "rejected":
            counts.files_skipped += 1
            sink.add(f"{name}: {parsed.message}", file=name)
            self._files[f.key] = _FileState(got.meta, "rejected", done)
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
        self._files[f.key] = _FileState(got.meta, parsed.status, n)
        new = parsed.records.slice(done)
        counts.records += new.height
        if new.is_empty():
            return None
        return new.with_columns(
            file=pl.lit(name),
            tier=pl.lit(f.tier),
            tz=pl.lit(_checked_tz(parsed.timezone, name, sink), pl.String),
            report_ms=pl.lit(parsed.timestamp_ms, pl.Int64),
        )

    def _result(
        self, events: pl.DataFrame, sink: WarningSink, counts: _PollCounts, final: bool
    ) -> IngestResult:
        pending = (
            {t: n for t, n in self._pending.group_by("tier", maintain_order=True).len().iter_rows()}
            if self._pending.height
            else {}
        )
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
            "id_conflicts": self._conflicts,
            "joined_by": self.joined_by(),
        }
        unjoined = None
        if final:
            stats["unjoined"] = dict(pending)
            unjoined = self._pending
            for tier, n in pending.items():
                sink.add(self._unjoined_warning(tier, n))
            if self._conflicts:
                sink.add(
                    f"{self._conflicts} server id(s) were claimed by two different jobs; "
                    "the first job was kept"
                )
        return IngestResult(events=events, warnings=sink.finish(), stats=stats, unjoined=unjoined)

    def _unjoined_warning(self, tier: str, n: int) -> str:
        ids = (
            self._pending.filter(pl.col("tier") == tier)
            .get_column("id")
            .unique(maintain_order=True)
        )
        sample = ", ".join(ids.head(3).to_list())
        tiers = self.tiers
        if tier not in tiers:
            why = "this tier is not in the chain"
        elif tiers.index(tier) == 0:
            why = (
                "they are not the backend_id of any client submit_ack (other users' jobs, "
                "or client events from another trial?)"
            )
        else:
            prev = tiers[tiers.index(tier) - 1]
            why = (
                f"no {prev} job_submission names them in <job_id_bridge> (missing {prev} reports?)"
            )
        return (
            f"{n} {tier} record(s) could not be joined to a gridbench job: {why}; "
            f"e.g. {sample}. They are counted as unjoined and left out of the events"
        )


def _checked_tz(tz: str, name: str, sink: WarningSink) -> str | None:
    """The report's zone as polars names it, or None (its records are then skipped) for a
    zone it cannot apply: unknown, or a file-system alias such as ``posixrules``,
    ``localtime`` or ``right/UTC``."""
    if tz.lower() in _UTC_NAMES:
        return "UTC"
    if not _usable_zone(tz):
        sink.add(
            f"{name}: unknown report timezone {clip(repr(tz), 80)}; its records are skipped "
            "(give the report an IANA zone such as Europe/Paris, or GMT)",
            file=name,
        )
        return None
    return tz


@functools.lru_cache(maxsize=64)
def _usable_zone(tz: str) -> bool:
    """Can both zoneinfo and polars apply ``tz``? (polars knows fewer names)."""
    if len(tz) > 64:
        return False
    try:
        zoneinfo.ZoneInfo(tz)
        pl.Series([0], dtype=pl.Datetime("ns")).dt.replace_time_zone(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        return False
    return True


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


def joined_by_lines(joined_by: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One line per tier saying which id its records were joined by, e.g. ``tier bridge:
    40 records joined by upstream id`` (``ReportCollector.joined_by`` or ingest.json's
    ``stats.joined_by``)."""
    out = []
    for tier, d in joined_by.items():
        own, up = int(d.get("own", 0)), int(d.get("upstream", 0))
        if up and own:
            out.append(
                f"tier {tier}: {own + up} records joined, {own} by its own id and {up} by "
                "the upstream id (mixed)"
            )
        elif up:
            out.append(f"tier {tier}: {up} records joined by upstream id")
        elif own:
            out.append(f"tier {tier}: {own} records joined by own id")
    return out
