"""Page-cache handling: O_DIRECT where the target supports it, dropping caches where
allowed, and a note when a file smaller than RAM may be read from the cache.

The mode actually used is recorded per target, because a request may not be honoured:
tmpfs refuses O_DIRECT, and dropping caches needs root.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass(frozen=True)
class CacheMode:
    """What was requested, what is used, and why they differ."""

    requested: str
    used: str  # direct | drop_caches | none
    note: str = ""


def supports_direct(workdir: Path) -> bool:
    """Whether a file in ``workdir`` can be opened with O_DIRECT (tmpfs and some FUSE
    file systems refuse it with EINVAL)."""
    probe = workdir / ".gridbench-odirect-probe"
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(probe, flags, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    else:
        os.close(fd)
        return True
    finally:
        probe.unlink(missing_ok=True)


def can_drop_caches() -> bool:
    return os.access(DROP_CACHES, os.W_OK)


def drop_caches() -> bool:
    """sync, then drop page cache, dentries and inodes; False if not permitted."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


def choose_mode(requested: str, workdir: Path) -> CacheMode:
    """The cache mode to use on one target, falling back with a reason."""
    if requested == "direct":
        if supports_direct(workdir):
            return CacheMode(requested, "direct")
        if can_drop_caches():
            return CacheMode(
                requested, "drop_caches", "O_DIRECT not supported here; caches dropped instead"
            )
        return CacheMode(requested, "none", "O_DIRECT not supported and caches cannot be dropped")
    if requested == "drop_caches":
        if can_drop_caches():
            return CacheMode(requested, "drop_caches")
        return CacheMode(requested, "none", "dropping caches needs root; page cache left as is")
    return CacheMode(requested, "none")


def total_ram() -> int:
    """Physical memory in bytes."""
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def cache_warning(file_bytes: int, mode: str, ram: int | None = None) -> str | None:
    """A note when reads may come from the page cache: the data set fits in RAM and the
    cache is not bypassed (the seed's note: a file smaller than RAM reads from cache)."""
    ram = total_ram() if ram is None else ram
    if mode == "direct" or file_bytes >= ram:
        return None
    how = "re-read" if mode == "drop_caches" else "read, re-read and random read"
    return (
        f"the file ({file_bytes / 2**20:.0f} MiB) is smaller than RAM ({ram / 2**30:.1f} GiB): "
        f"{how} figures may come from the page cache"
    )
