"""A stamp-source kind ``job_dirs``: one directory per job under ``root``, named by the
job's id, holding one file (``file``) whose text is the time of one stage (``stage``).
gridbench's demo CLI lays out its jobs' ``started`` files so."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import field_validator

from gridbench.jobflow.events.stamps.declare import STAGE_RE, LineRule, SourceBase
from gridbench.jobflow.events.stamps.kind import StampKind, register_stamp_kind
from gridbench.jobflow.events.stamps.parse import lines_frame
from gridbench.jobflow.events.stamps.readers import ReadResult


class JobDirsSource(SourceBase):
    kind: Literal["job_dirs"]
    root: str
    file: str
    stage: str

    @field_validator("stage")
    @classmethod
    def _stage(cls, v: str) -> str:
        if not STAGE_RE.match(v):
            raise ValueError(f"{v!r} is not a stage name (lower case letters, digits, _)")
        return v

    @property
    def location(self) -> str:
        return self.root

    def stage_names(self) -> list[str]:
        return [self.stage]


@dataclass(slots=True)
class JobDirsReader:
    """One directory scan a call; a job's file is read once, when it is there."""

    src: JobDirsSource
    root: str
    done: set[str] = field(default_factory=set)

    def read(self) -> ReadResult:
        lines = []
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return ReadResult(lines_frame([], [], self.src)[0], problem=f"{self.root}: not there")
        for name in names:
            if name in self.done:
                continue
            try:
                text = (Path(self.root) / name / self.src.file).read_text(encoding="utf-8")
            except OSError:
                continue  # not written yet
            self.done.add(name)
            lines.append(f"{name}\t{text.strip()}")
        rule = LineRule(stage=self.src.stage, pattern=r"^(?P<id>[^\t]+)\t(?P<time>\S+)$")
        frame, dropped = lines_frame(lines, [rule], self.src)
        return ReadResult(frame, dropped)


KIND = register_stamp_kind(StampKind("job_dirs", JobDirsSource, JobDirsReader))
