"""EDGI report XML -> records: the hardened parser (pure, no I/O).

A report is ``<report timestamp=".." timezone="GMT" version="1.1">`` holding
``<metric_data>`` records with ``dt``, ``event``, ``job_id`` and, by event,
``job_id_bridge`` and ``status``. Reports are untrusted: DTDs, entity declarations and
external references are refused (defusedxml), and a file that ends early (still being
written) keeps its complete records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal
from xml.parsers import expat

import polars as pl
from defusedxml.common import (
    DefusedXmlException,
    DTDForbidden,
    EntitiesForbidden,
    ExternalReferenceForbidden,
)
from defusedxml.ElementTree import DefusedXMLParser

#: report element -> record column
_FIELD_COLUMNS: Final = {
    "dt": "dt",
    "event": "event",
    "job_id": "job_id",
    "job_id_bridge": "next_id",
    "status": "status",
}

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
