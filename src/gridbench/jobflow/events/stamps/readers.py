"""Incremental readers of stamp sources (the I/O edge): each call returns only what is new
since the previous one, in one query or one read per file, never a call per job. Each
kind's reader is in its module (``kinds/``); here is what they share.

The files and databases are the middleware's: a database is opened read-only (``mode=ro``,
``query_only``) for one query and closed, so gridbench never holds A-REX's writer back
for long; a log is read from the last offset, at most ``MAX_READ_BYTES`` a call, a partial
last line is kept for the next call, and a file that shrank (rotated, truncated) is read
again from its start. Every read has a deadline (:class:`Deadline`) and reads regular
files only (:func:`open_regular`), so a source can neither hang a run nor keep Ctrl-C from
ending it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

import polars as pl

MAX_READ_BYTES = 16 * 1024 * 1024  # of one file per call; the rest waits for the next
MAX_ROWS = 200_000  # of one query per call
MAX_FILES = 100_000  # of one glob
MAX_FILE_BYTES = 1024 * 1024  # of one per-job file
BUSY_TIMEOUT_S = 2.0
#: how long one source's read may take in one sweep: a query that never ends (a recursive
#: CTE) is interrupted, a glob's files past it wait for the next sweep
READ_DEADLINE_S = 10.0


class Deadline:
    """When a read must end: :data:`READ_DEADLINE_S` from now, or at once when the run is
    being stopped (:meth:`cancel`, from another thread: Ctrl-C, Abort)."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = READ_DEADLINE_S if seconds is None else seconds
        self.end = time.monotonic() + self.seconds
        self.cancelled = threading.Event()

    def restart(self) -> None:
        self.end = time.monotonic() + self.seconds

    def cancel(self) -> None:
        self.cancelled.set()

    def passed(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() >= self.end


_CURRENT: ContextVar[Deadline | None] = ContextVar("stamp_read_deadline", default=None)


def current_deadline() -> Deadline:
    """The deadline of the read under way (:func:`reading`), else a new one: a reader of
    any kind asks for it, so a kind's ``read()`` keeps its signature."""
    return _CURRENT.get() or Deadline()


@contextmanager
def reading(deadline: Deadline) -> Iterator[Deadline]:
    """Run one source's read under ``deadline`` (restarted: each read gets its full time)."""
    deadline.restart()
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading if it is a regular file: a FIFO (or a device) among a
    source's matches would block the read for ever, or never end. Opened non-blocking, so
    that even a FIFO swapped in after a look cannot hang the open; OSError otherwise
    (ENOENT when absent, EINVAL "not a regular file")."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device is never read)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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
        with open_regular(path) as fh:
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
