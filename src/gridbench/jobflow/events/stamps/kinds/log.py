"""The ``log`` stamp kind: lines of a log file, each ``lines`` entry a regular expression
with the named groups ``time`` and ``id`` (and optionally ``local_id``) stamping one
stage; the file is read from the offset reached last time."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from gridbench.jobflow.events.stamps.declare import LineRule, LineSource, SourceBase
from gridbench.jobflow.events.stamps.kind import StampKind, register_stamp_kind
from gridbench.jobflow.events.stamps.parse import empty, lines_frame
from gridbench.jobflow.events.stamps.readers import ReadResult, Tail, read_new_lines


class LogSource(LineSource):
    kind: Literal["log"]
    path: str

    @property
    def location(self) -> str:
        return self.path


class LogReader:
    """New lines of one log file per call."""

    def __init__(self, src: SourceBase, rules: list[LineRule], path: str) -> None:
        self.src = src
        self.rules = rules
        self.path = Path(path)
        self.tail = Tail()

    def read(self) -> ReadResult:
        try:
            lines = read_new_lines(self.path, self.tail)
        except OSError as exc:
            return ReadResult(empty(), problem=f"{self.path}: cannot read ({exc.strerror})")
        frame, dropped = lines_frame(lines, self.rules, self.src)
        return ReadResult(frame, dropped)


def _reader(src: LogSource, location: str) -> LogReader:
    return LogReader(src, src.lines, location)


KIND = register_stamp_kind(StampKind("log", LogSource, _reader))
