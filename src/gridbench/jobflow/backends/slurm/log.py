"""Incremental reading of the slurmctld log: only lines appended since the last call.

It starts at the end of the file (older lines are other runs' jobs), keeps a partial last
line for the next call, and starts over at the top when the file is rotated or truncated.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_READ_BYTES = 16 * 1024 * 1024  # per call, so one call never stalls a sweep for long


class LogTail:
    """New complete lines of a growing log file."""

    def __init__(self, path: Path, *, from_end: bool = True) -> None:
        self.path = path
        st = path.stat()  # raises OSError when the log is not there
        self._inode = st.st_ino
        self._offset = st.st_size if from_end else 0
        self._partial = b""

    def read_lines(self) -> list[str]:
        """Complete lines written since the previous call (empty if none or unreadable)."""
        try:
            st = self.path.stat()
        except OSError:
            return []
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._inode, self._offset, self._partial = st.st_ino, 0, b""
        if st.st_size == self._offset:
            return []
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return []
        try:
            data = os.pread(fd, min(st.st_size - self._offset, MAX_READ_BYTES), self._offset)
        finally:
            os.close(fd)
        self._offset += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return data[:cut].decode("utf-8", errors="replace").splitlines()
