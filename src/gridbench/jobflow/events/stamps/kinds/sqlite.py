"""The ``sqlite`` stamp kind: a read-only query over a database the middleware writes
(ARC's ``accounting.db``). The query selects ``cursor``, ``id``, ``stage``, ``time`` (and
optionally ``local_id``) and takes the last cursor seen as ``:after``, so each sweep reads
only new rows in one query; ``stages`` maps the database's event names to stage names."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import polars as pl
from pydantic import Field, field_validator

from gridbench.jobflow.events.stamps.declare import STAGE_RE, SourceBase
from gridbench.jobflow.events.stamps.kind import StampKind, register_stamp_kind
from gridbench.jobflow.events.stamps.parse import empty, finish, parse_times
from gridbench.jobflow.events.stamps.readers import (
    BUSY_TIMEOUT_S,
    MAX_ROWS,
    ReadResult,
    current_deadline,
)

#: sqlite virtual-machine steps between two looks at the deadline (~1 ms of work)
PROGRESS_OPS = 10_000


class SqliteSource(SourceBase):
    kind: Literal["sqlite"]
    path: str
    query: str = Field(description="SELECT with :after; columns cursor, id, stage, time")
    stages: dict[str, str] = Field(description="the database's event names -> stage names")

    @field_validator("query")
    @classmethod
    def _query(cls, v: str) -> str:
        if not v.lstrip().lower().startswith(("select", "with")) or ":after" not in v:
            raise ValueError("must be a SELECT using :after (the last cursor read)")
        return v

    @field_validator("stages")
    @classmethod
    def _stages(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [s for s in v.values() if not STAGE_RE.match(s)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a stage name (lower case letters, digits, _)")
        return v

    @property
    def location(self) -> str:
        return self.path

    def stage_names(self) -> list[str]:
        return list(self.stages.values())


def rows_frame(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], src: SqliteSource
) -> tuple[pl.DataFrame, int]:
    """Stamps in the rows of a source's query (columns named as declared); dropped count."""
    if not rows:
        return empty(), 0
    raw = pl.DataFrame(rows, schema=dict.fromkeys(columns, pl.String), orient="row", strict=False)
    if "local_id" not in raw.columns:
        raw = raw.with_columns(pl.lit(None, dtype=pl.String).alias("local_id"))
    df = raw.with_columns(
        pl.col("stage").replace_strict(src.stages, default=None).alias("stage"),
        parse_times(pl.col("time"), src.time).alias("t_ns"),
    )
    # event names the declaration does not map are not stamps: dropped, not counted
    return finish(df.filter(pl.col("stage").is_not_null()), src)


def check_columns(columns: Sequence[str]) -> str | None:
    """What a query's columns lack (None: fine)."""
    missing = [c for c in ("cursor", "id", "stage", "time") if c not in columns]
    return f"the query returns no column(s) {', '.join(missing)}" if missing else None


class SqliteReader:
    """One read-only query per call, from the last cursor value on."""

    def __init__(self, src: SqliteSource, path: str) -> None:
        self.src = src
        self.path = Path(path)
        self.after: str | int = 0
        #: why the source is no longer read (a query that outlived its deadline would
        #: cost every later sweep as much)
        self.given_up = ""

    def read(self) -> ReadResult:
        if self.given_up:
            return ReadResult(empty(), problem=self.given_up)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return ReadResult(empty(), problem=f"{self.path}: not there (yet)")
        except OSError as exc:
            return ReadResult(empty(), problem=f"{self.path}: cannot open ({exc.strerror})")
        if not stat.S_ISREG(st.st_mode):  # sqlite's own open of a FIFO would block
            return ReadResult(empty(), problem=f"{self.path}: not a regular file; not read")
        deadline = current_deadline()
        uri = f"file:{quote(str(self.path.absolute()))}?mode=ro"
        try:
            con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            return ReadResult(empty(), problem=f"{self.path}: cannot open ({exc})")
        try:
            # a query that never ends (a recursive CTE) is interrupted at the deadline, or
            # at once when the run is stopped: sqlite asks every PROGRESS_OPS steps
            con.set_progress_handler(lambda: int(deadline.passed()), PROGRESS_OPS)
            con.execute("PRAGMA query_only = ON")
            cur = con.execute(self.src.query, {"after": self.after})
            columns = [d[0] for d in cur.description or ()]
            rows = cur.fetchmany(MAX_ROWS)
        except sqlite3.Error as exc:  # locked past the busy time-out, or a bad query
            if deadline.passed() and not deadline.cancelled.is_set():
                self.given_up = (
                    f"{self.path}: the query ran longer than {deadline.seconds:g} s and was "
                    "interrupted; the source is not read again in this run (simplify the "
                    "query: it must read only the rows after :after)"
                )
                return ReadResult(empty(), problem=self.given_up)
            return ReadResult(empty(), problem=f"{self.path}: query failed ({exc})")
        finally:
            con.close()
        bad = check_columns(columns)
        if bad:
            return ReadResult(empty(), problem=f"{self.path}: {bad}")
        if rows:
            last = rows[-1][columns.index("cursor")]
            self.after = last if isinstance(last, int | str) else str(last)
        frame, dropped = rows_frame(columns, rows, self.src)
        return ReadResult(frame, dropped)


KIND = register_stamp_kind(StampKind("sqlite", SqliteSource, SqliteReader))
