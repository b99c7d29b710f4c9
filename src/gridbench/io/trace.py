"""I/O traces for replay: fio's I/O logs (``write_iolog``, versions 2 and 3) and blktrace
files, checked before any replay starts.

A fio I/O log is text: a ``fio version 2 iolog`` or ``fio version 3 iolog`` header, then
one line per action, ``[TIME_MS] FILE add|open|close|read|write|sync|datasync|trim|wait
[OFFSET LENGTH]`` (version 3 starts each line with a time stamp). A blktrace file is
binary and starts with blktrace's magic. Anything else is refused with one message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gridbench.errors import SpecError

HEADERS = {b"fio version 2 iolog": "fio-iolog-v2", b"fio version 3 iolog": "fio-iolog-v3"}
#: blktrace's BLK_IO_TRACE_MAGIC (0x65617400 | version), little-endian on disk.
BLKTRACE_MAGIC = b"\x74\x61\x65"
IO_ACTIONS = frozenset({"read", "write", "trim"})
OTHER_ACTIONS = frozenset({"add", "open", "close", "sync", "datasync", "wait"})
MAX_TRACE_BYTES = 512 * 1024**2


@dataclass(frozen=True)
class TraceInfo:
    """What replay needs to know of a trace."""

    path: Path
    format: str  # fio-iolog-v2 | fio-iolog-v3 | blktrace
    ios: int | None  # I/Os in it (None: a blktrace, not counted)
    extent: int | None  # the highest byte offset it touches (None: unknown)


def _bad(path: Path, why: str) -> SpecError:
    return SpecError(
        f"not an I/O trace: {why}",
        where=f"replay.trace ({path})",
        fix="give a fio I/O log (fio --write_iolog=FILE) or a blktrace file, "
        "or leave replay.trace out to record one",
    )


def _parse_iolog(path: Path, text: str, fmt: str) -> TraceInfo:
    timed = fmt == "fio-iolog-v3"
    ios, extent = 0, 0
    for n, line in enumerate(text.splitlines()[1:], 2):
        parts = line.split()
        if not parts:
            continue
        if timed:
            if not parts[0].isdigit():
                raise _bad(path, f"line {n} does not start with a time stamp")
            parts = parts[1:]
        if len(parts) < 2 or parts[1] not in IO_ACTIONS | OTHER_ACTIONS:
            raise _bad(path, f"line {n} is not FILE ACTION [OFFSET LENGTH]")
        if parts[1] in IO_ACTIONS:
            if len(parts) != 4 or not (parts[2].isdigit() and parts[3].isdigit()):
                raise _bad(path, f"line {n}: {parts[1]} needs an offset and a length")
            ios += 1
            extent = max(extent, int(parts[2]) + int(parts[3]))
    if ios == 0:
        raise _bad(path, "it holds no read, write or trim")
    return TraceInfo(path, fmt, ios, extent)


def check_trace(path: Path) -> TraceInfo:
    """The trace at ``path`` if it is one; else one SpecError naming it and the fix."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise SpecError(
            f"cannot read the trace: {exc.strerror or exc}",
            where=f"replay.trace ({path})",
            fix="give the path of a readable fio I/O log or blktrace file",
        ) from None
    if size > MAX_TRACE_BYTES:
        raise _bad(path, f"{size} bytes is more than the {MAX_TRACE_BYTES} a trace may have")
    if len(head) >= 4 and head[1:4] == BLKTRACE_MAGIC:
        return TraceInfo(path, "blktrace", None, None)
    first = head.split(b"\n", 1)[0].strip()
    fmt = HEADERS.get(first)
    if fmt is None:
        raise _bad(path, "it has no fio iolog header and no blktrace magic")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _bad(path, "it is not text after its iolog header") from None
    return _parse_iolog(path, text, fmt)
