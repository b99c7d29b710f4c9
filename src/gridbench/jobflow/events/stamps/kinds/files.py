"""The ``files`` stamp kind: one small file per job (a glob), each line matched like a
log's as ``<path><TAB><line>``, so a pattern can take the job's id from the file's name
or directory: ARC's control-directory job files, HTCondor's per-job event logs."""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from gridbench.jobflow.events.stamps.declare import LineSource
from gridbench.jobflow.events.stamps.kind import StampKind, register_stamp_kind
from gridbench.jobflow.events.stamps.parse import lines_frame
from gridbench.jobflow.events.stamps.readers import (
    MAX_FILE_BYTES,
    MAX_FILES,
    ReadResult,
    current_deadline,
    open_regular,
)


class FilesSource(LineSource):
    """One small file per job; each line is matched as ``<path><TAB><line>``, so a pattern
    can take the job's id from the file's name or directory (``/job\\.(?P<id>\\w+)\\.local\\t``)."""

    kind: Literal["files"]
    glob: str = Field(description="one file per job, e.g. {controldir}/job.*.errors")

    @property
    def location(self) -> str:
        return self.glob


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
        deadline = current_deadline()
        for i, name in enumerate(glob.iglob(self.pattern)):
            if i >= MAX_FILES:
                problem = f"{self.pattern}: more than {MAX_FILES} files; the rest not read"
                break
            if deadline.passed():
                problem = (
                    f"{self.pattern}: reading took longer than {deadline.seconds:g} s; "
                    "the rest is read in the next sweep"
                )
                break
            try:
                st = os.stat(name)
                if not stat.S_ISREG(st.st_mode):
                    problem = f"{name}: not a regular file (a FIFO or a device); not read"
                    continue
                if self.seen.get(name) == (st.st_size, st.st_mtime_ns):
                    continue  # unchanged since the last call: not opened
                with open_regular(name) as fh:  # (a FIFO swapped in since: refused too)
                    data = fh.read(MAX_FILE_BYTES)
                self.seen[name] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue  # vanished (the job was cleaned) or unreadable
            text = data.decode("utf-8", errors="replace")
            lines += [f"{name}\t{ln}" for ln in text.splitlines()]
        frame, dropped = lines_frame(lines, self.src.lines, self.src)
        return ReadResult(frame, dropped, problem)


KIND = register_stamp_kind(StampKind("files", FilesSource, FilesReader))
