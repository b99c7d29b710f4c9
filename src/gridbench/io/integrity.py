"""The integrity check: every file written is read back and its sha256 compared with the
one taken while it was written. A missing file is *lost*, a different size *short* or
*long*, a different digest *corrupt*, a read error *unreadable*.

Fast enough not to be the bottleneck: hashlib's sha256 (OpenSSL, SHA-NI where the CPU
has it) releases the GIL on large buffers, so ``threads`` readers hash files in parallel,
each reading 4 MiB at a time into one reused buffer (bench/bench_integrity.py compares it
with sha256sum over the same files)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUFFER = 4 * 1024 * 1024


@dataclass(frozen=True)
class Written:
    """A file as its writer left it: where, how many bytes, their sha256."""

    path: Path
    size: int
    sha256: str


def sha256_file(path: Path, buf: bytearray | None = None) -> tuple[str, int]:
    """(hex digest, bytes read) of one file, read in ``BUFFER`` pieces."""
    buf = buf if buf is not None else bytearray(BUFFER)
    view = memoryview(buf)
    h = hashlib.sha256()
    n = 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while k := os.readv(fd, [buf]):
            h.update(view[:k])
            n += k
    finally:
        os.close(fd)
    return h.hexdigest(), n


def check_one(w: Written, buf: bytearray) -> dict[str, Any] | None:
    """None when the file is as written, else its problem."""
    try:
        digest, n = sha256_file(w.path, buf)
    except FileNotFoundError:
        return {"file": w.path.name, "problem": "lost", "bytes": w.size}
    except OSError as exc:
        return {
            "file": w.path.name,
            "problem": "unreadable",
            "bytes": w.size,
            "detail": exc.strerror or str(exc),
        }
    if n != w.size:
        kind = "short" if n < w.size else "long"
        return {"file": w.path.name, "problem": kind, "bytes": w.size, "read": n}
    if digest != w.sha256:
        return {"file": w.path.name, "problem": "corrupt", "bytes": w.size}
    return None


def verify(files: Sequence[Written], threads: int = 2) -> dict[str, Any]:
    """Read every file back: ``{files, bytes, seconds, mib_s, bad: [...], ok}``."""
    t0 = time.perf_counter()

    def part(chunk: Sequence[Written]) -> list[dict[str, Any]]:
        buf = bytearray(BUFFER)  # one buffer per reader, reused
        return [p for w in chunk if (p := check_one(w, buf)) is not None]

    k = max(1, min(threads, len(files)))
    chunks = [files[i::k] for i in range(k)]
    with ThreadPoolExecutor(max_workers=k) as pool:
        bad = [p for found in pool.map(part, chunks) for p in found]
    secs = time.perf_counter() - t0
    total = sum(w.size for w in files)
    bad.sort(key=lambda p: str(p["file"]))
    return {
        "files": len(files),
        "bytes": total,
        "seconds": secs,
        "mib_s": total / 2**20 / secs if secs > 0 and total else None,
        "bad": bad,
        "bad_bytes": sum(int(p["bytes"]) for p in bad),
        "ok": not bad,
    }
