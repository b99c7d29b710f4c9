"""A family's record files in a run (io's rows.jsonl, net's records.jsonl, ...): one JSON
object per line, appended and flushed to disk as each result exists, so a killed run
keeps everything it measured. Reading treats the file as foreign input.
(Job events have their own log: :mod:`gridbench.jobflow.events`.)"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.safe_open import CAPS, parse_json, read_store_text, refuse_links

TAIL_SCAN_BYTES = 1024 * 1024


def append_record(path: Path, obj: Any, *, mode: int = 0o644) -> None:
    """Append one JSON line and fsync it (results survive a crash); never through a link.
    ``mode``: the new file's permissions (0o600 for what is private, e.g. answers).
    A torn last line (a writer killed mid-line, so never acknowledged) is cut first:
    gluing a new line onto it would corrupt both. A whole record that only lacks its
    newline (a hand edit) is kept and ended."""
    refuse_links(path)
    data = (json.dumps(obj, default=str) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO planted there would eat it
            raise ResultsError(
                "not a regular file; nothing written to it",
                where=str(path),
                fix="remove it (a run's record files are regular files)",
            )
        _end_last_line(fd)
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_torn_tail(path: Path) -> None:
    """Cut a torn last line of ``path`` (see :func:`append_record`); no file, no change;
    a link is refused (never followed)."""
    refuse_links(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        _end_last_line(fd)
    finally:
        os.close(fd)


def _end_last_line(fd: int) -> None:
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = max(0, size - TAIL_SCAN_BYTES)  # lines are short: scan a bounded tail
    tail = os.pread(fd, size - start, start)
    cut = tail.rfind(b"\n")
    last = tail[cut + 1 :]
    try:
        json.loads(last)
    except ValueError:  # torn: never acknowledged by its writer
        os.ftruncate(fd, start + cut + 1 if cut >= 0 else start)
    else:
        _write_all(fd, b"\n")


def _write_all(fd: int, data: bytes) -> None:
    # a short write (a full disk) must not be fsynced and acknowledged as a whole record
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(f"wrote nothing of the last {len(view)} bytes")
        view = view[n:]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The objects of one record file; a missing file holds none, a bad line is an error
    naming file and line. Read through :mod:`gridbench.store.safe_open` (no link, bounded,
    strict UTF-8, hostile JSON refused). A torn last line (no newline, not JSON) was never
    acknowledged by its writer and is left out."""
    try:
        text = read_store_text(path, cap=CAPS["records"])
    except FileNotFoundError:
        return []
    fix = "the line is damaged: restore it from a copy, or delete it and say so in the notes"
    out = []
    lines = text.splitlines()
    torn = not text.endswith("\n")  # a writer killed mid-line: that line was never acknowledged
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if torn and i == len(lines):
            try:
                obj = json.loads(line)
            except ValueError:
                break
        obj = parse_json(line, f"{path}:{i}", fix=fix)
        if not isinstance(obj, dict):
            raise ResultsError("a line is not a JSON object", where=f"{path}:{i}", fix=fix)
        out.append(obj)
    return out
