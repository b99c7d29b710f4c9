"""Incremental readers of stamp sources (the I/O edge): each call returns only what is new
since the previous one, in one query or one read per file, never a call per job. Each
kind's reader is in its module (``kinds/``); here is what they share.

The files and databases are the middleware's: a database is opened read-only (``mode=ro``,
``query_only``) for one query and closed, so gridbench never holds A-REX's writer back
for long; a log is read from the last offset, at most ``MAX_READ_BYTES`` a call, a partial
last line is kept for the next call, and a file that shrank (rotated, truncated) is read
again from its start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import polars as pl

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


class Reader(Protocol):
    """Reads what is new in one source since its previous call (blocking I/O)."""

    def read(self) -> ReadResult: ...


@dataclass(slots=True)
class Tail:
    offset: int = 0
    rest: bytes = b""
    ino: int | None = None


def read_new_lines(path: Path, tail: Tail) -> list[str]:
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
