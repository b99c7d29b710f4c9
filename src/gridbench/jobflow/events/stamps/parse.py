"""Stamp rows -> one frame per sweep (pure, columnar): log lines matched by each rule's
pattern, times parsed as declared, any kind's rows made a typed stamp frame (``finish``;
a database's rows: ``kinds/sqlite.py``).

A row whose time does not parse, or whose id is empty, is dropped and counted: the files
are the middleware's, and a line that only looks like a stamp must not become one.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from gridbench.jobflow.events.stamps.declare import LineRule, SourceBase, TimeFormat

#: columns of a stamp frame: this tier's id, the id it gave the tier below (or null)
STAMP_SCHEMA = pl.Schema(
    {
        "tier": pl.String,
        "id": pl.String,
        "local_id": pl.String,
        "stage": pl.String,
        "t_ns": pl.Int64,
        "precision_ns": pl.Int64,
    }
)
_EPOCH_SCALE = {"epoch": 1_000_000_000, "epoch_ms": 1_000_000, "epoch_us": 1_000, "epoch_ns": 1}
MAX_ID_CHARS = 256
#: the stage of a row that only tells a local id (joined, never emitted)
ID_ONLY = ""


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=STAMP_SCHEMA)


def parse_times(col: pl.Expr, tf: TimeFormat) -> pl.Expr:
    """Epoch nanoseconds of a column of times written as ``tf`` declares (null: unparsable)."""
    scale = _EPOCH_SCALE.get(tf.format)
    if scale is not None:  # exact: whole part and fraction apart (a float64 loses the ns)
        digits = len(str(scale)) - 1  # of the fraction that is still whole nanoseconds
        parts = (
            col.cast(pl.String)
            .str.strip_chars()
            .str.extract_groups(r"^(?P<whole>\d{1,19})(?:\.(?P<frac>\d{1,9}))?$")
        )
        whole = parts.struct.field("whole").cast(pl.Int64, strict=False)
        whole = pl.when(whole <= (2**63 - 1) // scale - 1).then(whole)  # else null
        frac = parts.struct.field("frac").fill_null("").str.pad_end(9, "0").str.slice(0, digits)
        if not digits:  # epoch_ns: no fraction of a nanosecond
            return whole
        return whole * scale + frac.cast(pl.Int64, strict=False)
    parsed = col.cast(pl.String).str.to_datetime(tf.format, strict=False, time_unit="ns")
    if "%z" not in tf.format and "%:z" not in tf.format and "%#z" not in tf.format:
        parsed = parsed.dt.replace_time_zone(tf.timezone)
    return parsed.dt.epoch("ns")


def finish(df: pl.DataFrame, src: SourceBase) -> tuple[pl.DataFrame, int]:
    """Typed stamp frame and the number of rows dropped as unusable."""
    df = df.with_columns(
        pl.lit(src.tier).alias("tier"),
        pl.lit(src.precision_ns, dtype=pl.Int64).alias("precision_ns"),
        pl.col("id").cast(pl.String).str.strip_chars(),
        pl.col("local_id").cast(pl.String).str.strip_chars(),
    )
    ok = df.filter(
        (pl.col("t_ns").is_not_null() | (pl.col("stage") == ID_ONLY))
        & (pl.col("id").str.len_chars() > 0)
        & (pl.col("id").str.len_chars() <= MAX_ID_CHARS)
        & pl.col("stage").is_not_null()
    ).with_columns(
        pl.when(pl.col("local_id").str.len_chars().is_between(1, MAX_ID_CHARS))
        .then(pl.col("local_id"))
        .otherwise(None)
        .alias("local_id")
    )
    return ok.select(STAMP_SCHEMA.names()).cast(STAMP_SCHEMA), df.height - ok.height


def lines_frame(
    lines: Sequence[str], rules: Sequence[LineRule], src: SourceBase
) -> tuple[pl.DataFrame, int]:
    """Stamps in ``lines`` (one rule may match each line; the first wins); dropped count."""
    if not lines:
        return empty(), 0
    text = pl.Series("line", lines, dtype=pl.String)
    frames: list[pl.DataFrame] = []
    taken = pl.Series("taken", [False] * len(lines))
    for rule in rules:
        groups = text.str.extract_groups(rule.pattern).struct.unnest()
        hit = groups["id"].is_not_null() & ~taken
        taken = taken | hit
        if not hit.any():
            continue
        g = groups.filter(hit)
        nulls = pl.Series([None] * g.height, dtype=pl.String)
        local = g["local_id"] if "local_id" in g.columns else nulls
        times = g["time"] if "time" in g.columns else nulls
        frames.append(
            pl.DataFrame({"id": g["id"], "local_id": local, "time": times}).with_columns(
                pl.lit(rule.stage or ID_ONLY).alias("stage"),
                parse_times(pl.col("time"), src.time).alias("t_ns"),
            )
        )
    if not frames:
        return empty(), 0
    return finish(pl.concat(frames, how="diagonal_relaxed"), src)
