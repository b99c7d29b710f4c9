"""JSON-lines events: the documented format any system can emit, and its exporter.

One JSON object per line (UTF-8)::

    {"job": "j1", "stage": "ce_entry", "t": 1718000000123456789, "source": "ce",
     "precision_ns": 1000000, "agent": "ce-host", "clock_offset_ns": 0, "attrs": {}}

The time is exactly one of ``t`` (integer ns since the epoch), ``t_s`` (seconds, number)
or ``time`` (RFC 3339 string with a zone, e.g. ``2024-06-10T06:13:20.123Z``).
``precision_ns`` defaults to 1000 (1 µs), except that a ``time`` string without it takes
the resolution of its fraction (none: 1 s; 3 digits: 1 ms). ``agent`` defaults to
``"local"``, ``clock_offset_ns`` to 0 and ``attrs`` to ``{}``. See docs/formats.md.

Bad lines are skipped with a ``file:line`` warning; the file is refused only when it is
not JSON lines at all (no line among the first ones parses as a JSON object) or too big.
"""

from __future__ import annotations

import calendar
import json
import math
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import polars as pl

from gridbench.errors import IngestError
from gridbench.jobflow.events.ingest import IngestResult, WarningSink, clip
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA
from gridbench.store.layout import atomic_output
from gridbench.store.safe_open import INT64_MAX, INT64_MIN, refuse_json_constant

DEFAULT_MAX_BYTES: Final = 1 << 30  # 1 GiB per file
DEFAULT_MAX_LINE_BYTES: Final = 1 << 20  # 1 MiB per line
#: if none of this many first non-blank lines is a JSON object, the file is not JSON lines
SNIFF_LINES: Final = 50
DEFAULT_PRECISION_NS: Final = 1_000
_TIME_KEYS: Final = ("t", "t_s", "time")
_KNOWN: Final = frozenset(
    {"job", "stage", "source", "precision_ns", "agent", "clock_offset_ns", "attrs", *_TIME_KEYS}
)
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$"
)


class _BadLine(Exception):
    pass


def rfc3339_to_ns(text: str) -> tuple[int, int]:
    """Parse an RFC 3339 time with a zone; return (ns since epoch, resolution in ns)."""
    m = _RFC3339.match(text)
    if not m:
        raise ValueError(
            f"'{clip(text)}' is not an RFC 3339 time with a zone (e.g. 2024-06-10T06:13:20Z)"
        )
    y, mo, d, h, mi, s, frac, zone = m.groups()
    if zone in ("Z", "z"):
        tz = UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    dt = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=tz)
    try:
        secs = calendar.timegm(dt.astimezone(UTC).timetuple())
    except OverflowError:  # year 1 or 9999 moved past the calendar by its zone
        raise ValueError(f"'{text}' is out of range once its zone is applied") from None
    frac_ns = int(frac.ljust(9, "0")) if frac else 0
    resolution = 10 ** (9 - len(frac)) if frac else 1_000_000_000
    t_ns = secs * 1_000_000_000 + frac_ns
    if not INT64_MIN <= t_ns <= INT64_MAX:
        raise ValueError(f"'{text}' is out of range (nanoseconds since 1970 fit in 64 bits)")
    return t_ns, resolution


def _int(obj: dict[str, Any], key: str, default: int | None = None) -> int:
    v = obj.get(key, default)
    if v is None or isinstance(v, bool) or not isinstance(v, int):
        raise _BadLine(f"'{key}' must be an integer")
    if not INT64_MIN <= v <= INT64_MAX:
        raise _BadLine(f"'{key}' is out of range")
    return v


def _text(obj: dict[str, Any], key: str, default: str | None = None) -> str:
    v = obj.get(key, default)
    if isinstance(v, int) and not isinstance(v, bool) and key == "job":
        v = str(v)  # numeric job ids are common; keep them as text
    if not isinstance(v, str) or not v:
        raise _BadLine(f"'{key}' must be a non-empty string" if key in obj else f"missing '{key}'")
    return _encodable(v, f"'{key}'")


def _encodable(text: str, what: str) -> str:
    """``text``, unless it holds a lone surrogate (valid JSON may escape one, "\\ud800"),
    which no log, page or terminal can encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _BadLine(f"{what} holds a lone surrogate (an escaped \\ud800-\\udfff)") from None
    return text


def _event_row(obj: Any) -> tuple[Any, ...]:
    if not isinstance(obj, dict):
        raise _BadLine("not a JSON object")
    job, stage, source = _text(obj, "job"), _text(obj, "stage"), _text(obj, "source")
    given = [k for k in _TIME_KEYS if k in obj]
    if len(given) != 1:
        raise _BadLine("give exactly one of 't' (ns), 't_s' (seconds) or 'time' (RFC 3339)")
    precision = DEFAULT_PRECISION_NS
    if given[0] == "t":
        t_ns = _int(obj, "t")
    elif given[0] == "t_s":
        v = obj["t_s"]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise _BadLine("'t_s' must be a number of seconds")
        # via the number's shortest decimal form: 1718000001.25 -> exactly ...250000000 ns
        t_ns = int((Decimal(repr(v)) * 1_000_000_000).to_integral_value())
        if not INT64_MIN <= t_ns <= INT64_MAX:
            raise _BadLine("'t_s' is out of range")
    else:
        if not isinstance(obj["time"], str):
            raise _BadLine("'time' must be an RFC 3339 string")
        try:
            t_ns, precision = rfc3339_to_ns(obj["time"])
        except ValueError as exc:
            raise _BadLine(str(exc)) from None
    if "precision_ns" in obj:
        precision = _int(obj, "precision_ns")
        if precision <= 0:
            raise _BadLine("'precision_ns' must be positive")
    agent = _text(obj, "agent", "local")
    offset = _int(obj, "clock_offset_ns", 0)
    attrs = obj.get("attrs", {})
    if attrs is None:
        attrs = {}
    if not isinstance(attrs, dict):
        raise _BadLine("'attrs' must be a JSON object")
    # no attrs is null, as the event-log reader gives it
    attrs_text = json.dumps(attrs, separators=(",", ":"), ensure_ascii=False) if attrs else None
    if attrs_text is not None:
        _encodable(attrs_text, "'attrs'")
    return (job, stage, t_ns, source, precision, agent, offset, attrs_text)


def parse_jsonl_lines(
    lines: Iterable[bytes],
    *,
    name: str = "<jsonl>",
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> IngestResult:
    """Parse JSON-lines events from byte lines (each with its ``\\n``, if any).

    Raises IngestError only if the input is not JSON lines at all.
    """
    sink = WarningSink()
    rows: list[tuple[Any, ...]] = []
    unknown: set[str] = set()
    nonblank = json_ok = bad = 0
    first_bad: tuple[int, str] | None = None
    lineno = 0
    for lineno, raw in enumerate(lines, start=1):
        torn = not raw.endswith(b"\n")
        if len(raw) > max_line_bytes:
            nonblank += 1
            bad += 1
            sink.add(
                f"{name}:{lineno}: line longer than {max_line_bytes} bytes; skipped",
                file=name,
                kind="bad lines",
            )
            continue
        text = raw.decode("utf-8", errors="replace").strip()
        if lineno == 1:
            text = text.lstrip("\ufeff")
        if not text:
            continue
        nonblank += 1
        try:
            obj = json.loads(text, parse_constant=refuse_json_constant)  # NaN is no JSON number
        except (ValueError, RecursionError) as exc:
            bad += 1
            if torn:
                sink.add(f"{name}:{lineno}: torn last line (no newline); ignored", file=name)
                continue
            if isinstance(exc, json.JSONDecodeError):
                msg = f"not valid JSON ({exc.msg} at column {exc.colno})"
            elif isinstance(exc, RecursionError):
                msg = "not valid JSON (nested too deeply)"
            else:
                msg = f"not valid JSON ({exc})"
            first_bad = first_bad or (lineno, msg)
            sink.add(f"{name}:{lineno}: {msg}; line skipped", file=name, kind="bad lines")
        else:
            if isinstance(obj, dict):
                json_ok += 1
            try:
                rows.append(_event_row(obj))
                unknown.update(k for k in obj if k not in _KNOWN)
            except _BadLine as exc:
                bad += 1
                first_bad = first_bad or (lineno, str(exc))
                sink.add(f"{name}:{lineno}: {exc}; line skipped", file=name, kind="bad lines")
        if json_ok == 0 and nonblank >= SNIFF_LINES:
            break  # valid JSON that is no object (arrays, numbers) counts as well
    if nonblank and json_ok == 0:
        where = f"{name}:{first_bad[0]}" if first_bad else name
        among = (
            f"the first {SNIFF_LINES} non-blank lines" if nonblank >= SNIFF_LINES else "its lines"
        )
        raise IngestError(
            f"not a JSON-lines event file (none of {among} is a JSON object)",
            where=where,
            fix="write one JSON object per line with job, stage, source and t/t_s/time "
            "(see docs/formats.md); event-log CSV files are read as events.csv",
        )
    if unknown:
        sink.add(f"{name}: unknown field(s) ignored: {', '.join(sorted(unknown))}")
    df = pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")
    stats = {"lines": lineno, "events": df.height, "bad_lines": bad}
    return IngestResult(events=df, warnings=sink.finish(), stats=stats)


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> IngestResult:
    """Read a JSON-lines event file into :data:`EVENT_SCHEMA` events, with warnings."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError as exc:
        raise IngestError("event file not found", where=str(p), fix="check the path") from exc
    if size > max_bytes:
        raise IngestError(
            f"event file is {size} bytes, over the {max_bytes}-byte limit",
            where=str(p),
            fix="split the file, or raise the size limit if it is genuine",
        )
    try:
        with open(p, "rb") as fh:
            lines = iter(lambda: fh.readline(max_line_bytes + 1), b"")
            return parse_jsonl_lines(
                _whole_lines(lines, max_line_bytes), name=str(p), max_line_bytes=max_line_bytes
            )
    except IsADirectoryError as exc:
        raise IngestError("expected a file, got a directory", where=str(p)) from exc
    except PermissionError as exc:
        raise IngestError(
            "event file is not readable", where=str(p), fix="check permissions"
        ) from exc


def _whole_lines(chunks: Iterable[bytes], max_line_bytes: int) -> Iterable[bytes]:
    """Re-join ``readline(limit)`` pieces; an over-long line becomes one oversize marker."""
    over = False
    for c in chunks:
        if over:
            over = not c.endswith(b"\n")
            continue
        if len(c) > max_line_bytes and not c.endswith(b"\n"):
            over = True
            yield c  # longer than the limit: reported once, rest of the line discarded
            continue
        yield c


# --- export ---------------------------------------------------------------------------


def events_to_jsonl(events: pl.DataFrame) -> pl.Series:
    """One JSON-lines string per event (columnar; ``attrs`` is embedded as an object)."""
    base = pl.struct(
        pl.col("job"),
        pl.col("stage"),
        pl.col("t_ns").alias("t"),
        pl.col("source"),
        pl.col("precision_ns"),
        pl.col("agent"),
        pl.col("clock_offset_ns"),
    ).struct.json_encode()
    attrs = pl.col("attrs").fill_null("").str.strip_chars()
    line = (
        pl.when(attrs == "")
        .then(base)
        .when(attrs.str.starts_with("{") & attrs.str.ends_with("}"))
        .then(base.str.head(-1) + ',"attrs":' + attrs + "}")
        .otherwise(  # not an object: keep the text rather than write invalid JSON
            base.str.head(-1)
            + ',"attrs":'
            + pl.struct(attrs.alias("raw")).struct.json_encode()
            + "}"
        )
    )
    return events.select(*EVENT_COLUMNS).select(line.alias("line")).get_column("line")


def write_jsonl(events: pl.DataFrame, path: str | os.PathLike[str]) -> int:
    """Write events as JSON lines (atomically, never through a link: the store's
    :func:`~gridbench.store.layout.atomic_output`); returns the count."""
    lines = events_to_jsonl(events)
    with atomic_output(Path(path)) as tmp, open(tmp, "x", encoding="utf-8", newline="\n") as fh:
        for chunk in lines.to_frame().iter_slices(50_000):
            fh.write("\n".join(chunk.get_column("line").to_list()))
            fh.write("\n")
    return lines.len()
