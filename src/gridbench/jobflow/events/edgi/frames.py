"""Parsed report records -> tier events, with polars (pure, no I/O).

Per tier T:

* ``job_entry`` -> ``T_entry``
* ``job_submission`` -> ``T_submit`` (attrs ``next_id`` = ``job_id_bridge``)
* ``job_status`` with a terminal status (:data:`TERMINAL_STATUSES`) -> ``T_done``,
  other statuses -> ``T_status`` (attrs ``status``; not part of the chain)

``dt`` is ``YYYY-MM-DD HH:MM:SS`` (precision 1 s) optionally with a fraction (``.mmm``:
1 ms), in the report's timezone. Bad records are skipped with a ``file:line`` warning.
"""

from __future__ import annotations

import functools
import zoneinfo
from typing import Final

import polars as pl

from gridbench.jobflow.events.ingest import SHOWN_CHARS, WARNINGS_PER_FILE, WarningSink, clip

#: job_status values (compared case-insensitively) that end a job in a tier
TERMINAL_STATUSES: Final = frozenset(
    {"finished", "failed", "error", "aborted", "cancelled", "done"}
)
EDGI_EVENTS: Final = ("job_entry", "job_submission", "job_status")
#: report timezone names (lower case) taken as UTC
UTC_NAMES: Final = frozenset({"", "gmt", "utc", "z", "etc/utc", "etc/gmt", "+00:00", "+0000"})
_DT_RE: Final = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$"

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
        elif name.lower() not in UTC_NAMES:
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


def checked_tz(tz: str, name: str, sink: WarningSink) -> str | None:
    """The report's zone as polars names it, or None (its records are then skipped) for a
    zone it cannot apply: unknown, or a file-system alias such as ``posixrules``,
    ``localtime`` or ``right/UTC``."""
    if tz.lower() in UTC_NAMES:
        return "UTC"
    if not usable_zone(tz):
        sink.add(
            f"{name}: unknown report timezone {clip(repr(tz), 80)}; its records are skipped "
            "(give the report an IANA zone such as Europe/Paris, or GMT)",
            file=name,
        )
        return None
    return tz


@functools.lru_cache(maxsize=64)
def usable_zone(tz: str) -> bool:
    """Can both zoneinfo and polars apply ``tz``? (polars knows fewer names)."""
    if len(tz) > 64:
        return False
    try:
        zoneinfo.ZoneInfo(tz)
        pl.Series([0], dtype=pl.Datetime("ns")).dt.replace_time_zone(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        return False
    return True
