"""Reading and writing files of the results store, which is foreign input: a shared store
may hold run folders copied in from elsewhere, planted links and half-written files.

Every reader goes through :func:`read_store_bytes` (no link followed, neither the file nor
a folder between the run and the file; bounded in size; regular files only) and, for
text, :func:`read_store_text` (strict UTF-8); JSON through :func:`parse_json` (no
NaN, no 5000-digit integer, bounded nesting, each a clear error). Writers check their
target with :func:`refuse_links` so that a planted link is never written through: a whole
file through :func:`gridbench.store.layout.write_text_atomic` or
:func:`gridbench.store.layout.atomic_output` (a temporary name nobody can plant, then a
rename), an appended one through :func:`open_append` (``O_NOFOLLOW``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final, NoReturn

from gridbench.errors import ResultsError

MiB = 1024 * 1024
EXPERIMENT_FILE = "experiment.json"

#: Size caps by kind of store file: far above what gridbench writes, low enough that a
#: planted file cannot exhaust memory.
CAPS: dict[str, int] = {
    "experiment": 4 * MiB,
    "plan": 16 * MiB,
    "spec": 1 * MiB,
    "metrics": 256 * MiB,
    "records": 512 * MiB,
    "preset": 256 * 1024,
    "json": 256 * MiB,
}

#: Deepest nesting of a JSON document from the store (gridbench writes fewer than 10).
MAX_JSON_DEPTH = 64

_LINK_FIX = "a run's files are regular files: replace the link with the file itself"


def _fail(message: str, path: Path, fix: str | None = None) -> NoReturn:
    raise ResultsError(message, where=str(path), fix=fix)


def _open_step(name: str, flags: int, dir_fd: int | None, path: Path) -> int:
    """Open one path component without following a link; errors name ``path``."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            _fail(
                f"{name!r} is a symbolic link or not a regular file; not followed", path, _LINK_FIX
            )
        _fail(f"cannot read: {exc.strerror or exc}", path)


def run_base(path: Path) -> Path | None:
    """The run folder holding ``path`` (the nearest ancestor with experiment.json, up to
    four levels up: RUN/<folder>/<folder>/file, a family's nested files), from which no
    link is followed; else None."""
    for parent in list(path.parents)[:4]:
        if os.path.lexists(parent / EXPERIMENT_FILE):
            return parent
    return None


def _open_nofollow(path: Path, base: Path | None) -> int:
    """A read-only descriptor of ``path``, walked from ``base`` (default: the run holding
    it, else its folder) one component at a time so that neither a folder inside ``base``
    nor the file is a link."""
    base = base or run_base(path) or path.parent
    try:
        parts = path.relative_to(base).parts
    except ValueError:
        base, parts = path.parent, (path.name,)
    if not parts:
        _fail("not a file", path)
    fd = _open_step(str(base), os.O_RDONLY | os.O_DIRECTORY, None, path)
    try:
        for part in parts[:-1]:
            nxt = _open_step(part, os.O_RDONLY | os.O_DIRECTORY, fd, path)
            os.close(fd)
            fd = nxt
        # O_NONBLOCK: a planted FIFO must not hang the reader before the type check
        return _open_step(parts[-1], os.O_RDONLY | os.O_NONBLOCK, fd, path)
    finally:
        os.close(fd)


@contextmanager
def opened_store_file(path: Path, *, base: Path | None = None) -> Iterator[tuple[str, int]]:
    """A store file opened without following a link (as :func:`read_store_bytes`), given
    as a path naming the open file itself (``/proc/self/fd/N``) and its size: for readers
    that take a path and map it (polars reads a 10 M-event log so), with no gap between
    the check and the read. FileNotFoundError when absent; ResultsError otherwise (a
    compressed file too: the readers given the path would inflate it unbounded)."""
    fd = _open_nofollow(path, base)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _fail("not a regular file; not read", path, _LINK_FIX)
        refuse_compressed(os.pread(fd, 4, 0), path)
        yield f"/proc/self/fd/{fd}", st.st_size
    finally:
        os.close(fd)


#: the first bytes of what polars' CSV reader inflates on its own (gzip, zlib, zstd)
_COMPRESSED = (b"\x1f\x8b", b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda", b"\x28\xb5\x2f\xfd")


def refuse_compressed(head: bytes, path: Path) -> None:
    """A store file given to a reader that maps it (polars' CSV reader inflates gzip, zlib
    and zstd by itself) is never compressed: gridbench writes none, and a few KB of a
    planted one can unpack to gigabytes."""
    if head.startswith(_COMPRESSED):
        _fail(
            "a compressed file; gridbench writes none and does not inflate one "
            "(a few KB can unpack to gigabytes)",
            path,
            "the file was not written by gridbench: move it aside",
        )


def read_store_bytes(path: Path, *, cap: int, base: Path | None = None) -> bytes:
    """The bytes of a store file: never through a link (the file, or a folder between
    ``base`` and it), a regular file only, at most ``cap`` bytes. Raises
    FileNotFoundError when it is absent, ResultsError for everything else."""
    fd = _open_nofollow(path, base)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _fail("not a regular file; not read", path, _LINK_FIX)
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(cap + 1 - size, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        _fail(f"cannot read: {exc.strerror or exc}", path)
    finally:
        os.close(fd)
    if size > cap:
        _fail(
            f"larger than the {cap // 1024} KiB a file of this kind may hold; not read",
            path,
            "a run's files are never this large: the file was not written by gridbench",
        )
    return b"".join(chunks)


def decode_utf8(data: bytes, path: Path) -> str:
    """``data`` as strict UTF-8, or a ResultsError naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path,
            "gridbench writes UTF-8: the file was damaged or not written by gridbench",
        )


def read_store_text(path: Path, *, cap: int, base: Path | None = None) -> str:
    """A store file's text (see :func:`read_store_bytes`), decoded as strict UTF-8."""
    return decode_utf8(read_store_bytes(path, cap=cap, base=base), path)


#: what a 64-bit integer column of the store holds (ns times, counts)
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1


def refuse_json_constant(name: str) -> NoReturn:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are no JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests containers deeper than ``limit`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        cur, depth = stack.pop()
        items = cur.values() if isinstance(cur, dict) else cur if isinstance(cur, list) else ()
        if items and depth > limit:
            return True
        stack.extend((v, depth + 1) for v in items)
    return False


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(obj: Any) -> Any:
    """``obj`` with every lone surrogate in its strings (keys too) replaced by U+FFFD: valid
    JSON may escape one (``"\\ud800"``), and such a string cannot be encoded for a
    terminal, a page or a JSON answer."""

    def fix(v: Any) -> Any:
        if isinstance(v, str):
            return _LONE_SURROGATE.sub("\ufffd", v)
        if isinstance(v, dict):
            return {fix(k): fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return fix(obj)  # depth is bounded by MAX_JSON_DEPTH, checked before


def parse_json(text: str, where: Path | str, *, fix: str | None = None) -> Any:
    """A JSON document from the store, or one ResultsError naming the file (``where``; the
    line added when the text has several): bad syntax, NaN/Infinity, integers past
    Python's digit limit, nesting past :data:`MAX_JSON_DEPTH`."""
    path = Path(where)
    if not text.strip():
        _fail("empty", path, fix)
    try:
        data = json.loads(text, parse_constant=refuse_json_constant)
    except json.JSONDecodeError as exc:
        at = f"{where}:{exc.lineno}" if "\n" in text.strip() else str(where)
        raise ResultsError(f"not valid JSON: {exc.msg}", where=at, fix=fix) from None
    except RecursionError:
        _fail(f"not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels", path, fix)
    except ValueError as exc:  # 5000-digit integers, NaN, Infinity
        _fail(f"not valid JSON: {str(exc)[:120]}", path, fix)
    if _too_deep(data, MAX_JSON_DEPTH):
        _fail(f"not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels", path, fix)
    if "\\ud" in text or "\\uD" in text:  # only an escape can make a lone surrogate
        data = _without_lone_surrogates(data)
    return data


def refuse_links(path: Path) -> None:
    """Refuse to write ``path`` when it, its folder, or a folder between the run holding it
    and it is a symbolic link (a planted link would have gridbench write outside the run)."""
    base = run_base(path)
    folders = [path.parent]
    if base is not None:
        folders += [p for p in path.parents if p != base and base in p.parents]
    for p in dict.fromkeys((path, *folders)):
        if p.is_symlink():
            _fail(
                "is a symbolic link; gridbench does not write through links in the store",
                p,
                "remove the link (a run's files and folders are never links)",
            )


def open_append(path: Path, *, mode: int = 0o644, binary: bool = True) -> IO[Any]:
    """``path`` opened for appending (created when absent), never through a link: the file
    (``O_NOFOLLOW``) or a folder up to the run holding it (:func:`refuse_links`)."""
    refuse_links(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, mode)  # a FIFO would block the open
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _fail(
                "is a symbolic link; gridbench does not write through links in the store",
                path,
                "remove the link (a run's files and folders are never links)",
            )
        if exc.errno == errno.ENXIO:  # a FIFO with no reader
            _fail("not a regular file; not written", path, _LINK_FIX)
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _fail("not a regular file; not written", path, _LINK_FIX)
    os.set_blocking(fd, True)
    if binary:
        return os.fdopen(fd, "ab")
    return os.fdopen(fd, "a", encoding="utf-8", newline="")
