"""The controller's merge of an agent's pulled log into the trial's event log
(:mod:`gridbench.jobflow.run.agents` pulls; :func:`gridbench.jobflow.run.agent_worker.read_log`
hands over complete lines, or complete Arrow IPC messages)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import polars as pl

from gridbench.errors import ResultsError
from gridbench.jobflow.events.buffer import EventWriter
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.ipc_pull import StreamPulls
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA
from gridbench.store.safe_open import refuse_compressed

HEADER = (",".join(EVENT_COLUMNS) + "\n").encode()  # the first line of every event log


class LogMerger:
    """Appends an agent's pulled log to the trial's event log as it comes.

    The agent writes the format of the trial's log (same gridbench version, checked at
    connect). Into a CSV trial log its complete lines are appended as bytes after the
    controller's own pending batch is flushed: both write whole lines to an O_APPEND
    descriptor, so lines never interleave, and merging costs a copy rather than a parse
    per event. Into a columnar log each pull's messages are decoded at once
    (:class:`StreamPulls`: the agent's stream re-encoded against the trial's own
    dictionaries) and appended as one record batch, after the controller's pending
    events (an older agent's CSV lines: parsed by polars into one batch)."""

    def __init__(
        self, elog: EventWriter, where: str = "an agent's log", *, columnar: bool = False
    ) -> None:
        self.elog = elog
        self.where = where  # the agent's log, named in an error
        self.events = 0
        self._fd: int | None = None
        # an agent's Arrow log, into the trial's (the agents write the trial log's format)
        self._pulls = StreamPulls(where) if columnar else None
        assert not columnar or isinstance(elog, ArrowEventLog)

    def add(self, data: bytes, at_start: bool) -> None:
        """Append ``data`` (complete lines, the log's header when ``at_start``; or the
        complete messages of an Arrow log, its schema first when ``at_start``)."""
        if self._pulls is not None:
            self._append(self._pulls.decode(data))
            return
        if at_start and data.startswith(HEADER):
            data = data[len(HEADER) :]
        n = data.count(b"\n")
        if not n:
            return
        if isinstance(self.elog, ArrowEventLog):
            self._append(_parse_lines(data, self.where))
            return
        self.elog.flush()
        if self._fd is None:
            self._fd = os.open(self.elog.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.elog.add_count(n)  # trial.json's event count includes the merged events
        self.events += n

    def _append(self, frame: pl.DataFrame) -> None:
        assert isinstance(self.elog, ArrowEventLog)
        if frame.height:
            self.elog.write_frame(frame)  # counts them in trial.json's events
            self.events += frame.height

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _parse_lines(data: bytes, where: str) -> pl.DataFrame:
    """An agent log's complete CSV lines (no header) as :data:`EVENT_SCHEMA`; lines that
    do not parse are one error naming the log (the pull is retried, then the agent
    counted lost with this reason)."""
    refuse_compressed(data[:4], Path(where))  # polars would inflate it, unbounded
    try:
        return pl.read_csv(io.BytesIO(data), schema=EVENT_SCHEMA, has_header=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        raise ResultsError(
            f"the agent's log lines are not valid CSV: {str(exc).splitlines()[0]}",
            where=where,
            fix="the agent runs another gridbench version, or its log is damaged; "
            "check the agent's log, then 'gridbench collect' the run",
        ) from exc
