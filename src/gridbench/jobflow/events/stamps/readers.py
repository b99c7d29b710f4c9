"""Incremental readers of stamp sources (the I/O edge): each call returns only what is new
since the previous one, in one query or one read per file, never a call per job.

The files and databases are the middleware's: a database is opened read-only (``mode=ro``,
``query_only``) for one query and closed, so gridbench never holds A-REX's writer back
for long; a log is read from the last offset, at most ``MAX_READ_BYTES`` a call, a partial
last line is kept for the next call, and a file that shrank (rotated, truncated) is read
again from its start.
"""

from __future__ import annotations

import glob
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import polars as pl

from gridbench.jobflow.events.stamps.declare import (
    FilesSource,
    LineRule,
    LogSource,
    SourceBase,
    SqliteSource,
)
from gridbench.jobflow.events.stamps.parse import check_columns, empty, lines_frame, rows_frame

MAX_READ_BYTES = 16 * 1024 * 1024  # of one file per call; the rest waits for the next
MAX_ROWS = 200_000  # of one query per call
MAX_FILES = 100_000  # of one glob
MAX_FILE_BYTES = 1024 * 1024  # of one per-job file
BUSY_TIMEOUT_S = 2.0


@dataclass(slots=True)
class ReadResult:
    """New stamps, rows dropped as unusable, and a problem worth telling (or '')."""

    frame: pl.DataFrame
    dropped: int = 0
    problem: str = ""


@dataclass(slots=True)
class _Tail:
    offset: int = 0
    rest: bytes = b""
    ino: int | None = None


def read_new_lines(path: Path, tail: _Tail) -> list[str]:
    """Complete lines appended to ``path`` since ``tail`` (updated in place)."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size < tail.offset or (tail.ino is not None and st.st_ino != tail.ino):
                tail.offset, tail.rest = 0, b""  # rotated or truncated: from the start
            tail.ino = st.st_ino
            fh.seek(tail.offset)
            data = fh.read(MAX_READ_BYTES)
    except FileNotFoundError:
        return []  # not written yet
    tail.offset += len(data)
    buf = tail.rest + data
    cut = buf.rfind(b"\n") + 1
    tail.rest = buf[cut:]
    if len(tail.rest) > MAX_READ_BYTES:  # one endless line: not a log we can read
        tail.rest = b""
    return buf[:cut].decode("utf-8", errors="replace").splitlines()


class SqliteReader:
    """One read-only query per call, from the last cursor value on."""

    def __init__(self, src: SqliteSource, path: str) -> None:
        self.src = src
        self.path = Path(path)
        self.after: str | int = 0

    def read(self) -> ReadResult:
        if not self.path.exists():
            return ReadResult(empty(), problem=f"{self.path}: not there (yet)")
        uri = f"file:{quote(str(self.path.absolute()))}?mode=ro"
        try:
            con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            return ReadResult(empty(), problem=f"{self.path}: cannot open ({exc})")
        try:
            con.execute("PRAGMA query_only = ON")
            cur = con.execute(self.src.query, {"after": self.after})
            columns = [d[0] for d in cur.description or ()]
            rows = cur.fetchmany(MAX_ROWS)
        except sqlite3.Error as exc:  # locked past the busy time-out, or a bad query
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


class LogReader:
    """New lines of one log file per call."""

    def __init__(self, src: SourceBase, rules: list[LineRule], path: str) -> None:
        self.src = src
        self.rules = rules
        self.path = Path(path)
        self.tail = _Tail()

    def read(self) -> ReadResult:
        try:
            lines = read_new_lines(self.path, self.tail)
        except OSError as exc:
            return ReadResult(empty(), problem=f"{self.path}: cannot read ({exc.strerror})")
        frame, dropped = lines_frame(lines, self.rules, self.src)
        return ReadResult(frame, dropped)


@dataclass(slots=True)
class FilesReader:
    """Every file a glob matches (one small file per job), one directory scan a call; a
    file is read whole again only when its size or time changed (the middleware rewrites
    them), so a stamp may come twice: the collector emits each (job, stage) once."""

    src: FilesSource
    pattern: str
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)

    def read(self) -> ReadResult:
        lines: list[str] = []
        problem = ""
        for i, name in enumerate(glob.iglob(self.pattern)):
            if i >= MAX_FILES:
                problem = f"{self.pattern}: more than {MAX_FILES} files; the rest not read"
                break
            try:
                st = os.stat(name)
                if self.seen.get(name) == (st.st_size, st.st_mtime_ns):
                    continue  # unchanged since the last call: not opened
                self.seen[name] = (st.st_size, st.st_mtime_ns)
                with open(name, "rb") as fh:
                    data = fh.read(MAX_FILE_BYTES)
            except OSError:
                continue  # vanished (the job was cleaned) or unreadable
            text = data.decode("utf-8", errors="replace")
            lines += [f"{name}\t{ln}" for ln in text.splitlines()]
        frame, dropped = lines_frame(lines, self.src.lines, self.src)
        return ReadResult(frame, dropped, problem)


Reader = SqliteReader | LogReader | FilesReader


def make_reader(src: SqliteSource | LogSource | FilesSource, location: str) -> Reader:
    """The reader of one source; ``location`` is its path or glob with placeholders filled."""
    if isinstance(src, SqliteSource):
        return SqliteReader(src, location)
    if isinstance(src, LogSource):
        return LogReader(src, src.lines, location)
    return FilesReader(src, location)
